#include "launch/launch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "launch/run_guard.h"
#include "util/host.h"

namespace recipebench {

namespace {

int parse_int(const char* name, const char* value, int lo, int hi) {
  try {
    size_t used = 0;
    const long v = std::stol(value, &used);
    if (used != std::strlen(value) || v < lo || v > hi) throw std::out_of_range(value);
    return static_cast<int>(v);
  } catch (const std::exception&) {
    throw std::invalid_argument(std::string(name) + "=" + value + ": expected a whole number in " + std::to_string(lo) +
                                ".." + std::to_string(hi));
  }
}

}  // namespace

std::string slurm_first_host(const std::string& nodelist) {
  // The first entry: up to the first comma outside brackets.
  size_t end = 0;
  int depth = 0;
  for (; end < nodelist.size(); ++end) {
    if (nodelist[end] == '[')
      ++depth;
    else if (nodelist[end] == ']')
      --depth;
    else if (nodelist[end] == ',' && depth == 0)
      break;
  }
  const std::string first = nodelist.substr(0, end);
  const auto open = first.find('[');
  if (open == std::string::npos) return first;
  // prefix[a-b,c]suffix -> prefix + a (zero padding kept) + suffix
  const auto close = first.find(']', open);
  std::string range = first.substr(open + 1, (close == std::string::npos ? first.size() : close) - open - 1);
  const auto stop = range.find_first_of(",-");
  if (stop != std::string::npos) range = range.substr(0, stop);
  const std::string host = first.substr(0, open) + range + (close == std::string::npos ? "" : first.substr(close + 1));
  return host.find('[') == std::string::npos ? host : slurm_first_host(host);  // rack[1-2]-n[01-04] -> rack1-n01
}

RankEnv rank_env_from(const std::function<const char*(const char*)>& get) {
  RankEnv e;
  auto has = [&](const char* n) { return get(n) != nullptr && *get(n) != '\0'; };
  if (has("RANK") && has("WORLD_SIZE")) {
    e.source = "torchrun";
    e.world = parse_int("WORLD_SIZE", get("WORLD_SIZE"), 1, 1 << 20);
    e.rank = parse_int("RANK", get("RANK"), 0, e.world - 1);
    e.local_rank = has("LOCAL_RANK") ? parse_int("LOCAL_RANK", get("LOCAL_RANK"), 0, e.world - 1) : e.rank;
    if (has("MASTER_ADDR")) e.master_addr = get("MASTER_ADDR");
    if (has("MASTER_PORT")) e.master_port = parse_int("MASTER_PORT", get("MASTER_PORT"), 1, 65535);
  } else if (has("SLURM_PROCID") && has("SLURM_NTASKS")) {
    e.source = "slurm";
    e.world = parse_int("SLURM_NTASKS", get("SLURM_NTASKS"), 1, 1 << 20);
    e.rank = parse_int("SLURM_PROCID", get("SLURM_PROCID"), 0, e.world - 1);
    e.local_rank = has("SLURM_LOCALID") ? parse_int("SLURM_LOCALID", get("SLURM_LOCALID"), 0, e.world - 1) : 0;
    if (has("MASTER_ADDR"))
      e.master_addr = get("MASTER_ADDR");
    else if (has("SLURM_STEP_NODELIST"))
      e.master_addr = slurm_first_host(get("SLURM_STEP_NODELIST"));
    else if (has("SLURM_NODELIST"))
      e.master_addr = slurm_first_host(get("SLURM_NODELIST"));
    if (has("MASTER_PORT"))
      e.master_port = parse_int("MASTER_PORT", get("MASTER_PORT"), 1, 65535);
    else if (has("SLURM_JOB_ID"))
      e.master_port = 29500 + parse_int("SLURM_JOB_ID", get("SLURM_JOB_ID"), 0, 2147483647) % 1000;
  }
  return e;
}

RankEnv rank_env() {
  return rank_env_from([](const char* n) -> const char* { return std::getenv(n); });
}

bool launched_by_recipebench() { return std::getenv("RECIPEBENCH_LAUNCHED") != nullptr; }

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0).
int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const std::string err = std::strerror(errno);
    close(fd);
    throw std::runtime_error("finding a free port: " + err);
  }
  close(fd);
  return ntohs(a.sin_port);
}

HostCapacity host_capacity() {
  HostCapacity h;
  h.cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  h.available_bytes = host_available_bytes();
  return h;
}

