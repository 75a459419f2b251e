// The typed recipe: what the checks, backends and reports read. Built only from schema-valid documents.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "metrics/metrics.h"
#include "recipe/enums.h"
#include "util/json.h"

namespace recipebench {

struct RecipeGpu {
  std::string type;  ///< "B200", "H200", "H100"; a family named with its memory is the catalog's name (resolve_gpu)
  std::string type_written;  ///< gpu.type as written when it was resolved by memory_gb ("A100"); empty otherwise
  double memory_gb = 0;  ///< per GPU, GB
  int count = 0;         ///< GPUs of the run
  int per_node = 0;
  std::string instance;                    ///< e.g. "AWS p6-b200.48xlarge" (may be empty)
  std::optional<double> usd_per_gpu_hour;  ///< the recipe's own price, $/GPU-hour
};

struct RecipeWorkload {
  int64_t row_tokens = 0;    ///< tokens per row
  int64_t global_batch = 0;  ///< rows per optimizer step
  std::string rows;          ///< what the rows are ("SFT conversations")
  std::string precision;     ///< "bf16", ...
  std::string dataset_name;
};

struct RecipeRecompute {
  std::string granularity = "none";  ///< full, selective, none
  std::string method;                ///< uniform, block
  int num_layers = 0;
  /// layout.recompute.modules with granularity selective (absent: core_attn alone, Megatron-Core's default).
  std::vector<RecomputeModule> modules{RecomputeModule::kCoreAttn};
  /// True when selective recompute re-runs module `m`.
  bool recomputes(RecomputeModule m) const {
    return granularity == "selective" && std::find(modules.begin(), modules.end(), m) != modules.end();
  }
};

/// Parallel layout. Degrees are >= 1; etp defaults to tp (docs/layout-arithmetic.md).
struct RecipeLayout {
  std::string label, summary, highlights;
  int tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, dp = 1;
  std::optional<int> etp;
  bool sequence_parallel = false;
  std::optional<int> first_stage_layers, last_stage_layers;
  int64_t max_tokens_per_gpu = 0;
  std::optional<int> rows_per_microbatch;
  RecipeRecompute recompute;
  std::string offload;  ///< what is offloaded to host memory; empty = no offload
  Dispatcher dispatcher = Dispatcher::kAlltoall;  ///< alltoall when not stated (a dense model has none)
  bool dispatcher_stated = false;                 ///< layout.dispatcher given (required for a model with experts)

