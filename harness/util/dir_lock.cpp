#include "util/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace recipebench {

DirectoryLock::DirectoryLock(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec && !std::filesystem::is_directory(dir))
    throw std::runtime_error("cannot create folder " + dir + ": " + ec.message());
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error("cannot open folder " + dir + ": " + std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const std::string reason = std::strerror(errno);
    ::close(fd_);
    throw std::runtime_error("cannot lock folder " + dir + ": " + reason);
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

int remove_leftover_temp_files(const std::string& dir, const std::vector<std::string>& names) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    for (const auto& name : names) {
      const std::string prefix = "." + name + ".";
      if (file.size() > prefix.size() && file.compare(0, prefix.size(), prefix) == 0 && entry.is_regular_file(ec) &&
          ::unlink(entry.path().c_str()) == 0) {
        ++removed;
        break;
      }
    }
  }
  return removed;
}

}  // namespace recipebench
