#include "launch/run_guard.h"

#include "util/host.h"
#include "util/interrupt.h"
#include "util/output_folder.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

namespace recipebench {

namespace {

/// An open, unnamed file in `dir` (O_TMPFILE: a crash cannot leave it behind), or a named temporary when the
/// file system has no O_TMPFILE (`tmp` then holds its name).
int open_temp_in(const std::string& dir, const std::string& stem, std::string& tmp) {
  tmp.clear();
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
  tmp = (std::filesystem::path(dir) / ("." + stem + ".json.XXXXXX")).string();
  return mkstemp(tmp.data());
}

}  // namespace

std::string out_dir_problem(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const auto problem = output_folder_problem(dir))  // the one rule of every command that writes
    return "--out: " + problem->found + ", expected " + problem->expected;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    return dir + " is not a folder, expected a folder for run records (--out)";
  fs::create_directories(dir, ec);
  if (ec) return "cannot create the folder " + dir + " for run records (--out): " + ec.message();
  // Try what writing a record does: create a file in the folder (access(2) ignores read-only mounts).
  std::string probe;
  const int fd = open_temp_in(dir, "recipebench-out-check", probe);
  if (fd < 0) return "cannot create files in " + dir + " (--out): " + std::strerror(errno);
  ::close(fd);
  if (!probe.empty()) ::unlink(probe.c_str());
  return "";
}

namespace {

/// Writes all of `content` to `fd`; false (errno set) when it cannot.
bool write_all(int fd, const std::string& content) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string write_new_record(const std::string& dir, const std::string& stem,
                             std::chrono::system_clock::time_point started, const std::string& content) {
  const std::time_t t = std::chrono::system_clock::to_time_t(started);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &utc);
  return write_new_record((std::filesystem::path(dir) / (stem + "-" + when + ".json")).string(), content);
}

std::string write_new_record(const std::string& wanted, const std::string& content) {
  const std::filesystem::path w(wanted);
  const std::string dir = w.has_parent_path() ? w.parent_path().string() : ".";
  const std::string stem = w.stem().string();
  std::string tmp;
  const int fd = open_temp_in(dir, stem, tmp);
  if (fd < 0) throw std::runtime_error("cannot create a file in " + dir + ": " + std::strerror(errno));
  if (!write_all(fd, content) || ::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    if (!tmp.empty()) ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write a run record in " + dir + ": " + reason);
  }
  // link(2) makes the complete file visible under a name no other file has (EEXIST: try the next name).
  const std::string source = tmp.empty() ? "/proc/self/fd/" + std::to_string(fd) : tmp;
  std::string path, failure;
  for (int n = 1; n < 100000 && path.empty() && failure.empty(); ++n) {
    const std::string name = stem + (n == 1 ? "" : "-" + std::to_string(n)) + ".json";
    const std::string candidate = (std::filesystem::path(dir) / name).string();
    if (::linkat(AT_FDCWD, source.c_str(), AT_FDCWD, candidate.c_str(), tmp.empty() ? AT_SYMLINK_FOLLOW : 0) == 0)
      path = candidate;
    else if (errno != EEXIST)
      failure = "cannot write the run record " + candidate + ": " + std::strerror(errno);
  }
  ::close(fd);
  if (!tmp.empty()) ::unlink(tmp.c_str());
  if (!failure.empty()) throw std::runtime_error(failure);
  if (path.empty()) throw std::runtime_error("cannot name a run record in " + dir + ": 100,000 records of " + stem);
  return path;
}

void watch_interrupts() {
  clear_interrupt();  // a signal noted before belongs to an earlier run in this process (tests run several)
  struct sigaction sa {};
  sa.sa_handler = note_interrupt;  // util/interrupt.h: where every layer polls it
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // a second signal takes the default action: the process stops at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int interrupt_signal() { return noted_interrupt(); }

void throw_if_interrupted(int last_done, int steps) {
  const int sig = interrupt_signal();
  if (!sig || last_done >= steps - 1) return;
  const int at = last_done + 1;
  throw RunError("interrupted by " + signal_name(sig) + " at step " + std::to_string(at) + " of " +
                     std::to_string(steps) +
                     (at == 0 ? " (no step completed)" : " (steps 0.." + std::to_string(last_done) + " completed)"),
                 at);
}

std::string write_lead_died_record(RunRecord base, const std::string& dir, const std::string& stem,
                                   std::chrono::system_clock::time_point started,
                                   std::chrono::steady_clock::time_point started_steady, int status) {
  base.status = RunStatus::kFailed;
  base.steps.clear();
  base.metrics.reset();
  base.error = RunFailure{
      std::nullopt,
      "rank 0 " + wait_status_text(status) + "; the launcher wrote this record (the steps rank 0 ran died with it)",
      {}};
  base.finished_at = utc_timestamp(std::chrono::system_clock::now());
  base.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_steady).count();
  return write_new_record(dir, stem, started,
                          base.to_json().dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGKILL:
      return "SIGKILL";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGHUP:
      return "SIGHUP";
    case SIGPIPE:
      return "SIGPIPE";
    default:
      return "signal " + std::to_string(sig);
  }
}

std::string wait_status_text(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "died of signal " + std::to_string(WTERMSIG(status)) + " (" + signal_name(WTERMSIG(status)) + ")";
  return "stopped (wait status " + std::to_string(status) + ")";
}

}  // namespace recipebench
