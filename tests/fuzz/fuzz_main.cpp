// recipebench_fuzz: feeds mutants of recipes (and run records, see --records) to recipebench's checks in process
// and fails on a crash, a hang, an exception that escapes, or an error without a location
// (docs/fuzzing.md). CTest runs it for a bounded budget (label fuzz); bench/fuzz.sh runs it for >= 10^6 inputs.
//
//   recipebench_fuzz [--seconds S] [--inputs N] [--seed X] [--out DIR] [--binary B --via-binary K] [--records]
//                    [--surfaces recipe,record,config,catalog,profile,log,run,args | all]
//                    [--profile-probe RECIPE] [--import-probe RECIPE] SEED_FILE_OR_DIR...
//
//                    [--memory-mb M] [--hang-seconds H] [--stall-seconds W] [--slow-seconds T]
//
// The surfaces (docs/fuzzing.md, "Surfaces"): recipes (*.yaml), run records (*.json), Hugging Face config.json files
// (*.json with a model_type), catalog files (*.yaml with a top-level gpus or instances list and no layout), profiles
// (*.json run records with passes: `predict PROFILE_PROBE --profile` / `--calibrate`), training logs (*.log, their
// format guessed from their lines and written on a first `#log-format:` line: `import LOG --recipe IMPORT_PROBE`),
// recipes with a top-level `run:` command (the launch check), `predict` / `plan` arguments (*.args, one a line,
// "@RECIPE" the profile probe; every such input through the binary); recipes only by default, --records adds run
// records, --surfaces names the set. The summary counts inputs per surface.
// Both limits apply when given (the first reached ends the run); SIGTERM / SIGINT end it after the current input
// (a second one at once), with the totals printed. Exit 0: no finding; 1: findings (each written to
// DIR/finding-<n>.<ext> with its reason in DIR/findings.txt, flushed per finding); 2: usage. A crash or a hang ends
// the process at once: the input is written to DIR/crash.input (signal handler) or DIR/hang.input (watchdog), and
// the exit status is 3 (crash) or 4 (hang: more than H s of CPU, default 10, or W s of wall time, default 300, on
// one input).
//
// The counts are written as the run goes (every second, at each finding and at every end: inputs, signal, crash,
// hang) to DIR/summary.json, atomically (a temporary file renamed), and the totals line is printed at every end,
// so a process stopped or ended by its watchdog still counts truly (case fuzz-bench-summary-zero, issue 33).
// Resources per input (issue 33 kind 1): the address space is capped (--memory-mb, default 4096: an allocation
// beyond it is an escaped std::bad_alloc); an input whose check takes more than --slow-seconds (default 5) of CPU,
// or raises the process's peak memory above 512 MiB + 64 bytes per input byte, is a finding.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fuzz_oracle.h"
#include "mutator.h"

namespace fs = std::filesystem;
using namespace recipebench::fuzz;

