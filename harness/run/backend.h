// The backend interface (docs/backends.md): a backend takes a validated recipe and run options and
// produces per-step samples. Backends register by name; the CLI picks one with --backend or bench.backend.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "metrics/metrics.h"
#include "recipe/enums.h"
#include "recipe/recipe.h"
#include "run/capabilities.h"
#include "util/json.h"

namespace recipebench {

/// Test hooks of a run, explicit so that a run record shows them (settings.hooks); unset in a normal run.
struct RunHooks {
  std::optional<int> fail_rank, fail_step;  ///< rank fail_rank throws a RunError at step fail_step (failure tests)
  std::string dump_params_path;             ///< rank 0 writes the final parameters here (float32, the one-rank
                                            ///< model's parameters() order); empty: no dump
  std::string dump_init_params_path;        ///< the same for the initial parameters, right after the model is built
  /// Every rank reads a value of a CUDA tensor on the host (.item(), a synchronising call) inside the step's
  /// no-synchronisation region at this step: the negative control of the bench.fail_on_sync test. Nothing happens
  /// on the CPU (no synchronisation to catch).
  std::optional<int> inject_sync_step;
  bool any() const {
    return fail_rank || fail_step || !dump_params_path.empty() || !dump_init_params_path.empty() || inject_sync_step;
  }
};

/// Effective settings of one run (recipe's bench block, overridden by the command line).
struct RunOptions {
  std::string backend = "torch";
  int steps = 20;                 ///< steps to run, numbered 0..steps-1
  StepWindow window{5, 19};       ///< timed window, both ends included
  std::optional<int64_t> layers;  ///< decoder-layer override for proxy runs
  Device device = Device::kCpu;   ///< the CPU (Gloo between ranks) or one CUDA GPU per rank (NCCL)
  uint64_t seed = 1234;           ///< data and initialisation seed
  DataSource data_source = DataSource::kSynthetic;
  std::string data_path;                  ///< pre-tokenized rows when data_source is kFile
  double supervised_token_ratio = 0.676;  ///< synthetic data: fraction of tokens with a loss
  int64_t min_row_tokens = 0;             ///< synthetic data: shortest row (tokens); 0: every row full length
  bool profile = false;                   ///< synchronise between phases to time forward / backward / optimizer
  /// bench.deterministic: the same bits for the same seed on the same device and build (the torch backend turns on
  /// torch's deterministic algorithms and cuBLAS's reproducible workspace); false allows faster non-deterministic
  /// kernels. A backend that cannot honour true refuses the run (RunError) rather than ignoring it.
  bool deterministic = true;
  /// bench.kernels: kFused runs the backend's fused CUDA kernels where they apply (the torch backend: gated delta
  /// rule, conv1d + SiLU, gated RMSNorm, cross-entropy; BF16 on CUDA), kOps libtorch operations everywhere (the
  /// reference path the kernels are tested against).
  Kernels kernels = Kernels::kFused;
  /// bench.overlap_grad_reduce: the distributed optimizer reduce-scatters its gradients in buckets of
  /// grad_reduce_bucket_elements elements, each launched during the last microbatch's backward pass as soon as its
  /// gradients are complete (docs/distributed.md, "Overlap"); false: one reduce-scatter after the backward passes.
  bool overlap_grad_reduce = false;
  int64_t grad_reduce_bucket_elements = 40'000'000;  ///< elements (Megatron-LM's default bucket size)
  /// With overlap_grad_reduce: whether the layout has anything to reduce-scatter (DP > 1 or EDP > 1), set by the
  /// run driver; nullopt without the switch.
  std::optional<bool> overlap_grad_reduce_applies;
  /// bench.overlap_param_gather: the distributed optimizer's step ends after the update of this rank's shards; the
  /// all-gathers of the updated parameters run in the next step, launched at its start in the forward passes'
  /// order, each module's forward waiting for its parameters' buckets; the last step's run after it, before the
  /// parameters are read (docs/distributed.md, "Overlap"); false: all-gathered at the end of the step.
  bool overlap_param_gather = false;
  /// With overlap_param_gather: whether the layout has anything to all-gather (DP > 1 or EDP > 1), set by the run
  /// driver; nullopt without the switch.
  std::optional<bool> overlap_param_gather_applies;
  /// bench.overlap_p2p_comm: the pipeline posts each receive ahead, as soon as the one before it on its link was
  /// waited for, so the transfer overlaps the passes in between (docs/distributed.md, "Pipeline parallelism");
  /// no effect with PP 1.
  bool overlap_p2p_comm = false;
  /// bench.overlap_tp_comm: under tensor parallelism (sequence parallel) each column-parallel region's backward
  /// reduce-scatters its input's gradient while it computes its weight gradients, instead of after them, and the
  /// shared expert's forward reduce-scatter runs while the routed experts compute (docs/distributed.md, "Overlap");
  /// no effect with TP 1.
  bool overlap_tp_comm = false;
  /// bench.fail_on_sync: the run fails (RunError naming the operation and the step) on a call that synchronises the
  /// host with a CUDA device between the first forward pass of a step and the optimizer's gradient norm (the torch
  /// backend: libtorch's CUDA synchronisation-debug mode set to error there; docs/distributed.md, "Host
  /// synchronisation"). Nothing to check on the CPU: the run says so.
  bool fail_on_sync = false;
  /// bench.ep_dispatch: the MoE layers' expert-parallel dispatcher (docs/distributed.md, "Expert parallelism"):
  /// kHostSplits reads the all-to-all's split sizes on the host, kFixedCapacity sends fixed blocks of
  /// max_tokens_per_gpu / TP x top-k rows per peer and reads nothing. No effect with EP 1.
  EpDispatch ep_dispatch = EpDispatch::kHostSplits;
  // Where this process sits among the ranks (run/launch.h); world == 1 is a one-rank run.
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";  ///< rank 0's host: the c10d TCPStore of the rendezvous
  int master_port = 29500;
  int dist_timeout_seconds = 300;  ///< bound on the rendezvous and on every collective (seconds)
  RunHooks hooks;
  // The command backend (docs/command-backend.md); unused by the others.
  std::optional<std::string> log_format;  ///< bench.log_format / import --format: "megatron", ..., "regex:<p>";
                                          ///< nullopt: detected from the log
  std::optional<double> timeout_seconds;  ///< bench.timeout_seconds / --timeout: the command is stopped after it (s)
  std::string log_path;    ///< where the command's output is teed (beside the run record); set by the run driver
  std::string import_log;  ///< `recipebench import`: read this finished log instead of launching the command
  Json to_json() const;
};

/// Fills the distributed timeout and the test hooks from the environment, where set: RECIPEBENCH_DIST_TIMEOUT
/// (seconds), RECIPEBENCH_FAIL_RANK and RECIPEBENCH_FAIL_STEP, RECIPEBENCH_DUMP_PARAMS (a file path),
/// RECIPEBENCH_INJECT_SYNC_STEP (a step); see docs/distributed.md. The ranks a launcher starts inherit the variables.
/// Throws std::invalid_argument naming the variable when a number does not parse.
void apply_environment_hooks(RunOptions& options);

/// With --profile: the step's time inside each model component, forward and backward together (seconds, measured
/// between device synchronisations at the component's boundaries; docs/metrics.md, "Profile"). Zeros otherwise.
struct ComponentSeconds {
  double gdn = 0;           ///< gated DeltaNet layers: projections, convolution, gated delta rule, gated norm
  double attention = 0;     ///< gated attention layers: projections, rotary embedding, attention, output gate
  double moe = 0;           ///< sparse MoE blocks: router, dispatch, routed and shared experts, combine
  double lm_head_loss = 0;  ///< the output layer and the cross-entropy (model/chunked_lm_loss.h)
  double sum() const { return gdn + attention + moe + lm_head_loss; }
};

/// A multi-rank step's exposed communication on rank 0: the time its compute waited for each kind of communication
/// (seconds; measured with CUDA events on the compute stream, or host clocks on CPU ranks, without synchronising;
/// docs/distributed.md, "Where a step's time goes"). Absent (measured false) on one rank.
struct CommWaitSeconds {
  bool measured = false;
  double tp = 0;  ///< tensor parallel: sequence-parallel gathers and reduce-scatters, vocab-parallel loss reductions
  double ep = 0;  ///< expert parallel: the MoE dispatcher's all-to-alls
  double dp = 0;  ///< data parallel (DP and EDP): the optimizers' gradient reductions, norm and parameter all-gathers
  double pp = 0;  ///< pipeline: waits for receives (the bubble and the transfers) and for sends
  double sum() const { return tp + ep + dp + pp; }
};

/// What one training step measured. Times in seconds, memory in bytes.
struct StepSample {
  int step = 0;
  double seconds = 0;             ///< wall time between barrier-synchronised step boundaries (rank 0)
  int64_t tokens = 0;             ///< tokens of the step (the rows' lengths, padding excluded)
  int64_t supervised_tokens = 0;  ///< tokens with a loss
  int64_t microbatches = 0;       ///< microbatches this rank trained in the step (dynamic batching)
  double loss = 0;                ///< mean per-token SFT loss over the step's supervised tokens
  double grad_norm = 0;           ///< global L2 norm of the gradients before clipping
  double learning_rate = 0;       ///< learning rate applied at this step
  int64_t peak_memory_bytes = 0;  ///< peak device memory of the step (max over ranks); 0 where not measured
  double data_seconds = 0;        ///< rows generated / read and copied to the device before the step (not timed)
  double overhead_seconds = 0;    ///< loop time outside the step and its data: callbacks, progress, bookkeeping
                                  ///< (measured for the previous step's tail; 0 for step 0)
  double forward_seconds = 0, backward_seconds = 0, optimizer_seconds = 0;  ///< with profile only, else 0
  ComponentSeconds components;                                              ///< with profile only, else 0
  CommWaitSeconds comm_waits;  ///< several ranks: rank 0's waits for communication
  Json to_json() const;
};

/// How building the model went, per rank in rank order (the run record's model_build block; docs/run-record.md).
struct ModelBuild {
  double seconds = 0;                          ///< wall time of rank 0's build (seconds)
  std::vector<int64_t> host_rss_before_bytes;  ///< each rank's resident set size (VmRSS) just before the build
  /// Each rank's peak resident set size while building (VmHWM after the build; the peak is reset just before the
  /// build where Linux allows it, so it is the build's peak, else the process's peak so far).
  std::vector<int64_t> host_peak_rss_bytes;
  Json to_json() const;
};

/// Facts about where the run happened, for the run record's environment block.
struct BackendEnvironment {
  std::string device_name;  ///< e.g. "NVIDIA H200" or "CPU (x86_64, 2 cores)"
  int device_count = 0;     ///< GPUs (or CPU ranks) used
  double device_memory_bytes = 0;
  std::string driver, cuda, nccl, libtorch;
};

/// Thrown by backends when a run cannot proceed (bad data file, too few GPUs, NaN loss...). The message says
/// which step and why; `step` is -1 when the failure is before the first step.
class RunError : public std::runtime_error {
 public:
  RunError(const std::string& what, int step = -1, bool secondary = false)
      : std::runtime_error(what), step_(step), secondary_(secondary) {}
  int step() const { return step_; }
  /// True when this rank stopped because another rank failed first (whose message that rank shows): the CLI
  /// then exits non-zero without repeating a message.
  bool secondary() const { return secondary_; }

