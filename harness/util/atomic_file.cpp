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

namespace {

namespace fs = std::filesystem;

/// A hidden temporary file beside `target` ("DIR/.NAME.XXXXXX" made unique by mkstemp); returns its fd.
int make_temp_beside(const fs::path& target, std::string& tmpl) {
  tmpl = (target.has_parent_path() ? target.parent_path() / ("." + target.filename().string() + ".XXXXXX")
                                   : fs::path("." + target.filename().string() + ".XXXXXX"))
             .string();
  return mkstemp(tmpl.data());
}

/// Writes `content` to a flushed temporary file beside `path` (creating missing folders) and returns its name.
/// On failure removes the temporary file and throws std::runtime_error with the path and the system's reason.
std::string write_temp(const std::string& path, const std::string& content) {
  const fs::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw std::runtime_error("cannot create folder " + target.parent_path().string() + ": " + ec.message());
  }
  std::string tmpl;
  const int fd = make_temp_beside(target, tmpl);
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
  return tmpl;
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = write_temp(path, content);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot rename into " + path + ": " + reason);
  }
}

void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> temps, backups(files.size());
  auto remove_all = [](const std::vector<std::string>& names) {
    for (const auto& n : names)
      if (!n.empty()) ::unlink(n.c_str());
  };
  try {
    for (const auto& [path, content] : files) temps.push_back(write_temp(path, content));
    // Hard links to the old files, so a failed rename can put back the ones already replaced.
    for (size_t i = 0; i < files.size(); ++i) {
      if (!fs::exists(files[i].first)) continue;
      std::string tmpl;
      const int fd = make_temp_beside(fs::path(files[i].first + ".old"), tmpl);
      if (fd < 0)
        throw std::runtime_error("cannot create a backup beside " + files[i].first + ": " + std::strerror(errno));
      ::close(fd);
      ::unlink(tmpl.c_str());
      if (::link(files[i].first.c_str(), tmpl.c_str()) != 0)
        throw std::runtime_error("cannot keep the old " + files[i].first + ": " + std::strerror(errno));
      backups[i] = tmpl;
    }
  } catch (...) {
    remove_all(temps);
    remove_all(backups);
    throw;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (::rename(temps[i].c_str(), files[i].first.c_str()) == 0) continue;
    const std::string reason = std::strerror(errno);
    for (size_t j = 0; j < i; ++j) {  // put the old set back
      if (!backups[j].empty())
        ::rename(backups[j].c_str(), files[j].first.c_str());
      else
        ::unlink(files[j].first.c_str());
    }
    remove_all(std::vector<std::string>(temps.begin() + static_cast<long>(i), temps.end()));
    remove_all(backups);
    throw std::runtime_error("cannot rename into " + files[i].first + ": " + reason + " (the old files are kept)");
  }
  remove_all(backups);
}

}  // namespace recipebench