std::string ranks_fit_problem(int nproc, const HostCapacity& host, bool oversubscribe) {
  const long most = kMaxRanksPerCore * host.cores;
  if (nproc > most && !oversubscribe)
    return std::to_string(nproc) + " ranks on " + std::to_string(host.cores) + " cores: at most " +
           std::to_string(kMaxRanksPerCore) + " ranks per core (" + std::to_string(most) + " ranks) fit this host";
  const uint64_t need = static_cast<uint64_t>(nproc) * kMinRankBytes;
  if (host.available_bytes > 0 && need > host.available_bytes) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "%d ranks need at least %d x %llu MiB = %.1f GiB of memory; this host has %.1f GiB "
                  "available",
                  nproc, nproc, static_cast<unsigned long long>(kMinRankBytes >> 20), need / 1073741824.0,
                  host.available_bytes / 1073741824.0);
    return text;
  }
  return "";
}

namespace {

volatile sig_atomic_t g_forward_signal = 0;
void on_signal(int sig) { g_forward_signal = sig; }

std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  size_t start = 0;
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i] == '\0') {
      args.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  return args;
}

/// Writes `text` to the launch note at `path` whole (a temporary file renamed over it: a rank never reads half).
void write_launch_note(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
  }
  std::rename(tmp.c_str(), path.c_str());
}

/// A fresh path for the launch note of one launch (nothing is created there until a rank dies of a signal).
std::string launch_note_path() {
  char dir[] = "/tmp/recipebench-launch-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  return std::string(dir) + "/note";
}

/// What every rank of one local launch shares: its command line, the rendezvous port and OMP_NUM_THREADS.
struct LaunchPlan {
  int nproc = 1;
  std::vector<std::string> args;
  std::string port;
  std::string threads;
  std::string note;  ///< the launch note's path (RECIPEBENCH_LAUNCH_NOTE, launch_note_text)
};

/// In a forked child: dies with the launcher, sets rank `r`'s torchrun-style environment and execs this binary
/// again with the same arguments. Never returns (exit 127 when the exec fails).
[[noreturn]] void exec_rank(int r, const LaunchPlan& plan, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);  // the launcher died before prctl
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  setenv("RANK", std::to_string(r).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(plan.nproc).c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", std::to_string(plan.nproc).c_str(), 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", plan.port.c_str(), 1);
  setenv("RECIPEBENCH_LAUNCHED", "1", 1);
  setenv("RECIPEBENCH_LAUNCH_NOTE", plan.note.c_str(), 1);
  setenv("OMP_NUM_THREADS", plan.threads.c_str(), 0);
  std::vector<char*> argv;
  for (const auto& a : plan.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "recipebench run: exec of /proc/self/exe failed: %s\n", std::strerror(errno));
  _exit(127);
}

/// Forks one child per rank (each runs exec_rank); the children's pids in rank order. Throws std::runtime_error
/// when a fork fails, after killing the children already started.
std::vector<pid_t> fork_ranks(const LaunchPlan& plan) {
  const pid_t parent = getpid();
  std::vector<pid_t> pids;
  for (int r = 0; r < plan.nproc; ++r) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
      for (pid_t p : pids) kill(p, SIGKILL);
      throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) exec_rank(r, plan, parent);
    pids.push_back(pid);
  }
  return pids;
}

/// The launcher's view of its ranks while it waits: which have ended, the first failure and the escalation
/// (SIGTERM after the grace period, SIGKILL 5 s later) that stops the others.
class RankWatch {
 public:
  using Clock = std::chrono::steady_clock;
  RankWatch(std::vector<pid_t> pids, double grace_seconds, std::string note)
      : pids_(std::move(pids)),
        note_(std::move(note)),
        done_(pids_.size(), false),
        alive_(static_cast<int>(pids_.size())),
        grace_(grace_seconds) {}

  int alive() const { return alive_; }

  /// The launcher's exit code once every rank has ended: 0 when every rank exited 0 (also when a forwarded
  /// signal came too late to stop the run: rank 0 then wrote a complete record), 128 + the signal when an
  /// interrupted run failed, else the exit status of the first rank that failed (1 for a signal).
  int result() const {
    if (first_failed_ < 0) return 0;
    return forwarded_ ? 128 + forwarded_ : result_;
  }