 private:
  int step_;
  bool secondary_;
};

/// What a backend adds to the run record besides its steps (empty for the torch backend).
struct BackendReport {
  Json log;                            ///< null, or the record's `log` block (which log, its sha256, the parser)
  std::optional<double> wall_seconds;  ///< replaces the record's wall time (an imported log: its steps' sum)
  std::vector<std::string> log_tail;   ///< a failed run's last log lines (at most 50), for error.log_tail
};

/// One backend. run() executes the recipe's training steps and calls on_step after each step, in order.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  /// What the run will use, before it starts (checks that enough devices are present; throws RunError if not).
  virtual BackendEnvironment environment(const Recipe& recipe, const RunOptions& options) = 0;
  /// Runs options.steps steps of `model` with the recipe's layout and workload. Throws RunError on failure.
  virtual void run(const Recipe& recipe, const ModelConfig& model, const RunOptions& options,
                   const std::function<void(const StepSample&)>& on_step) = 0;
  /// Read after run() returned or threw: what the record carries besides the steps.
  virtual BackendReport report() const { return {}; }
  /// Set by the run driver before run(); a backend that builds a model calls it once on every rank, after the
  /// build and before step 0, with every rank's figures.
  std::function<void(const ModelBuild&)> on_model_built;
};

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

/// Registers a backend under `name` with what it runs (replaces an earlier one of the same name). An empty
/// `factory` declares the backend's capabilities without building it (a build without that backend still
/// checks a dry run against them).
void register_backend(const std::string& name, BackendCapabilities capabilities, BackendFactory factory);
/// A new instance of the backend called `name`, or nullptr when none is built under it.
std::unique_ptr<Backend> make_backend(const std::string& name);
/// What the backend called `name` runs, or nullptr when no backend is registered (or declared) under it.
const BackendCapabilities* backend_capabilities(const std::string& name);
/// Names of the backends built into this binary (registered with a factory), sorted.
std::vector<std::string> backend_names();

}  // namespace recipebench
