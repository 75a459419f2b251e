// util/proc_stat.h: /proc read without exceptions. CI once failed when a process exited between the listing of
// /proc and the read of its stat file (std::ifstream threw "basic_filebuf::underflow error reading the file: No
// such process" out of process_group_alive); the race test below makes that happen many times.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "launch/child_process.h"
#include "util/proc_stat.h"

using namespace recipebench;

TEST_CASE("proc stat: this process's parent and group, a reaped child is none", "[proc]") {
  const auto self = read_proc_stat(getpid());
  REQUIRE(self);
  CHECK(self->pid == getpid());
  CHECK(self->ppid == getppid());
  CHECK(self->pgrp == getpgrp());
  CHECK_FALSE(self->gone());
  const auto pids = list_pids();
  CHECK(std::find(pids.begin(), pids.end(), getpid()) != pids.end());

  const pid_t child = fork();
  if (child == 0) _exit(0);
  REQUIRE(child > 0);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK_FALSE(read_proc_stat(child));
  CHECK_FALSE(read_proc_file("/proc/" + std::to_string(child) + "/stat"));
}

TEST_CASE("proc stat: scanning /proc while processes come and go never throws", "[proc]") {
  std::atomic<bool> stop{false};
  std::atomic<int> spawned{0};
  std::thread churn([&] {
    while (!stop) {
      const pid_t child = fork();
      if (child == 0) {
        usleep(200);  // alive long enough to be listed, gone before many a read
        _exit(0);
      }
      if (child > 0) waitpid(child, nullptr, 0);
      ++spawned;
    }
  });
  int scans = 0;
  bool found_self_group = true;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (std::chrono::steady_clock::now() < until) {
    REQUIRE_NOTHROW(found_self_group = found_self_group && process_group_alive(getpgrp()));
    ++scans;
  }
  stop = true;
  churn.join();
  CHECK(found_self_group);  // this process is of its own group, alive, in every scan
  CHECK_FALSE(process_group_alive(0x7ffffff0));  // no such group
  CHECK(spawned > 10);
  CHECK(scans > 10);
}