namespace {

// The input being checked, for the crash handler and the watchdog (written before each check).
std::string g_input;
std::atomic<uint64_t> g_iteration{0};
volatile sig_atomic_t g_stop = 0;  // SIGTERM / SIGINT: finish the current input, print the totals, exit
// Set by the watchdog before it kills the binary and ends the process: the main loop counts nothing more (the
// binary's death by that kill is not a finding).
std::atomic<bool> g_ending{false};

/// The running counts, read by the summary writer from the main loop, the watchdog and the signal handlers.
struct Totals {
  std::atomic<uint64_t> inputs{0};     // inputs whose check ended
  std::atomic<uint64_t> in_check{0};   // 1 while an input is being checked
  std::atomic<uint64_t> binary{0};     // inputs also run through the binary
  std::atomic<uint64_t> accepted{0};   // inputs recipebench took as valid
  std::atomic<uint64_t> findings{0};   // findings (a crash or a hang apart)
  std::atomic<uint64_t> by_surface[kInputKinds] = {};  // inputs whose check ended, per InputKind
  uint64_t seed = 0;
  timespec start{};
};
Totals g_totals;

/// How a run ended, in the summary ("running" while it goes).
enum class End { kRunning, kInputs, kSeconds, kSignal, kFindingLimit, kCrash, kHang };

const char* end_name(End e) {
  static const char* const names[] = {"running", "inputs", "seconds", "signal", "finding-limit", "crash", "hang"};
  return names[static_cast<int>(e)];
}

char g_crash_path[4096];
char g_hang_path[4096];
char g_summary_path[4096];
// One temporary file per writer (the main loop, the watchdog, a signal handler), so a handler that interrupts the
// main loop's write never writes into the same file.
enum Writer { kMainWriter, kWatchdogWriter, kHandlerWriter, kWriters };
char g_summary_tmp[kWriters][4096];

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

/// Text built without allocation or stdio, so the signal handlers may use it (async-signal-safe).
struct Text {
  char d[1024];
  size_t n = 0;
  Text& s(const char* t) {
    while (*t && n + 1 < sizeof d) d[n++] = *t++;
    return *this;
  }
  Text& u(uint64_t v) {
    char tmp[24];
    int k = 0;
    do tmp[k++] = static_cast<char>('0' + v % 10);
    while ((v /= 10) && k < 24);
    while (k > 0 && n + 1 < sizeof d) d[n++] = tmp[--k];
    return *this;
  }
  Text& tenths(uint64_t t) { return u(t / 10).s(".").u(t % 10); }  // t tenths as "12.3"
};

/// Tenths of a second since the run started (CLOCK_MONOTONIC; async-signal-safe).
uint64_t elapsed_tenths() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t ms = (now.tv_sec - g_totals.start.tv_sec) * 1000 + (now.tv_nsec - g_totals.start.tv_nsec) / 1000000;
  return static_cast<uint64_t>(std::max<int64_t>(ms, 0) / 100);
}

/// The inputs counted at `end`: the one whose check a crash or a hang stopped counts as run.
uint64_t inputs_at(End end) {
  return g_totals.inputs.load() + ((end == End::kCrash || end == End::kHang) ? g_totals.in_check.load() : 0);
}

/// DIR/summary.json with the counts now, written to `writer`'s temporary file and renamed over
/// (async-signal-safe).
void write_summary(End end, Writer writer = kMainWriter) {
  const uint64_t t = elapsed_tenths();
  Text j;
  j.s("{\"inputs\": ").u(inputs_at(end)).s(", \"through_binary\": ").u(g_totals.binary.load());
  j.s(", \"accepted\": ").u(g_totals.accepted.load()).s(", \"findings\": ").u(g_totals.findings.load());
  j.s(", \"crashes\": ").u(end == End::kCrash ? 1 : 0).s(", \"hangs\": ").u(end == End::kHang ? 1 : 0);
  j.s(", \"seconds\": ").tenths(t).s(", \"seed\": ").u(g_totals.seed).s(", \"ended\": \"").s(end_name(end));
  j.s("\", \"by_surface\": {");
  for (int k = 0; k < kInputKinds; ++k)
    j.s(k ? ", \"" : "\"").s(surface_name(static_cast<InputKind>(k))).s("\": ").u(g_totals.by_surface[k].load());
  j.s("}}\n");
  const int fd = ::open(g_summary_tmp[writer], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  write_all(fd, j.d, j.n);
  ::close(fd);
  ::rename(g_summary_tmp[writer], g_summary_path);
}

/// The totals line on stdout (bench/fuzz.sh and people read it; async-signal-safe).
void print_totals(End end) {
  const uint64_t t = std::max<uint64_t>(elapsed_tenths(), 1), n = inputs_at(end), f = g_totals.findings.load();
  Text l;
  l.s("recipebench_fuzz: ").u(n).s(" inputs (").u(g_totals.binary.load()).s(" through the binary) in ").tenths(t);
  l.s(" s (").u(n * 10 / t).s("/s), ").u(g_totals.accepted.load()).s(" accepted as valid, ").u(f);
  l.s(f == 1 ? " finding" : " findings").s("; seed ").u(g_totals.seed).s("; ended: ").s(end_name(end)).s("\n");
  write_all(1, l.d, l.n);
}

/// Ends the binary a check is waiting for, if any, so it does not outlive the harness (async-signal-safe).
void kill_binary_child() {
  const pid_t child = g_binary_child.load();
  if (child > 0) kill(child, SIGKILL);
}

void on_stop(int sig) {
  write_summary(End::kSignal, kHandlerWriter);
  if (g_stop) {  // a second signal: the current input is taking too long to wait for
    kill_binary_child();
    print_totals(End::kSignal);
    _exit(128 + sig);
  }
  g_stop = 1;
}

void on_crash(int sig) {
  const int fd = ::open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    write_all(fd, g_input.data(), g_input.size());
    ::close(fd);
  }
  const char msg[] = "recipebench_fuzz: CRASH (signal) on the input written to the crash file\n";
  write_all(2, msg, sizeof msg - 1);
  kill_binary_child();
  write_summary(End::kCrash, kHandlerWriter);
  print_totals(End::kCrash);
  _exit(sig == SIGALRM ? 4 : 3);
}