  int effective_etp() const { return etp ? *etp : tp; }
  /// world = TP x CP x DP x PP
  int64_t world() const { return static_cast<int64_t>(tp) * cp * dp * pp; }
};

/// The measured result a recipe reports (absent for proposed recipes).
struct RecipeResult {
  double tokens_per_s_per_gpu = 0;
  std::optional<double> usd_per_million_tokens;
  std::optional<double> step_time_cv_percent;
  std::optional<double> mfu;  ///< fraction (0.0537 = 5.37%)
  MfuConvention mfu_convention = MfuConvention::k6N;  ///< what result.mfu counts (6N when not stated)
  std::optional<int64_t> active_params;
  std::string active_params_source;  ///< result.active_params.source, empty when not given
  std::string measured;              ///< YYYY-MM-DD
  int steps_per_run = 20;
  StepWindow window;
  int64_t window_tokens = 0;  ///< as stated, else derived: window steps x global_batch x row_tokens
  bool window_tokens_stated = false;
  std::optional<double> gpu_hours;
};

/// Optimizer and learning-rate schedule; defaults are the seed recipes' Megatron-LM arguments.
struct RecipeOptimizer {
  double lr = 1e-5, min_lr = 1e-6;
  LrDecay lr_decay_style = LrDecay::kCosine;  ///< decay after warm-up (optim/lr_schedule.h gives the formulas)
  double lr_warmup_fraction = 0.1;
  double weight_decay = 0.1;
  double adam_beta1 = 0.9, adam_beta2 = 0.98, adam_eps = 1e-8;
  double clip_grad = 1.0;  ///< 0 disables clipping
  /// The precision-aware state (docs/optimizer.md): how BF16 parameters' FP32 masters are held and the moments'
  /// dtypes. The defaults are the plain mixed-precision optimizer (16 bytes of state per BF16 parameter besides the
  /// parameter, with the FP32 gradient).
  MasterWeights master_weights = MasterWeights::kFp32;
  StateDtype exp_avg_dtype = StateDtype::kFp32, exp_avg_sq_dtype = StateDtype::kFp32;
  /// optimizer.grad_reduce_dtype: the dtype of the gradient buffers that are accumulated and reduced over DP
  /// (Megatron-LM's --accumulate-allreduce-grads-in-fp32, Megatron-Bridge's ddp.grad_reduce_in_fp32); absent: FP32.
  StateDtype grad_reduce_dtype = StateDtype::kFp32;
};

/// bench.data: where a benchmark run's rows come from (unset fields take RunOptions' defaults).
struct RecipeBenchData {
  std::optional<DataSource> source;
  std::optional<std::string> path;               ///< rows file when source is file
  std::optional<double> supervised_token_ratio;  ///< synthetic rows: fraction of tokens with a loss
  std::optional<int64_t> min_row_tokens;         ///< synthetic rows: shortest row, tokens
};

/// The bench block: how `recipebench run` runs the recipe (each field overridable on the command line).
struct RecipeBench {
  std::optional<std::string> backend;
  std::optional<int> steps;
  std::optional<StepWindow> window;
  std::optional<int64_t> layers;  ///< decoder layers of a proxy run
  std::optional<Device> device;
  std::optional<uint64_t> seed;
  std::optional<bool> deterministic;                   ///< bench.deterministic (absent: true)
  std::optional<Kernels> kernels;                      ///< bench.kernels (absent: fused)
  std::optional<bool> overlap_grad_reduce;             ///< bench.overlap_grad_reduce (absent: false)
  std::optional<int64_t> grad_reduce_bucket_elements;  ///< bench.grad_reduce_bucket_elements (absent: 40,000,000)
  std::optional<bool> fail_on_sync;                    ///< bench.fail_on_sync (absent: false)
  std::optional<bool> overlap_param_gather;            ///< bench.overlap_param_gather (absent: false)
  std::optional<bool> overlap_p2p_comm;                ///< bench.overlap_p2p_comm (absent: false)
  std::optional<bool> overlap_tp_comm;                 ///< bench.overlap_tp_comm (absent: false)
  std::optional<EpDispatch> ep_dispatch;               ///< bench.ep_dispatch (absent: host_splits)
  RecipeBenchData data;
  std::optional<std::string> command;     ///< bench.command: the command backend's command (absent: `run`)
  std::optional<std::string> log_format;  ///< bench.log_format: megatron, torchtitan, hf or regex:<pattern>
  std::optional<double> timeout_seconds;  ///< bench.timeout_seconds: the command backend's limit, s
};

/// A value of a closed set that names none of its members, found while typing a document (the schema lists the
/// same sets, so only a schema that drifted from recipe/enums.h lets one through). `pointer` is the field's JSON
/// pointer; validate turns it into a located diagnostic.
class FieldError : public std::runtime_error {
 public:
  FieldError(std::string at, std::string value, std::string allowed)
      : std::runtime_error(at + ": " + value + ", expected " + allowed),
        pointer(std::move(at)),
        found(std::move(value)),
        expected(std::move(allowed)) {}
  std::string pointer, found, expected;
};

/// The recipe's model_params block (docs/recipe-format.md; docs/metrics.md, "Models outside the registry"): a
/// Hugging Face config.json the model's counts are computed from, or its counts stated with their source.
struct RecipeModelParams {
  std::optional<std::string> config;  ///< as written: a path relative to the recipe's folder
  std::optional<int64_t> active;      ///< N_active per token (for 6N)
  std::optional<int64_t> total;       ///< every parameter
  std::string source;                 ///< where the stated counts come from; empty when not given
};

/// A recipe file, typed. `doc` keeps the full document for the report's detail sections.
struct Recipe {
  std::string file;
  int schema_version = 1;
  std::string model;
  std::optional<RecipeModelParams> model_params;
  RecipeGpu gpu;
  std::string author, author_url;
  std::string status;
  RecipeWorkload workload;
  RecipeLayout layout;
  std::optional<RecipeResult> result;
  RecipeOptimizer optimizer;
  RecipeBench bench;
  Json doc;
};

/// The device a recipe trains on when no --device is given: bench.device, else the CPU for gpu.type CPU and CUDA for a
/// GPU (B200, H200, H100). `run`, `run --dry-run` and validate's memory plan all follow it.
Device recipe_device(const Recipe& recipe);

/// Builds the typed recipe from a document that passed the recipe schema. Fields the schema makes
/// optional take their documented defaults. Throws FieldError for a closed-set value outside its enum, and
/// nlohmann::json::exception only if the document was not schema-valid (a programming error).
Recipe recipe_from_json(const Json& doc, const std::string& file);

}  // namespace recipebench
