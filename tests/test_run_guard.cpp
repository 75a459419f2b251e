// One true record per run (harness/launch/run_guard.h): --out checked first, unique names created exclusively,
// interrupts turned into a failed step, a dead rank 0 described.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "launch/run_guard.h"
#include "test_util.h"

using namespace recipebench;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("rb-guard-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST_CASE("run guard: records started in the same second get their own names, and no temporary is left", "[guard]") {
  const fs::path dir = fresh_dir("names");
  const auto t = std::chrono::system_clock::from_time_t(1796034000);  // 2026-11-30T10:20:00Z
  std::vector<std::thread> threads;
  std::vector<std::string> paths(8);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back(
        [&, i] { paths[i] = write_new_record(dir.string(), "tiny", t, "{\"n\": " + std::to_string(i) + "}\n"); });
  for (auto& th : threads) th.join();
  const std::set<std::string> unique(paths.begin(), paths.end());
  CHECK(unique.size() == 8);
  CHECK(unique.count((dir / "tiny-20261130T102000Z.json").string()) == 1);
  CHECK(unique.count((dir / "tiny-20261130T102000Z-8.json").string()) == 1);
  std::set<std::string> contents;
  for (const auto& p : paths) contents.insert(test::read_file(p));
  CHECK(contents.size() == 8);  // none replaced another
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    CHECK(e.path().filename().string()[0] != '.');
  }
  CHECK(files == 8);
}

TEST_CASE("run guard: --out is checked before the run", "[guard]") {
  const fs::path dir = fresh_dir("out");
  CHECK(out_dir_problem((dir / "new" / "runs").string()).empty());  // created
  CHECK(fs::is_directory(dir / "new" / "runs"));
  std::ofstream(dir / "f") << "x";
  // The one output-folder rule of every command that writes (util/output_folder.h, issue 49): a file is refused.
  CHECK(out_dir_problem((dir / "f").string()) == "--out: " + (dir / "f").string() +
                                                     " (a regular file), expected a folder of your own (not a "
                                                     "file, device, kernel or system folder)");
  CHECK_THAT(out_dir_problem((dir / "f" / "sub").string()), Catch::StartsWith("cannot create the folder"));
  CHECK(std::distance(fs::directory_iterator(dir / "new" / "runs"), fs::directory_iterator()) == 0);  // probe gone
}

TEST_CASE("run guard: an interrupt fails the next step, never a finished run", "[guard]") {
  CHECK_NOTHROW(throw_if_interrupted(3, 20));  // no signal yet
  watch_interrupts();
  raise(SIGINT);  // noted, not fatal
  REQUIRE(interrupt_signal() == SIGINT);
  try {
    throw_if_interrupted(4, 20);
    FAIL("no RunError");
  } catch (const RunError& e) {
    CHECK(std::string(e.what()) == "interrupted by SIGINT at step 5 of 20 (steps 0..4 completed)");
    CHECK(e.step() == 5);
  }
  CHECK_THROWS_WITH(throw_if_interrupted(-1, 20), "interrupted by SIGINT at step 0 of 20 (no step completed)");
  CHECK_NOTHROW(throw_if_interrupted(19, 20));  // every step ran: the run is complete
  watch_interrupts();  // the next run in this process starts without the earlier run's signal
  CHECK(interrupt_signal() == 0);
  CHECK_NOTHROW(throw_if_interrupted(4, 20));
  signal(SIGINT, SIG_DFL);
}

TEST_CASE("run guard: how a rank ended, in words", "[guard]") {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(wait_status_text(status) == "died of signal 9 (SIGKILL)");
  CHECK(signal_name(SIGTERM) == "SIGTERM");
  CHECK(signal_name(64) == "signal 64");
}
