// recipebench_fuzz: feeds mutants of recipes (and run records, see --records) to recipebench's checks in process
// and fails on a crash, a hang, an exception that escapes, or an error without a location
// (docs/fuzzing.md). CTest runs it for a bounded budget (label fuzz); bench/fuzz.sh runs it for >= 10^6 inputs.
//
//   recipebench_fuzz [--seconds S] [--inputs N] [--seed X] [--out DIR] [--binary B --via-binary K] [--records]
//                    SEED_FILE_OR_DIR...
//
// Both limits apply when given (the first reached ends the run); SIGTERM / SIGINT end it after the current input,
// with the totals printed. Exit 0: no finding; 1: findings (each written to DIR/finding-<n>.<ext> with its reason in
// DIR/findings.txt); 2: usage. A crash or a hang ends the process at once: the input is written to DIR/crash.<ext>
// (signal handler) or DIR/hang.<ext> (watchdog), and the exit status is 3 (crash) or 4 (hang).
#include <fcntl.h>
#include <signal.h>
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

void on_stop(int) { g_stop = 1; }
char g_crash_path[4096];
char g_hang_path[4096];

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void on_crash(int sig) {
  const int fd = ::open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    write_all(fd, g_input.data(), g_input.size());
    ::close(fd);
  }
  const char msg[] = "recipebench_fuzz: CRASH (signal) on the input written to the crash file\n";
  write_all(2, msg, sizeof msg - 1);
  _exit(sig == SIGALRM ? 4 : 3);
}

void install_crash_handlers() {
  static std::vector<char> alt(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

/// Ends the process when one input takes longer than `limit` (a hang), writing it to the hang file.
void start_watchdog(std::chrono::seconds limit) {
  std::thread([limit] {
    uint64_t last = g_iteration.load();
    auto since = std::chrono::steady_clock::now();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const uint64_t now = g_iteration.load();
      if (now != last) {
        last = now;
        since = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - since > limit) {
        std::ofstream(g_hang_path, std::ios::binary) << g_input;
        std::fprintf(stderr, "recipebench_fuzz: HANG: one input ran over %lld s (written to %s)\n",
                     static_cast<long long>(limit.count()), g_hang_path);
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
  uint64_t via_binary = 0;  // every K-th input also through the binary (0: never)
  bool records = false;     // also fuzz run records (*.json seeds) through the report's reading
  std::vector<std::string> seeds;
};

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
      o.records = true;
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "recipebench_fuzz: unknown option %s\n", a.c_str());
      std::exit(2);
    } else
      o.seeds.push_back(a);
  }
  if (o.seconds <= 0 && o.inputs == 0) o.seconds = 10;
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

std::vector<Seed> load_seeds(const std::vector<std::string>& paths, bool records) {
  std::vector<Seed> out;
  auto add = [&](const fs::path& p) {
    const std::string ext = p.extension().string();
    if (ext == ".yaml" || ext == ".yml")
      out.push_back({read_file(p), InputKind::kRecipe});
    else if (ext == ".json" && records)
      out.push_back({read_file(p), InputKind::kRunRecord});
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

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  const std::vector<Seed> seeds = load_seeds(o.seeds, o.records);
  if (seeds.empty()) {
    std::fprintf(stderr, "recipebench_fuzz: no *.yaml or *.json seeds under the given paths\n");
    return 2;
  }
  fs::create_directories(o.out);
  std::snprintf(g_crash_path, sizeof g_crash_path, "%s/crash.input", o.out.c_str());
  std::snprintf(g_hang_path, sizeof g_hang_path, "%s/hang.input", o.out.c_str());
  install_crash_handlers();
  signal(SIGTERM, on_stop);
  signal(SIGINT, on_stop);
  start_watchdog(std::chrono::seconds(10));

  std::vector<std::string> donors;
  for (const auto& s : seeds) donors.push_back(s.text);
  Mutator mutator(o.seed);
  std::ofstream findings_log(o.out + "/findings.txt");
  uint64_t count = 0, findings = 0, accepted = 0, binary_runs = 0;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  // The seeds themselves first (the field cases' fuzz inputs among them), then mutants.
  for (uint64_t i = 0;; ++i) {
    if ((o.inputs && count >= o.inputs) || (o.seconds > 0 && elapsed() >= o.seconds) || g_stop) break;
    const Seed& seed = seeds[i < seeds.size() ? i : (i * 2654435761u) % seeds.size()];
    g_input = i < seeds.size() ? seed.text : mutator.mutate(seed.text, donors);
    g_iteration.store(i + 1);
    Verdict v = check_in_process(g_input, seed.kind);
    if (v.ok && o.via_binary && !o.binary.empty() && i % o.via_binary == 0) {
      v = check_through_binary(g_input, seed.kind, o.binary, o.out);
      ++binary_runs;
    }
    ++count;
    accepted += v.accepted ? 1 : 0;
    if (!v.ok) {
      ++findings;
      const std::string file =
          o.out + "/finding-" + std::to_string(findings) + (seed.kind == InputKind::kRecipe ? ".yaml" : ".json");
      std::ofstream(file, std::ios::binary) << g_input;
      findings_log << file << ": " << v.reason << "\n";
      std::fprintf(stderr, "recipebench_fuzz: FINDING %s: %s\n", file.c_str(), v.reason.c_str());
      if (findings >= 20) break;
    }
  }
  std::printf(
      "recipebench_fuzz: %llu inputs (%llu through the binary) in %.1f s (%.0f/s), %llu accepted as valid, "
      "%llu finding%s; seed %llu\n",
      static_cast<unsigned long long>(count), static_cast<unsigned long long>(binary_runs), elapsed(),
      count / std::max(elapsed(), 1e-9), static_cast<unsigned long long>(accepted),
      static_cast<unsigned long long>(findings), findings == 1 ? "" : "s", static_cast<unsigned long long>(o.seed));
  return findings ? 1 : 0;
}