void install_signal_handlers() {
  static std::vector<char> alt(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
  struct sigaction stop {};
  stop.sa_handler = on_stop;
  stop.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT}) sigaction(sig, &stop, nullptr);
}

/// CPU seconds of the clock `clock` (a thread's CPU clock).
double cpu_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec / 1e9;
}

/// Ends the process when one input's check takes more than `cpu_limit` seconds of the checking thread's CPU (a
/// hang that computes), or more than `wall_limit` seconds of wall time (one that waits), writing it to the hang file
/// and the counts to the summary. CPU time, not wall time, is the first test so that a run under `nice` on a busy
/// machine, which may get a small share of a core, is not taken for a hang.
void start_watchdog(double cpu_limit, double wall_limit) {
  clockid_t main_clock{};
  pthread_getcpuclockid(pthread_self(), &main_clock);
  std::thread([cpu_limit, wall_limit, main_clock] {
    uint64_t last = g_iteration.load();
    auto since = std::chrono::steady_clock::now();
    double cpu_since = cpu_seconds(main_clock);
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const uint64_t now = g_iteration.load();
      const double cpu = cpu_seconds(main_clock) - cpu_since;
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
      if (now != last) {
        last = now;
        since = std::chrono::steady_clock::now();
        cpu_since = cpu_seconds(main_clock);
      } else if (g_totals.in_check.load() && (cpu > cpu_limit || wall > wall_limit)) {
        std::ofstream(g_hang_path, std::ios::binary) << g_input;
        std::fprintf(stderr, "recipebench_fuzz: HANG: one input ran %.1f s of CPU (limit %.1f) in %.1f s (limit %.1f) "
                     "(written to %s)\n", cpu, cpu_limit, wall, wall_limit, g_hang_path);
        g_ending.store(true);
        kill_binary_child();
        write_summary(End::kHang, kWatchdogWriter);
        print_totals(End::kHang);
        _exit(4);
      }
    }
  }).detach();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Options {
  double seconds = 0;   // 0: no time limit (10 s when no --inputs either)
  uint64_t inputs = 0;  // 0: no input limit
  uint64_t seed = 1;
  std::string out = "fuzz-out";
  std::string binary;
  uint64_t via_binary = 0;     // every K-th input also through the binary (0: never)
  bool surfaces[kInputKinds] = {true};  // the surfaces fuzzed, by InputKind (recipes by default)
  std::string profile_probe;  // the recipe profiles and arguments are predicted with (default: the first recipe seed)
  std::string import_probe;   // the recipe logs are imported with (default: the first recipe seed)
  uint64_t memory_mb = 4096;   // the address-space cap (0: none)
  double hang_seconds = 10;    // one input over this CPU time ends the process (a hang)
  double stall_seconds = 300;  // one input over this wall time ends the process (a hang that waits)
  double slow_seconds = 5;     // one input over this CPU time is a finding
  std::vector<std::string> seeds;
};

