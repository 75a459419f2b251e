// A shell command run as its own process group, its output read line by line, stopped as a group on a signal or
// a deadline (the command backend's launch, docs/command-backend.md).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace recipebench {

/// How to run one command.
struct ChildSpec {
  std::string script;                                    ///< run by `bash -c` (`sh -c` when bash is absent)
  std::vector<std::pair<std::string, std::string>> env;  ///< set in the child on top of this process's environment
  std::optional<double> timeout_seconds;                 ///< stop the group this long after the start; none: never
  double grace_seconds = 10;                             ///< after SIGTERM to the group, how long before SIGKILL (s)
};

/// The closed set of reasons a command ended.
enum class ChildEnd {
  kExited,       ///< the shell exited by itself (status in wait_status)
  kTimedOut,     ///< the deadline passed; the group was stopped
  kInterrupted,  ///< this process got SIGINT or SIGTERM (launch/run_guard.h's watch_interrupts); the group was stopped
};

/// What happened to the command.
struct ChildOutcome {
  ChildEnd end = ChildEnd::kExited;
  int wait_status = 0;     ///< the shell's waitpid status
  int signal = 0;          ///< kInterrupted: the signal this process got
  int group = 0;           ///< the process group (= the shell's pid) that was run
  bool killed = false;     ///< SIGKILL was needed: the group outlived SIGTERM's grace, or lingered after the shell
  bool exited_ok() const;  ///< kExited with status 0
  std::string describe() const;  ///< "exited with status 1", "ran past its timeout of 2 s; stopped (SIGTERM)", ...
};

/// Runs `spec.script` in a new session (its own process group; the shell also dies with this process,
/// PR_SET_PDEATHSIG), stdout and stderr merged into one pipe, each line (without '\n') handed to `on_line` as it
/// arrives (a last unterminated line too). Polls every 100 ms for a signal noted by watch_interrupts() and for the
/// deadline; then sends SIGTERM to the group, waits up to grace_seconds, and SIGKILLs what is left. When the shell
/// exits, anything it left running in its group is stopped the same way, so no process outlives the call.
/// Throws std::runtime_error when the pipe or the process cannot be created.
ChildOutcome run_child(const ChildSpec& spec, const std::function<void(const std::string&)>& on_line);

/// True while any process of group `pgid` exists that is not a zombie (reads /proc).
bool process_group_alive(int pgid);

}  // namespace recipebench
