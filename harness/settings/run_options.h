// What one run is given, by concern (docs/architecture.md, "How a run setting travels"): the settings the run
// record lists (RunSettings: the recipe's bench block, then the command line), where this process sits among the
// ranks (RankPlace), the command backend's log settings (CommandSettings), test hooks (RunHooks) and what the
// layout makes of the switches (LayoutEffects). Each part has one writer: the run driver.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "metrics/metrics.h"
#include "recipe/enums.h"
#include "util/json.h"

namespace recipebench {

/// The rows a run trains on (bench.data, --data; docs/data-format.md).
struct RunData {
  DataSource source = DataSource::kSynthetic;
  std::string path;                       ///< pre-tokenized rows when source is kFile
  double supervised_token_ratio = 0.676;  ///< synthetic rows: fraction of tokens with a loss
  int64_t min_row_tokens = 0;             ///< synthetic rows: shortest row (tokens); 0: every row full length
};

/// Megatron-LM's default gradient bucket size (DistributedDataParallelConfig.bucket_size: 40,000,000 elements), the
/// default of bench.grad_reduce_bucket_elements; the torch backend's gradient buckets read it from here
/// (backends/torch/optim/grad_buckets.h).
constexpr int64_t kDefaultGradBucketElements = 40'000'000;

/// The effective settings of one run, as its record lists them (`settings`, schema/run-record.schema.json): the
/// recipe's bench block overlaid by the command line. The bench.* switches (deterministic ... ep_dispatch) are the
/// rows of the switch table (settings/switches.h), which documents, merges, notes, refuses, records and reads them.
struct RunSettings {
  std::string backend = "torch";
  int steps = 20;                 ///< steps to run, numbered 0..steps-1
  StepWindow window{5, 19};       ///< timed window, both ends included
  std::optional<int64_t> layers;  ///< decoder-layer override of a proxy run; nullopt: the model's
  Device device = Device::kCpu;   ///< the CPU (Gloo between ranks) or one CUDA GPU per rank (NCCL)
  uint64_t seed = 1234;           ///< data and initialisation seed
  RunData data;
  bool profile = false;  ///< --profile: synchronise between phases to time forward / backward / optimizer
  /// --emulate-rank R: this process runs rank R of the layout alone, its collectives stood in (docs/emulation.md);
  /// nullopt: a real run.
  std::optional<int> emulate_rank;
  /// --layers K with --emulate-rank: the emulated rank's pipeline stage keeps K of its layers (the first of each
  /// virtual stage's; docs/emulation.md); nullopt: all of them.
  std::optional<int64_t> emulated_stage_layers;
  // The switch table's members (settings/switches.h says what each does and when it has no effect).
  bool deterministic = true;          ///< bench.deterministic
  Kernels kernels = Kernels::kFused;  ///< bench.kernels
  bool overlap_grad_reduce = false;   ///< bench.overlap_grad_reduce
  /// bench.grad_reduce_bucket_elements (elements)
  int64_t grad_reduce_bucket_elements = kDefaultGradBucketElements;
  bool overlap_param_gather = false;                 ///< bench.overlap_param_gather
  bool overlap_p2p_comm = false;                     ///< bench.overlap_p2p_comm
  bool overlap_tp_comm = false;                      ///< bench.overlap_tp_comm
  bool fail_on_sync = false;                         ///< bench.fail_on_sync
  EpDispatch ep_dispatch = EpDispatch::kHostSplits;  ///< bench.ep_dispatch
};

/// Where this process sits among the ranks (launch/launch.h); world == 1 is a one-rank run.
struct RankPlace {
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";  ///< rank 0's host: the c10d TCPStore of the rendezvous
  int master_port = 29500;
  int dist_timeout_seconds = 300;  ///< bound on the rendezvous and on every collective (seconds)
  /// Where `run --nproc`'s launcher notes a rank that died of a signal (RECIPEBENCH_LAUNCH_NOTE, launch/launch.h
  /// launch_note_text); empty: not started by that launcher.
  std::string launch_note_path;
};

/// The command backend's settings (docs/command-backend.md); unused by the others.
struct CommandSettings {
  std::optional<std::string> log_format;  ///< bench.log_format / --log-format: "megatron", ..., "regex:<p>";
                                          ///< nullopt: detected from the log
  std::optional<double> timeout_seconds;  ///< bench.timeout_seconds / --timeout: the command is stopped after it (s)
  std::string log_path;    ///< where the command's output is teed (beside the run record); set by the run driver
  std::string import_log;  ///< `recipebench import`: read this finished log instead of launching the command
};

/// How the failure of RunHooks::fail_rank at fail_step comes (RECIPEBENCH_FAIL_KIND; docs/distributed.md).
enum class FailKind {
  kThrow,    ///< "throw": the rank throws a RunError before the step (the default)
  kKill,     ///< "kill": the rank sends itself SIGKILL mid-step (after its forward and backward passes)
  kNanLoss,  ///< "nan_loss": the rank's own part of the step's loss sum is NaN
};

/// Test hooks of a run, explicit so that a run record shows them (settings.hooks); unset in a normal run.
struct RunHooks {
  std::optional<int> fail_rank, fail_step;  ///< rank fail_rank fails at step fail_step (failure tests), as fail_kind
  FailKind fail_kind = FailKind::kThrow;
  std::string dump_params_path;             ///< rank 0 writes the final parameters here (float64, the one-rank
                                            ///< model's parameters() order); empty: no dump
  std::string dump_init_params_path;        ///< the same for the initial parameters, right after the model is built
  /// With dump_params_path: rank 0 also writes the parameters after each step S to <dump_params_path>.step<S> (the
  /// same format): where two runs part, step by step (docs/determinism.md, "How far float64 runs agree").
  bool dump_step_params = false;
  /// Every rank reads a value of a CUDA tensor on the host (.item(), a synchronising call) inside the step's
  /// no-synchronisation region at this step: the negative control of the bench.fail_on_sync test. Nothing happens
  /// on the CPU (no synchronisation to catch).
  std::optional<int> inject_sync_step;
  /// Every rank (an emulated one too) writes its parameters' names and shapes and each of its groups' calls
  /// (operation, shape, bytes) to <path>.rank<R>.json at the end of the run: the emulation parity test.
  std::string dump_traffic_path;
  bool any() const {
    return fail_rank || fail_step || !dump_params_path.empty() || !dump_init_params_path.empty() || dump_step_params ||
           inject_sync_step ||
           !dump_traffic_path.empty();
  }
};

/// What the layout makes of the switches that can have no effect on it, computed once by the run driver from the
/// rank map (settings/switches.h); the record lists them as settings.<switch>_applies. nullopt: the switch is off.
struct LayoutEffects {
  std::optional<bool> overlap_grad_reduce_applies;   ///< DP > 1 or EDP > 1: a gradient is reduce-scattered
  std::optional<bool> overlap_param_gather_applies;  ///< DP > 1 or EDP > 1: a parameter is all-gathered
};

/// Everything a backend is given for one run besides the recipe and the model.
struct RunOptions {
  RunSettings settings;
  RankPlace place;
  CommandSettings command;
  RunHooks hooks;
  LayoutEffects effects;
  /// The record's `settings` object (schema/run-record.schema.json): the settings, the ranks and the distributed
  /// timeout, the switch table's rows (backend switches only for a backend that runs them: `per_rank_backend`),
  /// the layout effects, the command block (backend "command"), the hooks when any is set.
  Json to_json(bool per_rank_backend) const;
};

/// Fills the distributed timeout and the test hooks from the environment, where set: RECIPEBENCH_DIST_TIMEOUT
/// (seconds), RECIPEBENCH_FAIL_RANK, RECIPEBENCH_FAIL_STEP and RECIPEBENCH_FAIL_KIND (throw, kill, nan_loss),
/// RECIPEBENCH_DUMP_PARAMS (a file path), RECIPEBENCH_LAUNCH_NOTE (set by the launcher, RankPlace),
/// RECIPEBENCH_INJECT_SYNC_STEP (a step), RECIPEBENCH_DUMP_TRAFFIC (a path prefix); see docs/distributed.md. The ranks
/// a launcher starts inherit the variables. Throws std::invalid_argument naming the variable when a number does not
/// parse.
void apply_environment_hooks(RunOptions& options);

/// "throw", "kill" or "nan_loss" (the record's settings.hooks.fail_kind).
const char* fail_kind_name(FailKind kind);
/// The FailKind named `text` (fail_kind_name); throws std::invalid_argument naming RECIPEBENCH_FAIL_KIND otherwise.
FailKind fail_kind_from(const std::string& text);

}  // namespace recipebench