/// --surfaces LIST: the comma-separated surface names (surface_name) to fuzz, replacing the default.
void parse_surfaces(const std::string& list, Options& o) {
  for (bool& s : o.surfaces) s = list == "all";
  if (list == "all") return;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    int k = 0;
    while (k < kInputKinds && name != surface_name(static_cast<InputKind>(k))) ++k;
    if (k == kInputKinds) {
      std::fprintf(stderr, "recipebench_fuzz: --surfaces: %s, expected recipe, record, config, catalog, profile, log, run, args or all\n", name.c_str());
      std::exit(2);
    }
    o.surfaces[k] = true;
  }
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "recipebench_fuzz: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seconds")
      o.seconds = std::atof(next().c_str());
    else if (a == "--inputs")
      o.inputs = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--seed")
      o.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--out")
      o.out = next();
    else if (a == "--binary")
      o.binary = next();
    else if (a == "--via-binary")
      o.via_binary = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--records")
      o.surfaces[static_cast<int>(InputKind::kRunRecord)] = true;
    else if (a == "--surfaces")
      parse_surfaces(next(), o);
    else if (a == "--profile-probe")
      o.profile_probe = next();
    else if (a == "--import-probe")
      o.import_probe = next();
    else if (a == "--memory-mb")
      o.memory_mb = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--hang-seconds")
      o.hang_seconds = std::atof(next().c_str());
    else if (a == "--stall-seconds")
      o.stall_seconds = std::atof(next().c_str());
    else if (a == "--slow-seconds")
      o.slow_seconds = std::atof(next().c_str());
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "recipebench_fuzz: unknown option %s\n", a.c_str());
      std::exit(2);
    } else
      o.seeds.push_back(a);
  }
  if (o.seconds <= 0 && o.inputs == 0) o.seconds = 10;
  if (!(o.hang_seconds > 0) || !(o.slow_seconds > 0) || !(o.stall_seconds > 0)) {
    std::fprintf(stderr, "recipebench_fuzz: --hang-seconds, --stall-seconds and --slow-seconds must be > 0\n");
    std::exit(2);
  }
  if (o.seeds.empty()) {
    std::fprintf(stderr, "recipebench_fuzz: give seed files or folders (*.yaml recipes, *.json run records)\n");
    std::exit(2);
  }
  return o;
}

struct Seed {
  std::string text;
  InputKind kind;
};

/// The surface a seed file belongs to: by extension, then content (a config.json names its model_type; a catalog
/// file has a top-level gpus or instances list and no layout; a profile holds passes; a recipe with a top-level
/// `run:` is a run command's). A profile or a run command whose surface is not fuzzed stays a record or a recipe.
/// nullopt: not a seed.
std::optional<InputKind> seed_kind(const fs::path& p, const std::string& text, const Options& o) {
  const std::string ext = p.extension().string();
  auto top_level = [&](const char* key) {
    return text.rfind(key, 0) == 0 || text.find(std::string("\n") + key) != std::string::npos;
  };
  auto on = [&](InputKind k) { return o.surfaces[static_cast<int>(k)]; };
  if (ext == ".yaml" || ext == ".yml") {
    if ((top_level("gpus:") || top_level("instances:")) && !top_level("layout:")) return InputKind::kCatalog;
    return top_level("run:") && on(InputKind::kRunCommand) ? InputKind::kRunCommand : InputKind::kRecipe;
  }
  if (ext == ".json") {
    if (text.find("\"model_type\"") != std::string::npos) return InputKind::kHfConfig;
    return text.find("\"passes\"") != std::string::npos && on(InputKind::kProfile) ? InputKind::kProfile
                                                                                   : InputKind::kRunRecord;
  }
  if (ext == ".log") return InputKind::kLog;
  if (ext == ".args") return InputKind::kArgs;
  return std::nullopt;
}

