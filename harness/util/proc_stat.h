// Reading other processes' /proc/<pid>/stat without exceptions: a process may exit between listing /proc and
// reading its file, and read() then fails with ESRCH (a std::ifstream turns that into basic_filebuf::underflow's
// exception). Such a process is simply gone, so every reader here answers "none" instead of throwing.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace recipebench {

/// The fields of /proc/<pid>/stat this project reads (proc(5): fields 3, 4 and 5).
struct ProcStat {
  int pid = 0;
  char state = 0;  ///< 'R', 'S', 'D', 'Z' (zombie), 'X' (dead), ...
  int ppid = 0;    ///< parent's pid
  int pgrp = 0;    ///< process group id
  bool gone() const { return state == 'Z' || state == 'X'; }
};

/// The whole of a /proc file (or any file) by POSIX read(); nullopt when it cannot be opened or read (the process
/// exited). Never throws for I/O errors.
std::optional<std::string> read_proc_file(const std::string& path);

/// /proc/<pid>/stat parsed ("pid (comm) S ppid pgrp ...", comm may hold spaces and ')'); nullopt when the process
/// is gone or the line cannot be read.
std::optional<ProcStat> read_proc_stat(int pid);

/// The pids listed in /proc now (numeric entries); empty when /proc cannot be opened.
std::vector<int> list_pids();

}  // namespace recipebench
