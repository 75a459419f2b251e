// A temporary folder for tests that link libtorch, removed at the end of its scope.
// Removal uses POSIX nftw, not std::filesystem::remove_all: PyTorch's pip wheels (the GPU machine's libtorch 2.11)
// export std::filesystem symbols statically linked from an older libstdc++, which interpose the system's and make
// remove_all crash in binaries built with a newer g++ (pytorch/pytorch#133437; seen here with g++ 13.3).
#pragma once

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace recipebench::test {

class TempDir {
 public:
  /// Creates a fresh folder $TMPDIR/<prefix>-XXXXXX (mkdtemp). Throws std::runtime_error if it cannot.
  explicit TempDir(const std::string& prefix) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
    if (!::mkdtemp(templ.data())) throw std::runtime_error("cannot create a temporary folder " + templ);
    path_ = templ;
  }
  ~TempDir() { ::nftw(path_.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  /// Path of `name` inside the folder.
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  static int remove_entry(const char* p, const struct stat*, int, struct FTW*) { return std::remove(p); }
  std::string path_;
};

}  // namespace recipebench::test
