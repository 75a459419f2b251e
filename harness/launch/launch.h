// Multi-rank runs without libtorch: where this process sits among the ranks (from the launcher's, torchrun-style
// or Slurm variables) and the local launcher behind `recipebench run --nproc N` (fork + exec of this binary).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace recipebench {

/// This process's place in the run. world == 1: a one-rank run (no process group).
struct RankEnv {
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";  ///< host of rank 0, where the c10d TCPStore listens
  int master_port = 29500;
  std::string source = "single";  ///< "single", "torchrun" (RANK/WORLD_SIZE...) or "slurm"
};

/// Reads the rank variables through `get` (returns nullptr when a variable is unset):
///   torchrun style (also what --nproc sets): RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT;
///   else Slurm (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; MASTER_ADDR, else the first host of
///   SLURM_STEP_NODELIST, else of SLURM_NODELIST; MASTER_PORT, else 29500 + SLURM_JOB_ID % 1000, else 29500;
///   else one rank. Throws std::invalid_argument naming the variable when one is malformed or out of range.
RankEnv rank_env_from(const std::function<const char*(const char*)>& get);
/// rank_env_from(std::getenv).
RankEnv rank_env();

/// The first host of a Slurm node list: "gpu[003-005,9],cpu1" -> "gpu003"; "n1,n2" -> "n1".
std::string slurm_first_host(const std::string& nodelist);

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0). Throws std::runtime_error
/// when no socket can be bound.
int free_loopback_port();

/// True in a process started by launch_local() (RECIPEBENCH_LAUNCHED is set).
bool launched_by_recipebench();

/// What this host offers ranks started by launch_local.
struct HostCapacity {
  long cores = 1;                ///< online CPU cores (sysconf _SC_NPROCESSORS_ONLN)
  uint64_t available_bytes = 0;  ///< memory available to new processes (MemAvailable of /proc/meminfo), bytes
};

/// This host's capacity (available_bytes 0 when /proc/meminfo cannot be read: memory is then not checked).
HostCapacity host_capacity();

/// Most ranks launch_local starts per core: more would spend the run switching between them.
constexpr int kMaxRanksPerCore = 4;
/// The least memory one rank needs: a recipebench process with libtorch's CPU runtime and Gloo buffers, before
/// any model (256 MiB).
constexpr uint64_t kMinRankBytes = uint64_t{256} << 20;

/// "" when `nproc` ranks fit `host`, else why not with the arithmetic, e.g. "1000 ranks need at least 1000 x 256
/// MiB = 250.0 GiB of memory; this host has 21.3 GiB available" or "1000 ranks on 2 cores: at most 4 ranks per
/// core (8 ranks) fit this host". `oversubscribe` (run --oversubscribe): the cores are not checked, the memory is.
std::string ranks_fit_problem(int nproc, const HostCapacity& host, bool oversubscribe = false);

/// The launch note (docs/distributed.md, "Failures"): when a rank dies of a signal (it reported nothing), the
/// launcher writes this line, e.g. "rank 37 died of signal 9 (SIGKILL)", to the file named by the ranks'
/// RECIPEBENCH_LAUNCH_NOTE, so that rank 0's failed record can say which rank it was.
std::string launch_note_text(int rank, int status);

/// "" when launch_local may start `nproc` ranks on `host`, else its refusal: "--nproc N: " + ranks_fit_problem's
/// reason, and where only the cores are short (not the memory), that --oversubscribe starts them anyway.
std::string nproc_refusal(int nproc, const HostCapacity& host, bool oversubscribe);

/// Starts `nproc` copies of this binary (/proc/self/exe with this process's arguments, /proc/self/cmdline) as
/// ranks 0..nproc-1 on this host: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, a free
/// MASTER_PORT, RECIPEBENCH_LAUNCHED=1, and OMP_NUM_THREADS = cores / nproc when unset. Waits for them all.
/// SIGINT and SIGTERM received here are forwarded to the ranks. When a rank exits non-zero (or dies of a
/// signal), the others get `grace_seconds` to stop on their own (their collectives fail), then SIGTERM, then
/// SIGKILL 5 s later; each rank also dies with this process (PR_SET_PDEATHSIG), so none is orphaned.
/// Throws std::invalid_argument before forking when the ranks do not fit this host (ranks_fit_problem with
/// `oversubscribe`; a refusal for the cores alone names --oversubscribe, which starts them anyway).
/// Returns 0 when every rank exited 0 (also after a forwarded signal that came too late to stop the run), 128 + the
/// signal when a forwarded SIGINT/SIGTERM stopped it, else the exit status of the first rank that failed (1 for a
/// signal).
/// `on_lead_died`, when given, is called once with rank 0's wait status when rank 0 is killed by a signal (it then
/// writes no run record; the caller writes the `failed` one).
int launch_local(int nproc, double grace_seconds = 10.0, const std::function<void(int status)>& on_lead_died = {},
                 bool oversubscribe = false);

}  // namespace recipebench
