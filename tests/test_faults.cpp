// Fault injection on `run` and `report` (CPU, bounded time): kill -9 and SIGINT at random points of a one-rank and
// a two-rank run and of a report, and concurrent runs and reports into one folder. After each: every run record is
// absent or complete and valid (check_run_record), every failed run has a failed record, no process is left and
// no temporary file is left. The seed is fixed (RECIPEBENCH_FAULT_SEED overrides it) so a failure reproduces;
// RECIPEBENCH_FAULT_TRIALS scales the number of trials (default 3 per kind).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "launch/run_guard.h"
#include "record/run_record_check.h"
#include "util/proc_stat.h"

using namespace recipebench;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kBinary = RECIPEBENCH_BINARY;
const fs::path kOut = RECIPEBENCH_TEST_OUT;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

std::mt19937& rng() {
  static std::mt19937 r(static_cast<unsigned>(env_int("RECIPEBENCH_FAULT_SEED", 20261130)));
  return r;
}

/// A started command in its own process group (its ranks inherit it), output to `log`.
struct Proc {
  pid_t pid = -1;
  Clock::time_point started;
};

Proc spawn(const std::vector<std::string>& args, const fs::path& log) {
  Proc p;
  p.started = Clock::now();
  p.pid = fork();
  REQUIRE(p.pid >= 0);
  if (p.pid == 0) {
    setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(p.pid, p.pid);
  return p;
}

/// Waits for `p` (at most `limit` seconds, then SIGKILL and a failed check); returns its wait status.
int wait_for(const Proc& p, double limit = 240) {
  int status = 0;
  for (;;) {
    const pid_t got = waitpid(p.pid, &status, WNOHANG);
    if (got == p.pid) return status;
    if (std::chrono::duration<double>(Clock::now() - p.started).count() > limit) {
      kill(-p.pid, SIGKILL);
      FAIL("no exit within " << limit << " s: " << p.pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

/// True when a process of group `pgid` is still there (zombies of orphans are reaped here: the test is a subreaper).
bool group_left(pid_t pgid) {
  for (int i = 0; i < 200; ++i) {  // ranks of a killed launcher die with it (PR_SET_PDEATHSIG): give them 2 s
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (kill(-pgid, 0) != 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

/// The pid of the child of `parent` whose environment has RANK=<rank>, or -1 (a process that exits meanwhile is
/// skipped: util/proc_stat.h reads /proc without throwing).
pid_t rank_pid(pid_t parent, int rank) {
  for (const int pid : list_pids()) {
    const auto stat = read_proc_stat(pid);
    if (!stat || stat->ppid != parent) continue;
    const std::string all = read_proc_file("/proc/" + std::to_string(pid) + "/environ").value_or("");
    if (all.find(std::string("\0RANK=", 6) + std::to_string(rank) + '\0') != std::string::npos ||
        all.rfind("RANK=" + std::to_string(rank) + '\0', 0) == 0)
      return static_cast<pid_t>(pid);
  }
  return -1;
}

/// What a folder of run records holds.
struct FolderState {
  int complete = 0, failed = 0, invalid = 0, temps = 0;
  std::vector<std::string> failed_messages;
};

FolderState inspect(const fs::path& dir) {
  FolderState s;
  if (!fs::exists(dir)) return s;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name[0] == '.') {
      ++s.temps;
      UNSCOPED_INFO("temporary file left: " << e.path());
      continue;
    }
    if (e.path().extension() != ".json" || name.rfind("leaderboard", 0) == 0) continue;
    try {
      const CheckedRunRecord c = check_run_record(read_json_file(e.path().string()), e.path().string());
      for (const auto& d : c.errors) UNSCOPED_INFO(d.to_string());
      if (!c.ok())
        ++s.invalid;
      else if (c.record->complete())
        ++s.complete;
      else {
        ++s.failed;
        s.failed_messages.push_back(c.record->error ? c.record->error->message : std::string());
      }
    } catch (const InputError& err) {
      UNSCOPED_INFO(err.what());
      ++s.invalid;
    }
  }
  return s;
}

/// Counts over the whole suite, printed at the end.
struct Tally {
  int runs = 0, reports = 0, kill9 = 0, sigint = 0, complete = 0, failed = 0, absent = 0, invalid = 0, temps = 0,
      left = 0, before_handler = 0;
};
Tally& tally() {
  static Tally t;
  return t;
}

void count(const FolderState& s) {
  tally().complete += s.complete;
  tally().failed += s.failed;
  tally().invalid += s.invalid;
  tally().temps += s.temps;
  if (s.complete + s.failed == 0) ++tally().absent;
}

std::vector<std::string> one_rank_run(const fs::path& out) {
  return {kBinary, "run", "--steps", "8", "--window", "2:7", "--out", out.string()};
}
std::vector<std::string> two_rank_run(const fs::path& out) {
  return {kBinary,   "run",       std::string(RECIPEBENCH_SOURCE_DIR) + "/tests/data/dist/tiny-dp2.yaml",
          "--nproc", "2",         "--steps",
          "8",       "--window",  "2:7",
          "--out",   out.string()};
}

/// Seconds a clean run of `args` takes (the range the random kill points are drawn from).
double clean_seconds(const std::vector<std::string>& args, const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Proc p = spawn(args, dir / "clean.log");
  const int status = wait_for(p);
  INFO(dir / "clean.log");
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const FolderState s = inspect(dir / "out");
  CHECK(s.complete == 1);
  count(s);
  ++tally().runs;
  return std::chrono::duration<double>(Clock::now() - p.started).count();
}

/// One run killed with `sig` after a random delay in [0, span] s (`victim`: the process to signal, from the
/// launcher's pid). Checks the folder afterwards and returns the run's wait status.
template <typename Victim>
int faulted_run(const std::vector<std::string>& args, const fs::path& dir, int sig, double span, Victim victim) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Proc p = spawn(args, dir / "run.log");
  const double delay = std::uniform_real_distribution<double>(0, span)(rng());
  std::this_thread::sleep_for(std::chrono::duration<double>(delay));
  const pid_t target = victim(p.pid);
  if (target > 0) kill(target, sig);
  const int status = wait_for(p);
  ++tally().runs;
  ++(sig == SIGKILL ? tally().kill9 : tally().sigint);
  const FolderState s = inspect(dir / "out");
  INFO(dir / "run.log"
       << ": signal " << sig << " after " << delay << " s, wait status " << status);
  CHECK(s.invalid == 0);
  CHECK(s.temps == 0);
  CHECK(s.complete + s.failed <= 1);
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (ok) CHECK(s.complete == 1);
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) CHECK(s.failed == 1);  // a failed run has a failed record
  const bool left = group_left(p.pid);
  CHECK_FALSE(left);
  tally().left += left;
  count(s);
  return status;
}

}  // namespace

TEST_CASE("fault injection: one-rank run under kill -9 and SIGINT", "[faults]") {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const int trials = env_int("RECIPEBENCH_FAULT_TRIALS", 3);
  const fs::path base = kOut / "one-rank";
  const double span = clean_seconds(one_rank_run(base / "clean" / "out"), base / "clean");
  auto self = [](pid_t pid) { return pid; };
  for (int i = 0; i < trials; ++i) {
    const fs::path dir = base / ("kill9-" + std::to_string(i));
    const int status = faulted_run(one_rank_run(dir / "out"), dir, SIGKILL, span, self);
    CHECK((WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)));
  }
  for (int i = 0; i < trials; ++i) {
    const fs::path dir = base / ("sigint-" + std::to_string(i));
    const int status = faulted_run(one_rank_run(dir / "out"), dir, SIGINT, span, self);
    if (WIFSIGNALED(status)) ++tally().before_handler;  // SIGINT before `run` set its handler: nothing started
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
      const FolderState s = inspect(dir / "out");
      REQUIRE(s.failed_messages.size() == 1);
      CHECK_THAT(s.failed_messages[0], Catch::StartsWith("interrupted by SIGINT at step "));
    }
  }
}

TEST_CASE("fault injection: two-rank run, rank 0 or the launcher killed, SIGINT to the launcher", "[faults][dist]") {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const int trials = env_int("RECIPEBENCH_FAULT_TRIALS", 3);
  const fs::path base = kOut / "two-rank";
  const double span = clean_seconds(two_rank_run(base / "clean" / "out"), base / "clean");
  auto rank0 = [](pid_t launcher) {
    for (int i = 0; i < 500; ++i) {  // rank 0 appears a moment after the launcher starts
      if (const pid_t p = rank_pid(launcher, 0); p > 0) return p;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pid_t{-1};
  };
  for (int i = 0; i < trials; ++i) {
    const fs::path dir = base / ("kill9-rank0-" + std::to_string(i));
    const int status = faulted_run(two_rank_run(dir / "out"), dir, SIGKILL, span, rank0);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      const FolderState s = inspect(dir / "out");
      REQUIRE(s.failed_messages.size() == 1);
      CHECK_THAT(s.failed_messages[0], Catch::StartsWith("rank 0 died of signal 9 (SIGKILL)"));
    }
  }
  for (int i = 0; i < trials; ++i) {
    const fs::path dir = base / ("kill9-launcher-" + std::to_string(i));
    faulted_run(two_rank_run(dir / "out"), dir, SIGKILL, span, [](pid_t p) { return p; });
  }
  {  // a SIGINT that comes after rank 0 wrote its complete record stops nothing: the run stands, exit 0
    const fs::path dir = base / "sigint-after-record";
    fs::remove_all(dir);
    fs::create_directories(dir);
    const Proc p = spawn(two_rank_run(dir / "out"), dir / "run.log");
    const auto record_written = [&] {
      if (!fs::exists(dir / "out")) return false;
      for (const auto& e : fs::directory_iterator(dir / "out"))
        if (e.path().extension() == ".json" && e.path().filename().string()[0] != '.') return true;
      return false;
    };
    while (!record_written() && Clock::now() - p.started < std::chrono::seconds(120))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    kill(p.pid, SIGINT);
    const int status = wait_for(p);
    ++tally().runs;
    ++tally().sigint;
    const FolderState s = inspect(dir / "out");
    INFO(dir / "run.log"
         << ": wait status " << status);
    CHECK(s.complete == 1);
    CHECK(s.failed == 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    count(s);
  }
  for (int i = 0; i < trials; ++i) {
    const fs::path dir = base / ("sigint-launcher-" + std::to_string(i));
    const int status = faulted_run(two_rank_run(dir / "out"), dir, SIGINT, span, [](pid_t p) { return p; });
    if (WIFSIGNALED(status)) ++tally().before_handler;
  }
}

TEST_CASE("fault injection: report killed at random points, then concurrent runs and reports in one folder",
          "[faults]") {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const int trials = env_int("RECIPEBENCH_FAULT_TRIALS", 3);
  const fs::path dir = kOut / "report";
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  const std::vector<std::string> report = {kBinary,
                                           "report",
                                           std::string(RECIPEBENCH_SOURCE_DIR) + "/recipes",
                                           std::string(RECIPEBENCH_SOURCE_DIR) + "/reports/runs",
                                           "--out",
                                           (dir / "out").string()};
  Proc clean = spawn(report, dir / "report.log");
  REQUIRE(wait_for(clean) == 0);
  const double span = std::chrono::duration<double>(Clock::now() - clean.started).count();
  ++tally().reports;
  auto leaderboard_valid = [&] {
    for (const char* name : {"leaderboard.json", "leaderboard.html"}) {
      const fs::path f = dir / "out" / name;
      REQUIRE(fs::exists(f));  // the first clean report wrote both: a kill leaves the old or the new one
      std::ostringstream text_stream;
      text_stream << std::ifstream(f).rdbuf();
      const std::string text = text_stream.str();
      if (f.extension() == ".json")
        CHECK(Json::parse(text, nullptr, false).is_object());
      else
        CHECK(text.find("</html>") != std::string::npos);
    }
  };
  for (int i = 0; i < 3 * trials; ++i) {
    const Proc p = spawn(report, dir / "report.log");
    std::this_thread::sleep_for(std::chrono::duration<double>(std::uniform_real_distribution<double>(0, span)(rng())));
    kill(p.pid, SIGKILL);
    wait_for(p);
    ++tally().reports;
    ++tally().kill9;
    leaderboard_valid();
  }
  // The next report removes what the killed ones left.
  REQUIRE(wait_for(spawn(report, dir / "report.log")) == 0);
  ++tally().reports;
  leaderboard_valid();
  // Concurrent: three runs and three reports into the same folders at once.
  std::vector<Proc> procs;
  for (int i = 0; i < 3; ++i)
    procs.push_back(spawn(one_rank_run(dir / "runs"), dir / ("run-" + std::to_string(i) + ".log")));
  for (int i = 0; i < 3; ++i) procs.push_back(spawn(report, dir / ("report-" + std::to_string(i) + ".log")));
  for (const Proc& p : procs) CHECK(wait_for(p) == 0);
  tally().runs += 3;
  tally().reports += 3;
  const FolderState runs = inspect(dir / "runs");
  CHECK(runs.complete == 3);  // three records, three names: none replaced another
  CHECK(runs.invalid == 0);
  CHECK(runs.temps == 0);
  count(runs);
  const FolderState out = inspect(dir / "out");
  CHECK(out.temps == 0);
  tally().temps += out.temps;
  leaderboard_valid();
  for (const Proc& p : procs) tally().left += group_left(p.pid);
}

TEST_CASE("fault injection: the counts", "[faults]") {
  const Tally& t = tally();
  std::cout << "fault injection: " << t.runs << " runs, " << t.reports << " reports; signals: " << t.kill9
            << " kill -9, " << t.sigint << " SIGINT; records: " << t.complete << " complete, " << t.failed
            << " failed, " << t.absent << " runs without a record, " << t.invalid << " invalid; " << t.before_handler
            << " SIGINT before the handler; temporary files left: " << t.temps << "; processes left: " << t.left
            << "\n";
  CHECK(t.runs > 0);
  CHECK(t.invalid == 0);
  CHECK(t.temps == 0);
  CHECK(t.left == 0);
}
