#include "util/proc_stat.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace recipebench {

std::optional<std::string> read_proc_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      text.append(buffer, static_cast<size_t>(got));
    } else if (got == 0) {
      break;
    } else if (errno != EINTR) {
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return text;
}

std::optional<ProcStat> read_proc_stat(int pid) {
  const auto text = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return std::nullopt;
  const size_t close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  ProcStat s;
  s.pid = pid;
  if (std::sscanf(text->c_str() + close + 1, " %c %d %d", &s.state, &s.ppid, &s.pgrp) != 3) return std::nullopt;
  return s;
}

std::vector<int> list_pids() {
  std::vector<int> pids;
  DIR* proc = ::opendir("/proc");
  if (!proc) return pids;
  while (const dirent* e = ::readdir(proc)) {
    const std::string name = e->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pids.push_back(std::stoi(name));
  }
  ::closedir(proc);
  return pids;
}

}  // namespace recipebench
