#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace recipebench {

void write_file_atomic(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw std::runtime_error("cannot create folder " + target.parent_path().string() + ": " + ec.message());
  }
  std::string tmpl = (target.has_parent_path() ? target.parent_path() / ("." + target.filename().string() + ".XXXXXX")
                                               : fs::path("." + target.filename().string() + ".XXXXXX"))
                         .string();
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) throw std::runtime_error("cannot create a temporary file beside " + path + ": " + std::strerror(errno));
  auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw std::runtime_error(std::string(what) + " " + path + ": " + reason);
  };
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write");
    }
    written += static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) fail("cannot set permissions of");
  if (::fsync(fd) != 0) fail("cannot flush");
  if (::close(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(tmpl.c_str());
    throw std::runtime_error("cannot close " + path + ": " + reason);
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(tmpl.c_str());
    throw std::runtime_error("cannot rename into " + path + ": " + reason);
  }
}

}  // namespace recipebench