/// The format a log seed is read with, guessed from its lines ("" to have it detected): the `regex:` pattern of the
/// peer format's step lines (tests/hostile_cases.sh), else Megatron-LM's, TorchTitan's or the Hugging Face
/// Trainer's step line.
std::string log_format_of(const std::string& text) {
  if (text.find("peer step ") != std::string::npos)
    return "regex:^peer step (?<step>[0-9]+) time_s (?<seconds>[0-9.e+-]+) loss (?<loss>[0-9.e+-]+) tokens "
           "(?<tokens>[0-9]+)( memory_gb (?<memory_gb>[0-9.e+-]+))?$";
  if (text.find("elapsed time per iteration") != std::string::npos) return "megatron";
  if (text.find("[titan]") != std::string::npos || text.find("step:") != std::string::npos) return "torchtitan";
  if (text.find("'loss'") != std::string::npos || text.find("\"loss\"") != std::string::npos) return "hf";
  return "";
}

std::vector<Seed> load_seeds(const std::vector<std::string>& paths, const Options& o) {
  std::vector<Seed> out;
  auto add = [&](const fs::path& p) {
    std::string text = read_file(p);
    const std::optional<InputKind> kind = seed_kind(p, text, o);
    if (!kind || !o.surfaces[static_cast<int>(*kind)]) return;
    if (*kind == InputKind::kLog) {  // read with its format and detected (docs/fuzzing.md, "Surfaces")
      const std::string format = log_format_of(text);
      if (!format.empty()) out.push_back({std::string(kLogFormatLine) + " " + format + "\n" + text, *kind});
      out.push_back({std::string(kLogFormatLine) + "\n" + text, *kind});
      return;
    }
    // A run record is also a calibration record (`predict --calibrate` reads a measured run's record): with the
    // profile surface on, each is fuzzed there too, not only as its mutated profiles (docs/fuzzing.md, "Surfaces").
    if (*kind == InputKind::kRunRecord && o.surfaces[static_cast<int>(InputKind::kProfile)])
      out.push_back({text, InputKind::kProfile});
    out.push_back({std::move(text), *kind});
  };
  for (const auto& s : paths) {
    if (fs::is_directory(s)) {
      for (const auto& e : fs::recursive_directory_iterator(s))
        if (e.is_regular_file()) add(e.path());
    } else {
      add(s);
    }
  }
  return out;
}

/// CPU seconds of this thread (the checks run on it).
double thread_cpu_seconds() { return cpu_seconds(CLOCK_THREAD_CPUTIME_ID); }

/// The process's peak resident memory so far, in bytes.
uint64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

/// One input checked in process (and through the binary when its turn), with its CPU time and the peak memory it
/// raised held to the bounds of kind 1 (docs/fuzzing.md).
Verdict check_input(const Options& o, const std::string& input, InputKind kind, uint64_t i) {
  ResourceUse use;
  use.input_bytes = input.size();
  use.peak_before = peak_rss_bytes();
  const double cpu0 = thread_cpu_seconds();
  Verdict v = check_in_process(input, kind);
  use.cpu_seconds = thread_cpu_seconds() - cpu0;
  use.peak_after = peak_rss_bytes();
  if (const std::string over = resource_overrun(use, o.slow_seconds); v.ok && !over.empty())
    v = Verdict{false, v.accepted, over};
  const bool turn = o.via_binary && (i % o.via_binary == 0 || kind == InputKind::kArgs);  // arguments: only there
  if (v.ok && turn && !o.binary.empty()) {
    v = check_through_binary(input, kind, o.binary, o.out);
    while (g_ending.load()) std::this_thread::sleep_for(std::chrono::seconds(1));  // the watchdog ends the process
    g_totals.binary.fetch_add(1);
  }
  return v;
}

/// Writes a finding's input to DIR/finding-N.<ext> and its reason to findings.txt (flushed at once).
void record_finding(const Options& o, std::ofstream& log, const std::string& input, InputKind kind,
                    const std::string& reason) {
  const uint64_t n = g_totals.findings.fetch_add(1) + 1;
  const std::string file =
      o.out + "/finding-" + std::to_string(n) + surface_extension(kind);
  std::ofstream(file, std::ios::binary) << input;
  log << file << ": " << reason << std::endl;
  std::fprintf(stderr, "recipebench_fuzz: FINDING %s: %s\n", file.c_str(), reason.c_str());
  write_summary(End::kRunning);
}

