// The backend interface (docs/backends.md): a backend takes a validated recipe and run options and
// produces per-step samples. Backends register by name; the CLI picks one with --backend or bench.backend.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/capabilities.h"
#include "backend/profile.h"
#include "catalog/models.h"
#include "metrics/metrics.h"
#include "recipe/enums.h"
#include "recipe/recipe.h"
#include "settings/resolved_run.h"
#include "settings/run_options.h"
#include "util/json.h"

namespace recipebench {

/// With --profile: the step's time inside each model component, forward and backward together (seconds, measured
/// between device synchronisations at the component's boundaries; docs/metrics.md, "Profile"). Zeros otherwise.
struct ComponentSeconds {
  double gdn = 0;           ///< gated DeltaNet layers: projections, convolution, gated delta rule, gated norm
  double attention = 0;     ///< gated attention layers: projections, rotary embedding, attention, output gate
  double moe = 0;           ///< sparse MoE blocks: router, dispatch, routed and shared experts, combine
  double lm_head_loss = 0;  ///< the output layer and the cross-entropy (model/chunked_lm_loss.h)
  double sum() const { return gdn + attention + moe + lm_head_loss; }
};

/// The step's components from its passes (backend/profile.h), over the phases: moe is the block's parts and its
/// rest together; the embedding and `other` are not among them.
ComponentSeconds component_totals(const std::vector<PassSample>& passes);

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

/// What one operation of a process group moved in a step: its calls and bytes (each call's bytes are those of the
/// tensor it names, nccl-tests' "size": all_reduce the buffer, reduce_scatter the full input, all_gather the full
/// output, all_to_all the rows sent, send / recv the tensor; docs/emulation.md, "Traffic").
struct OpTraffic {
  std::string op;  ///< "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send", "recv", "barrier"
  int64_t calls = 0;
  int64_t bytes = 0;
  int64_t received_bytes = 0;  ///< all_to_all: the rows received (bytes); 0 for the others
};

/// One process group of a rank and what its operations moved in a step.
struct GroupTraffic {
  /// The layout's groups it serves (one group can serve several): "run" (the run's group: loss, barriers and
  /// bookkeeping), "tp", "dp", "ep", "edp", "pp", "grad_dp", "grad_edp" (docs/distributed.md).
  std::vector<std::string> kinds;
  std::vector<int> members;    ///< its run ranks, in its rank order
  std::vector<OpTraffic> ops;  ///< the operations it ran in the step (none: absent)
  Json to_json() const;
};

/// What one training step measured. Times in seconds, memory in bytes.
struct StepSample {
  int step = 0;
  double seconds = 0;             ///< wall time between barrier-synchronised step boundaries (rank 0)
  int64_t tokens = 0;             ///< tokens of the step (the rows' lengths, padding excluded)
  int64_t supervised_tokens = 0;  ///< tokens with a loss
  int64_t microbatches = 0;       ///< microbatches this rank trained in the step (dynamic batching)
  double loss = 0;                ///< mean per-token SFT loss over the step's supervised tokens; NaN (null in the
                                  ///< record) on an emulated rank that holds no last pipeline stage (no loss there)
  double grad_norm = 0;           ///< global L2 norm of the gradients before clipping
  double learning_rate = 0;       ///< learning rate applied at this step
  int64_t peak_memory_bytes = 0;  ///< peak device memory of the step (max over ranks); 0 where not measured
  double data_seconds = 0;        ///< rows generated / read and copied to the device before the step (not timed)
  double overhead_seconds = 0;    ///< loop time outside the step and its data: callbacks, progress, bookkeeping
                                  ///< (measured for the previous step's tail; 0 for step 0)
  double forward_seconds = 0, backward_seconds = 0, optimizer_seconds = 0;  ///< with profile only, else 0
  ComponentSeconds components;                                              ///< with profile only, else 0
  std::vector<PassSample> passes;     ///< with profile only: each pass of the rank's schedule, in the order run
  CommWaitSeconds comm_waits;         ///< several ranks: rank 0's waits for communication (an emulated rank: its own)
  std::vector<GroupTraffic> traffic;  ///< an emulated rank: what each of its groups moved in the step; else empty
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
  std::vector<std::string> notes;      ///< what the user is told once at the end (e.g. a log that prints no loss)
};

/// One backend. run() executes the recipe's training steps and calls on_step after each step, in order.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  /// What the run will use, before it starts (checks that enough devices are present; throws RunError if not).
  /// `run` is the resolved run (settings/resolved_run.h): its recipe, merged settings, the model that runs and its
  /// rank map, worked out once by the run driver; a backend does not derive them again. What a backend cannot run
  /// at all is its capability table's (backend/capabilities.h), checked by the driver before this.
  virtual BackendEnvironment environment(const ResolvedRun& run) = 0;
  /// Runs run.settings().steps steps of run.model.model with the recipe's layout and workload, on this process's
  /// place (run.options.place). Throws RunError on failure.
  virtual void run(const ResolvedRun& run, const std::function<void(const StepSample&)>& on_step) = 0;
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
