#include "launch/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "launch/run_guard.h"
#include "util/proc_stat.h"

namespace recipebench {

namespace {

using Steady = std::chrono::steady_clock;

/// The child's side after fork: new session, output into the pipe, the environment, then the shell.
[[noreturn]] void exec_child(const ChildSpec& spec, int write_fd, pid_t parent) {
  setsid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  dup2(write_fd, STDOUT_FILENO);
  dup2(write_fd, STDERR_FILENO);
  close(write_fd);
  const int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  for (const auto& [k, v] : spec.env) setenv(k.c_str(), v.c_str(), 1);
  const bool bash = access("/bin/bash", X_OK) == 0;
  execl(bash ? "/bin/bash" : "/bin/sh", bash ? "bash" : "sh", "-c", spec.script.c_str(), static_cast<char*>(nullptr));
  _exit(127);
}

/// Splits `chunk` into lines for `on_line`, keeping an unterminated tail in `pending`.
void split_lines(std::string& pending, const char* chunk, size_t n, const std::function<void(const std::string&)>& f) {
  pending.append(chunk, n);
  size_t start = 0;
  for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
    f(pending.substr(start, nl - start));
  pending.erase(0, start);
}

/// SIGTERM to the group, up to `grace` seconds for it to go, then SIGKILL. True when SIGKILL was needed. Reaps
/// nothing: the shell stays a zombie for run_child's waitpid (process_group_alive does not count zombies).
bool stop_group(pid_t group, double grace) {
  if (!process_group_alive(group)) return false;
  kill(-group, SIGTERM);
  const auto until = Steady::now() + std::chrono::duration<double>(grace);
  while (Steady::now() < until) {
    if (!process_group_alive(group)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-group, SIGKILL);
  for (int i = 0; i < 250 && process_group_alive(group); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return true;
}

}  // namespace

bool process_group_alive(int pgid) {
  const std::vector<int> pids = list_pids();
  if (pids.empty()) return kill(-pgid, 0) == 0;  // no /proc: the kernel's answer (counts zombies as alive)
  for (const int pid : pids) {
    const auto stat = read_proc_stat(pid);  // nullopt: it exited since the listing
    if (stat && stat->pgrp == pgid && !stat->gone()) return true;
  }
  return false;
}

bool ChildOutcome::exited_ok() const {
  return end == ChildEnd::kExited && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

std::string ChildOutcome::describe() const {
  const std::string how = killed ? "stopped (SIGTERM, then SIGKILL)" : "stopped (SIGTERM)";
  switch (end) {
    case ChildEnd::kTimedOut:
      return "ran past its timeout; its process group was " + how;
    case ChildEnd::kInterrupted:
      return "was interrupted: recipebench got " + signal_name(signal) + "; its process group was " + how;
    case ChildEnd::kExited:
      break;
  }
  return wait_status_text(wait_status);
}

ChildOutcome run_child(const ChildSpec& spec, const std::function<void(const std::string&)>& on_line) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_child(spec, fds[1], parent);
  close(fds[1]);
  setpgid(pid, pid);  // also done by the child's setsid; whichever runs first, the group exists before any kill
  ChildOutcome out;
  out.group = pid;
  const auto start = Steady::now();
  std::string pending;
  bool open_pipe = true, reaped = false;
  while (open_pipe || !reaped) {
    if (!reaped && waitpid(pid, &out.wait_status, WNOHANG) == pid) reaped = true;
    if (const int sig = interrupt_signal(); sig && out.end == ChildEnd::kExited && !reaped) {
      out.end = ChildEnd::kInterrupted;
      out.signal = sig;
    }
    if (spec.timeout_seconds && out.end == ChildEnd::kExited && !reaped &&
        std::chrono::duration<double>(Steady::now() - start).count() > *spec.timeout_seconds)
      out.end = ChildEnd::kTimedOut;
    if (out.end != ChildEnd::kExited || reaped) {
      out.killed = stop_group(pid, out.end == ChildEnd::kExited ? 0.5 : spec.grace_seconds) || out.killed;
      if (!reaped && waitpid(pid, &out.wait_status, 0) == pid) reaped = true;
    }
    if (!open_pipe) continue;
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, reaped ? 0 : 100) > 0) {
      char buf[65536];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n > 0) split_lines(pending, buf, static_cast<size_t>(n), on_line);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) open_pipe = false;
    } else if (reaped && !process_group_alive(pid)) {
      open_pipe = false;  // nothing left that could write (a writer outside the group keeps no claim on us)
    }
  }
  close(fds[0]);
  if (!pending.empty()) on_line(pending);
  return out;
}

}  // namespace recipebench