/// A mutant of `seed` by its surface's mutator (mutator.h).
std::string mutant(Mutator& mutator, const Seed& seed, const std::vector<std::string>& donors) {
  switch (seed.kind) {
    case InputKind::kRunCommand: return mutator.mutate_command(seed.text, donors);
    case InputKind::kArgs: return mutator.mutate_args(seed.text, donors);
    case InputKind::kLog: return mutator.mutate_log(seed.text, donors);
    default: return mutator.mutate(seed.text, donors);
  }
}

/// The seeds first (the field cases' fuzz inputs among them), then mutants, until a limit, a signal or 20
/// findings; returns how the run ended.
End fuzz_loop(const Options& o, const std::vector<Seed>& seeds) {
  std::vector<std::string> donors;
  for (const auto& s : seeds) donors.push_back(s.text);
  Mutator mutator(o.seed);
  std::ofstream findings_log(o.out + "/findings.txt");
  uint64_t next_summary = 10;  // tenths of a second
  for (uint64_t i = 0;; ++i) {
    const uint64_t t = elapsed_tenths();
    if (t >= next_summary) {
      write_summary(End::kRunning);
      next_summary = t + 10;
    }
    if (g_stop) return End::kSignal;
    if (o.inputs && g_totals.inputs.load() >= o.inputs) return End::kInputs;
    if (o.seconds > 0 && t >= o.seconds * 10) return End::kSeconds;
    const Seed& seed = seeds[i < seeds.size() ? i : (i * 2654435761u) % seeds.size()];
    g_input = i < seeds.size() ? seed.text : mutant(mutator, seed, donors);
    g_totals.in_check.store(1);
    g_iteration.store(i + 1);
    const Verdict v = check_input(o, g_input, seed.kind, i);
    g_totals.inputs.fetch_add(1);
    g_totals.by_surface[static_cast<int>(seed.kind)].fetch_add(1);
    g_totals.in_check.store(0);
    g_totals.accepted.fetch_add(v.accepted ? 1 : 0);
    if (!v.ok) {
      record_finding(o, findings_log, g_input, seed.kind, v.reason);
      if (g_totals.findings.load() >= 20) return End::kFindingLimit;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  const std::vector<Seed> seeds = load_seeds(o.seeds, o);
  if (seeds.empty()) {
    std::fprintf(stderr, "recipebench_fuzz: no *.yaml or *.json seeds under the given paths\n");
    return 2;
  }
  fs::create_directories(o.out);
  set_scratch_dir(o.out);
  for (const Seed& s : seeds)
    if (s.kind == InputKind::kRecipe) {
      set_probe_recipe(s.text);
      break;
    }
  if (!o.profile_probe.empty()) set_profile_probe(read_file(o.profile_probe));
  if (!o.import_probe.empty()) set_import_probe(read_file(o.import_probe));
  std::snprintf(g_crash_path, sizeof g_crash_path, "%s/crash.input", o.out.c_str());
  std::snprintf(g_hang_path, sizeof g_hang_path, "%s/hang.input", o.out.c_str());
  std::snprintf(g_summary_path, sizeof g_summary_path, "%s/summary.json", o.out.c_str());
  for (int w = 0; w < kWriters; ++w)
    std::snprintf(g_summary_tmp[w], sizeof g_summary_tmp[w], "%s/.summary.json.tmp%d", o.out.c_str(), w);
  g_totals.seed = o.seed;
  clock_gettime(CLOCK_MONOTONIC, &g_totals.start);
  if (o.memory_mb) {
    const rlimit cap{o.memory_mb << 20, o.memory_mb << 20};
    setrlimit(RLIMIT_AS, &cap);
  }
  install_signal_handlers();
  start_watchdog(o.hang_seconds, o.stall_seconds);
  write_summary(End::kRunning);
  const End end = fuzz_loop(o, seeds);
  write_summary(end);
  std::fflush(stdout);
  print_totals(end);
  return g_totals.findings.load() ? 1 : 0;
}
