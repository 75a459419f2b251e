// Where a process sits among the ranks: torchrun-style and Slurm variables (harness/launch/launch.h).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "launch/launch.h"

using namespace recipebench;

namespace {
RankEnv from(const std::map<std::string, std::string>& vars) {
  return rank_env_from([&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}
}  // namespace

TEST_CASE("rank environment: none set is one rank", "[launch]") {
  const RankEnv e = from({});
  CHECK(e.world == 1);
  CHECK(e.rank == 0);
  CHECK(e.source == "single");
}

TEST_CASE("rank environment: torchrun-style variables", "[launch]") {
  const RankEnv e = from({{"RANK", "3"},
                          {"WORLD_SIZE", "8"},
                          {"LOCAL_RANK", "1"},
                          {"MASTER_ADDR", "node7"},
                          {"MASTER_PORT", "29600"},
                          {"SLURM_PROCID", "5"},
                          {"SLURM_NTASKS", "16"}});
  CHECK(e.source == "torchrun");  // torchrun's variables win over Slurm's
  CHECK(e.rank == 3);
  CHECK(e.world == 8);
  CHECK(e.local_rank == 1);
  CHECK(e.master_addr == "node7");
  CHECK(e.master_port == 29600);
}

TEST_CASE("rank environment: Slurm variables and the head node", "[launch]") {
  const RankEnv e = from({{"SLURM_PROCID", "5"},
                          {"SLURM_NTASKS", "16"},
                          {"SLURM_LOCALID", "1"},
                          {"SLURM_STEP_NODELIST", "gpu[007-008]"},
                          {"SLURM_NODELIST", "other1"},
                          {"SLURM_JOB_ID", "123456"}});
  CHECK(e.source == "slurm");
  CHECK(e.rank == 5);
  CHECK(e.world == 16);
  CHECK(e.local_rank == 1);
  CHECK(e.master_addr == "gpu007");
  CHECK(e.master_port == 29500 + 456);
  const RankEnv f =
      from({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "a1,a2"}, {"MASTER_PORT", "4000"}});
  CHECK(f.master_addr == "a1");
  CHECK(f.master_port == 4000);
}

TEST_CASE("rank environment: Slurm node lists", "[launch]") {
  CHECK(slurm_first_host("node1") == "node1");
  CHECK(slurm_first_host("node1,node2") == "node1");
  CHECK(slurm_first_host("gpu[003-005,9],cpu1") == "gpu003");
  CHECK(slurm_first_host("gpu[12,14]") == "gpu12");
  CHECK(slurm_first_host("rack[1-2]-n[01-04]") == "rack1-n01");
}

TEST_CASE("rank environment: malformed values are named", "[launch]") {
  CHECK_THROWS_WITH(from({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), Catch::Contains("RANK=2"));
  CHECK_THROWS_WITH(from({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), Catch::Contains("RANK=x"));
  CHECK_THROWS_WITH(from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}),
                    Catch::Contains("MASTER_PORT=70000"));
}

TEST_CASE("launcher: --nproc ranks that cannot fit the host are refused with the arithmetic", "[launch]") {
  HostCapacity host;
  host.cores = 2;
  host.available_bytes = uint64_t{21} << 30;  // 21 GiB
  CHECK(ranks_fit_problem(2, host).empty());
  CHECK(ranks_fit_problem(8, host).empty());  // 4 ranks per core
  CHECK(ranks_fit_problem(1000, host) == "1000 ranks on 2 cores: at most 4 ranks per core (8 ranks) fit this host");
  host.cores = 1024;
  CHECK(ranks_fit_problem(1000, host) ==
        "1000 ranks need at least 1000 x 256 MiB = 250.0 GiB of memory; this host has 21.0 GiB available");
  CHECK(ranks_fit_problem(84, host).empty());  // 84 x 256 MiB = 21 GiB
  CHECK(!ranks_fit_problem(85, host).empty());
  host.available_bytes = 0;  // unknown: memory not checked
  CHECK(ranks_fit_problem(1000, host).empty());
  const HostCapacity here = host_capacity();
  CHECK(here.cores >= 1);
  CHECK(here.available_bytes > 0);
}

TEST_CASE("launcher: --oversubscribe lifts the 4 ranks per core guard only when asked, never the memory one",
          "[launch]") {
  HostCapacity host;
  host.cores = 2;
  host.available_bytes = uint64_t{21} << 30;  // 21 GiB: 84 ranks of 256 MiB
  CHECK(nproc_refusal(8, host, false).empty());
  CHECK(nproc_refusal(16, host, false) ==
        "--nproc 16: 16 ranks on 2 cores: at most 4 ranks per core (8 ranks) fit this host; --oversubscribe starts "
        "them anyway (each rank gets a share of a core: for tests, not timings)");
  CHECK(nproc_refusal(16, host, true).empty());
  CHECK(nproc_refusal(64, host, true).empty());  // 64 x 256 MiB = 16 GiB
  CHECK(ranks_fit_problem(64, host, true).empty());
  // Memory short: refused with or without the option, and the option is not offered.
  CHECK(nproc_refusal(85, host, true) ==
        "--nproc 85: 85 ranks need at least 85 x 256 MiB = 21.2 GiB of memory; this host has 21.0 GiB available");
  CHECK(nproc_refusal(85, host, false).find("--oversubscribe") == std::string::npos);
}