  /// Sends `sig` (forwarded from the launcher) to every live rank and escalates at once, as after a failure
  /// whose grace period has passed.
  void forward(int sig) {
    signal_live(sig);
    if (!forwarded_) forwarded_ = sig;
    if (!stop_from_)
      stop_from_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_));
  }

  /// Records that child `pid` ended with wait status `status`; the first failure sets the result.
  void reaped(pid_t pid, int status, const std::function<void(int status)>& on_lead_died) {
    for (size_t r = 0; r < pids_.size(); ++r) {
      if (pids_[r] != pid || done_[r]) continue;
      done_[r] = true;
      --alive_;
      if (r == 0 && WIFSIGNALED(status) && on_lead_died) on_lead_died(status);
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok && first_failed_ < 0) failed(static_cast<int>(r), status);
    }
  }

  /// After a failure: SIGTERM to the live ranks once the grace period has passed, SIGKILL 5 s later.
  void escalate() {
    if (!stop_from_) return;
    const double since = std::chrono::duration<double>(Clock::now() - *stop_from_).count();
    if (!termed_ && since >= grace_) {
      termed_ = true;
      signal_live(SIGTERM);
    } else if (!killed_ && since >= grace_ + 5.0) {
      killed_ = true;
      signal_live(SIGKILL);
    }
  }

 private:
  void failed(int r, int status) {
    first_failed_ = r;
    if (!stop_from_) stop_from_ = Clock::now();
    result_ = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (WIFSIGNALED(status)) write_launch_note(note_, launch_note_text(r, status));
    if (alive_ > 0)
      std::fprintf(stderr, "recipebench run: rank %d %s; stopping the other ranks\n", r,
                   WIFEXITED(status) ? ("exited with status " + std::to_string(WEXITSTATUS(status))).c_str()
                                     : ("died of signal " + std::to_string(WTERMSIG(status))).c_str());
  }
  void signal_live(int sig) {
    for (size_t r = 0; r < pids_.size(); ++r)
      if (!done_[r]) kill(pids_[r], sig);
  }

  std::vector<pid_t> pids_;
  std::string note_;
  std::vector<bool> done_;
  int alive_;
  double grace_;
  int result_ = 0;
  int first_failed_ = -1;  ///< the first rank that exited non-zero or died of a signal
  int forwarded_ = 0;      ///< the first signal forwarded from the launcher, or 0
  std::optional<Clock::time_point>
      stop_from_;  ///< set by the first failure or forwarded signal: the escalation's start
  bool termed_ = false;
  bool killed_ = false;
};

/// Waits for every rank, forwarding SIGINT/SIGTERM caught by on_signal and stopping the others after a failure.
int wait_ranks(RankWatch& watch, const std::function<void(int status)>& on_lead_died) {
  while (watch.alive() > 0) {
    if (g_forward_signal) {
      const int sig = g_forward_signal;
      g_forward_signal = 0;
      watch.forward(sig);
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      watch.reaped(pid, status, on_lead_died);
      continue;
    }
    if (pid < 0 && errno != EINTR) break;  // no children left
    watch.escalate();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return watch.result();
}

}  // namespace

std::string launch_note_text(int rank, int status) { return "rank " + std::to_string(rank) + " " + wait_status_text(status); }

std::string nproc_refusal(int nproc, const HostCapacity& host, bool oversubscribe) {
  const std::string problem = ranks_fit_problem(nproc, host, oversubscribe);
  if (problem.empty()) return "";
  const bool cores_only = ranks_fit_problem(nproc, host, /*oversubscribe=*/true).empty();
  return "--nproc " + std::to_string(nproc) + ": " + problem +
         (cores_only ? "; --oversubscribe starts them anyway (each rank gets a share of a core: for tests, not timings)"
                     : "");
}

int launch_local(int nproc, double grace_seconds, const std::function<void(int status)>& on_lead_died,
                 bool oversubscribe) {
  if (const std::string refusal = nproc_refusal(nproc, host_capacity(), oversubscribe); !refusal.empty())
    throw std::invalid_argument(refusal);
  LaunchPlan plan;
  plan.nproc = nproc;
  plan.args = own_arguments();
  if (plan.args.empty()) throw std::runtime_error("cannot read this process's arguments from /proc/self/cmdline");
  plan.port = std::to_string(free_loopback_port());
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  plan.threads = std::to_string(std::max<long>(1, cores / nproc));

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  plan.note = launch_note_path();
  RankWatch watch(fork_ranks(plan), grace_seconds, plan.note);
  const int result = wait_ranks(watch, on_lead_died);
  std::remove(plan.note.c_str());
  std::remove((plan.note + ".tmp").c_str());
  rmdir(plan.note.substr(0, plan.note.rfind('/')).c_str());
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return result;
}

}  // namespace recipebench
