#include "plan/memory_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "catalog/hardware.h"
#include "plan/activation_memory.h"
#include "plan/optimizer_traffic.h"

namespace recipebench {

namespace {

/// Parameters of one pipeline rank, split as the backend's optimizers split them.
struct StageParams {
  double dense_tp = 0;   ///< TP-sharded dense parameters (this rank's shard)
  double dense_rep = 0;  ///< replicated over TP: norms, router, shared_expert_gate
  double experts = 0;    ///< routed experts of this rank's EP share
  double largest = 0;    ///< the largest single tensor (its FP32 copy is made when gradients are accumulated)
  double dense() const { return dense_tp + dense_rep; }
};

/// A config.json family's layer `i` (ModelFamily::kTransformer) from its exact counts (count_params, as `models
/// --config` gives them): the attention with its norms / TP, the two layer norms replicated; a dense layer's MLP /
/// TP; an MoE layer's routed experts / EP, its shared expert / TP and the rest of the block (router, its biases)
/// replicated.
void add_transformer_layer_params(const ModelConfig& m, const ParamCounts& c, int64_t i, int tp, int ep,
                                  StageParams& s) {
  const double h = static_cast<double>(m.hidden_size);
  s.dense_tp += static_cast<double>(c.attention_layer_total) / tp;
  s.dense_rep += 2 * h;
  if (i < m.dense_layers || m.num_experts == 0) {
    s.dense_tp += static_cast<double>(c.dense_mlp_layer) / tp;
    s.largest = std::max(s.largest, h * m.intermediate_size);
    return;
  }
  const double expert = 3 * h * m.expert_ffn + (m.expert_bias ? 2.0 * m.expert_ffn + h : 0.0);
  const double experts = expert * m.num_experts, shared = 3 * h * m.shared_expert_ffn;
  s.experts += experts / ep;
  s.dense_tp += shared / tp;
  s.dense_rep += static_cast<double>(c.moe_layer_total) - experts - shared;
  s.largest = std::max(s.largest, static_cast<double>(m.num_experts) / ep * 2 * m.expert_ffn * h);
}

void add_layer_params(const ModelConfig& m, int64_t i, int tp, int ep, StageParams& s) {
  const double h = static_cast<double>(m.hidden_size);
  if (m.is_full_attention(i)) {
    const double q = static_cast<double>(m.num_attention_heads * m.head_dim),
                 kv = static_cast<double>(m.num_kv_heads * m.head_dim);
    s.dense_tp += (h * 2 * q + 2 * h * kv + q * h) / tp;
    s.dense_rep += 2.0 * m.head_dim;
  } else {
    const double kd = static_cast<double>(m.linear_key_dim()), vd = static_cast<double>(m.linear_value_dim());
    const double hv = static_cast<double>(m.linear_num_value_heads), conv = 2 * kd + vd;
    s.dense_tp += (h * conv + h * vd + 2 * h * hv + conv * m.linear_conv_kernel + vd * h + 2 * hv) / tp;
    s.dense_rep += static_cast<double>(m.linear_value_head_dim);
  }
  s.dense_tp += 3 * h * m.shared_expert_ffn / tp;
  s.dense_rep += h * m.num_experts + h + 2 * h;  // router, shared_expert_gate, the two RMSNorms
  const double local_experts = static_cast<double>(m.num_experts) / ep;
  s.experts += local_experts * 3 * h * m.expert_ffn;
  s.largest = std::max(s.largest, local_experts * 2 * m.expert_ffn * h);  // gate_up_proj
}

StageParams stage_params(const ModelConfig& m, const RankPlacement& q, const RankMap& map) {
  StageParams s;
  const bool transformer = m.family == ModelFamily::kTransformer;
  const ParamCounts counts = transformer ? count_params(m) : ParamCounts{};
  for (const auto& lr : q.layers)
    for (int64_t i = lr.first; i < lr.first + lr.count; ++i)
      transformer ? add_transformer_layer_params(m, counts, i, map.tp, map.ep, s)
                  : add_layer_params(m, i, map.tp, map.ep, s);
  // ETP > 1 (Megatron-LM's expert tensor parallelism): each expert's weights split over ETP ranks as well as EP.
  s.experts /= std::max(1, map.etp);
  const double table = static_cast<double>(m.vocab_size) * m.hidden_size / map.tp;
  if (q.pp == 0) s.dense_tp += table, s.largest = std::max(s.largest, table);
  if (q.pp == map.pp - 1) s.dense_tp += table, s.dense_rep += m.hidden_size, s.largest = std::max(s.largest, table);
  return s;
}

/// Bytes per parameter of the optimizer state as optimizer.master_weights / exp_avg_dtype / exp_avg_sq_dtype hold
/// it for parameters of `p` bytes (docs/memory-plan.md, "States"; optim/master_weights.h in the backend): the FP32
/// master (none for FP32 parameters: they are their own; 2 for the BF16 + remainder form), each moment (4 or 2), and
/// the FP32 working copies the step makes of what is not stored in FP32 (master, moments: transient, during the
/// step only).
/// `work`: the bytes of the dtype the optimizer computes and keeps its gradients in, 4 (FP32), 8 for FP64 parameters
/// (workload.precision fp64: float64 end to end, docs/determinism.md "Precision").
/// `stack`: the analytical plan of the recipe's own stack (Megatron-Core's distributed optimizer,
/// add_megatron_distributed); `grad`: the bytes of its gradient buffer (optimizer.grad_reduce_dtype).
struct StateBytes {
  double master = 0, moments = 0, step_copies = 0, work = kF32;
  bool stack = false;
  double grad = kF32;
};

/// Gradients and optimizer state of Megatron-Core's distributed optimizer over a group of `shards` ranks for `n`
/// parameters (docs/memory-plan.md, "Analytical plan"): one contiguous gradient buffer of all `n` in the
/// optimizer.grad_reduce_dtype (b.grad bytes; the reduce-scatter writes each rank's shard in place, no second
/// buffer: Megatron-Core's distributed/param_and_grad_buffer.py); the FP32 masters and moments of the rank's shard
/// (n / shards); no all-gather buffer and no kept shard (the updated shard is gathered in place into the
/// parameters' own buffer). Returns the step's transient bytes: the FP32 working copies of the state stored in BF16.
double add_megatron_distributed(double n, double shards, const StateBytes& b, RankMemory& r) {
  r.grads += b.grad * n;
  r.optimizer += (b.master + b.moments) * n / shards;  // no master for parameters in the optimizer's own dtype
  return b.step_copies * n / shards;
}

StateBytes state_bytes(const RecipeOptimizer& o, double p) {
  StateBytes b;
  b.work = p == 8 ? 8 : kF32;
  const bool own_master = p == b.work;
  const bool remainder = o.master_weights == MasterWeights::kBf16Remainder && !own_master;
  b.master = own_master ? 0 : remainder ? 2 : kF32;
  b.moments = (o.exp_avg_dtype == StateDtype::kBf16 ? 2 : b.work) + (o.exp_avg_sq_dtype == StateDtype::kBf16 ? 2 : b.work);
  b.step_copies = b.work * ((remainder ? 1 : 0) + (o.exp_avg_dtype == StateDtype::kBf16 ? 1 : 0) +
                            (o.exp_avg_sq_dtype == StateDtype::kBf16 ? 1 : 0));
  return b;
}

/// Gradients and optimizer state of a DistributedAdam (optim/distributed_adam.h) over a group of `shards` ranks
/// for `n` parameters: the flat FP32 gradient buffer (whole) and its reduce-scattered shard; the master weights
/// (state_bytes: an FP32 shard even for FP32 parameters, which the shard does not alias) and Adam moments of the
/// shard; the all-gather buffer in the parameters' dtype (whole); with bench.overlap_param_gather (`kept_shard`)
/// the updated shard in the parameters' dtype, kept for the next step's gathers (a view of the FP32 masters for FP32
/// parameters: nothing more; a group of one rank gathers nothing and keeps nothing). Returns the step's transient
/// bytes: the FP32 working copies of the shard (state_bytes) and, with remainders, the shard's BF16 half read from
/// the all-gather buffer.
double add_distributed(double n, double shards, double p, bool kept_shard, const StateBytes& b, RankMemory& r) {
  if (b.stack) return add_megatron_distributed(n, shards, b, r);
  r.grads += b.work * n * (1 + 1 / shards);
  const double master = p == b.work ? b.work : b.master;
  r.optimizer +=
      (master + b.moments) * n / shards + p * n + (kept_shard && shards > 1 && p != b.work ? p * n / shards : 0);
  return (b.step_copies + (b.master == 2 ? p : 0)) * n / shards;
}

/// Gradients and optimizer state of a MixedPrecisionAdam (optim/adam.h) for `n` parameters: FP32 gradient
/// accumulators, master weights and Adam moments (state_bytes). Returns the step's transient bytes: the FP32
/// working copies of the largest tensor (`largest` parameters) on libtorch's path, none with the fused kernels.
double add_replicated(double n, double largest, const StateBytes& b, bool fused, RankMemory& r) {
  if (b.stack) return add_megatron_distributed(n, 1, b, r);
  r.grads += b.work * n;
  r.optimizer += (b.master + b.moments) * n;
  return fused ? 0 : b.step_copies * largest;
}

/// Gradients and optimizer state of the backend's optimizers (optim/optimizer_builder.h; docs/memory-plan.md,
/// "States"): one rank, everything in a MixedPrecisionAdam; several, the dense parameters (and the experts unless
/// apart) sharded over DP, the experts when apart sharded over EDP when EDP > 1, else replicated.
/// `kept_shard`: bench.overlap_param_gather (add_distributed); `fused`: the MixedPrecisionAdams run the fused CUDA
/// kernels. Returns the largest transient of the optimizer step (the optimizers step one after another).
double add_states(const StageParams& s, const RankMap& map, double p, bool experts_apart, bool kept_shard,
                  const RecipeOptimizer& o, bool fused, bool stack, RankMemory& r) {
  StateBytes b = state_bytes(o, p);
  b.stack = stack;
  // The stack's gradient buffer: the parameters' dtype with grad_reduce_dtype bf16 (never narrower than them).
  if (stack && o.grad_reduce_dtype == StateDtype::kBf16) b.grad = std::min(b.work, std::max(2.0, p));
  r.params = p * (s.dense() + s.experts);
  if (map.world == 1) return add_replicated(s.dense() + s.experts, s.largest, b, fused, r);
  // The dense state is sharded over DP x CP (Megatron-LM's distributed optimizer; CP 1 on the torch backend).
  double step = add_distributed(s.dense() + (experts_apart ? 0 : s.experts), map.dp * std::max(1, map.cp), p,
                                kept_shard, b, r);
  if (!experts_apart) return step;
  if (map.edp > 1) return std::max(step, add_distributed(s.experts, map.edp, p, kept_shard, b, r));
  return std::max(step, add_replicated(s.experts, s.largest, b, fused, r));
}

}  // namespace

namespace {

/// Activations of one virtual stage (chunk) of a rank for one microbatch under the recipe's recompute setting,
/// and the largest recomputed unit (its full activations come back during its backward pass).
struct ChunkActivations {
  double kept = 0;
  double largest_unit = 0;
};

ChunkActivations chunk_activations(const ModelConfig& m, const LayerRange& lr, const RecipeRecompute& rc,
                                   const MicrobatchShape& s) {
  ChunkActivations a;
  const bool full = rc.granularity == "full", selective = rc.granularity == "selective";
  const int n = rc.num_layers > 0 ? rc.num_layers : 1;
  const bool block = rc.method == "block";
  double unit = 0;
  for (int64_t j = 0; j < lr.count; ++j) {
    const double layer = layer_activation_bytes(m, lr.first + j, s) -
                         (selective ? selective_recompute_freed_bytes(m, lr.first + j, s, rc.modules) : 0);
    if (!full || (block && j >= n)) {
      a.kept += layer;
      continue;
    }
    const bool starts_unit = block || j % n == 0;  // uniform: groups of n layers; block: each of the first n alone
    if (starts_unit) {
      a.largest_unit = std::max(a.largest_unit, unit);
      unit = 0;
      a.kept += recompute_input_bytes(m, s);
    }
    unit += layer;
  }
  a.largest_unit = std::max(a.largest_unit, unit);
  return a;
}

/// The chunks of the forwards in flight at most on pipeline rank p: 1F1B keeps min(PP - p, m) microbatches;
/// interleaved 1F1B keeps warm-up + 1 chunk passes (schedule/pipeline_schedule.cpp: warm-up = 2 (PP - p - 1) +
/// (VPP - 1) PP, at most m VPP), forward k running chunk (k mod PP VPP) / PP.
std::vector<int> chunks_in_flight(const RankMap& map, int p) {
  const int64_t m = std::max<int64_t>(1, map.microbatches), total = m * map.vpp;
  std::vector<int> chunks;
  if (map.vpp == 1) {
    for (int64_t k = 0; k < std::min<int64_t>(map.pp - p, m); ++k) chunks.push_back(0);
    return chunks;
  }
  const int64_t warmup = std::min<int64_t>(2 * int64_t{map.pp - p - 1} + int64_t{map.vpp - 1} * map.pp, total);
  for (int64_t k = 0; k < std::min(warmup + 1, total); ++k)
    chunks.push_back(static_cast<int>((k % (int64_t{map.pp} * map.vpp)) / map.pp));
  return chunks;
}

struct Phase {
  double activations = 0, transient = 0;
  std::string name, term;
  double total() const { return activations + transient; }
};

/// The phases that can hold the peak on a rank (docs/memory-plan.md, "Peak"); returns the largest.
/// `in_flight`: the saved activations of each chunk pass in flight; `buffers`: pipeline sends kept to the step's end.
/// `optimizer_step`: the optimizer step's transient (add_states), beside the pipeline sends only.
Phase peak_phase(const std::vector<double>& in_flight, double buffers, double largest_unit, bool last,
                 const LossMemory& loss, double step_grads, double accumulate_copy, double optimizer_step) {
  double sum = buffers, smallest = in_flight.empty() ? 0 : in_flight[0];
  for (double a : in_flight) sum += a, smallest = std::min(smallest, a);
  std::vector<Phase> phases;
  phases.push_back({sum, 0, "forward of the last microbatch in flight", "nothing beyond the saved activations"});
  if (last) {
    phases.push_back({sum, loss.forward, "forward of the loss", loss.forward_term});
    phases.push_back({sum, loss.backward, "start of the backward pass", loss.backward_term});
  }
  if (largest_unit > 0)
    phases.push_back({sum, largest_unit, "backward of a recomputed unit", "recomputed unit's activations"});
  phases.push_back({sum - smallest, step_grads + accumulate_copy, "end of a microbatch's backward",
                    accumulate_copy > 0 ? "parameter gradients in the parameters' dtype + one FP32 copy"
                                        : "parameter gradients in the parameters' dtype"});
  if (optimizer_step > 0)
    phases.push_back({buffers, optimizer_step, "optimizer step", "FP32 working copies of the optimizer state"});
  return *std::max_element(phases.begin(), phases.end(),
                           [](const Phase& a, const Phase& b) { return a.total() < b.total(); });
}

}  // namespace

namespace {

/// `experts_apart`, `kept_shard`: as add_states.
RankMemory rank_memory(const Recipe& recipe, const ModelConfig& m, const RankMap& map, const RankPlacement& q,
                       const MicrobatchShape& shape, bool experts_apart, bool kept_shard) {
  RankMemory r;
  r.pp_rank = q.pp;
  r.embedding = q.pp == 0;
  r.output_layer = q.pp == map.pp - 1;
  r.kind = map.pp == 1 ? "only stage" : r.embedding ? "first stage" : r.output_layer ? "last stage" : "middle stage";
  const StageParams s = stage_params(m, q, map);
  r.dense_params = static_cast<int64_t>(s.dense());
  r.expert_params = static_cast<int64_t>(s.experts);
  const bool fused_adam = shape.cuda_kernels();  // MixedPrecisionAdam on the fused kernels (optim/adam.h)
  const bool stack = m.family != ModelFamily::kQwen35;  // the analytical plan of the recipe's own stack
  const double step =
      add_states(s, map, shape.param_bytes, experts_apart, kept_shard, recipe.optimizer, fused_adam, stack, r);

  std::vector<double> chunk_kept;
  double largest_unit = 0;
  for (const auto& lr : q.layers) {
    const ChunkActivations a = chunk_activations(m, lr, recipe.layout.recompute, shape);
    double kept = a.kept + r.output_layer * (lr.virtual_stage == map.vpp - 1) * output_layer_activation_bytes(m, shape);
    chunk_kept.push_back(kept);
    r.activations_per_microbatch += kept;
    largest_unit = std::max(largest_unit, a.largest_unit);
    r.layers += lr.count;
  }
  std::vector<double> in_flight;
  for (int c : chunks_in_flight(map, q.pp)) in_flight.push_back(chunk_kept[static_cast<size_t>(c)]);
  r.microbatches_in_flight = static_cast<int64_t>(in_flight.size());
  // Pipeline sends are kept until the end of the step (docs/distributed.md): hidden states forward, gradients back.
  double buffers = 0;
  if (map.pp > 1) {
    const double sends = static_cast<double>(map.microbatches) * map.vpp *
                         (2 - (r.embedding && map.vpp == 1) - (r.output_layer && map.vpp == 1));
    buffers = sends * recompute_input_bytes(m, shape);
  }
  const Phase ph = peak_phase(in_flight, buffers, largest_unit, r.output_layer, loss_memory(m, shape),
                              // the stack's weight-gradient GEMMs add into its gradient buffer (Megatron-Core's
                              // gradient_accumulation_fusion): no gradient tensors in the parameters' dtype
                              stack ? 0 : shape.param_bytes * (s.dense() + s.experts),
                              shape.impl == TorchMemoryImpl::kFullLogits ? kF32 * s.largest : 0, step);
  r.activations_in_flight = ph.activations;
  r.transient = ph.transient;
  r.transient_term = ph.term;
  r.peak_phase = ph.name;
  r.peak = r.params + r.grads + r.optimizer + r.activations_in_flight + r.transient;
  return r;
}

/// The plan table's row: "optimizer state (FP32 masters, moments)" by default, else e.g. "optimizer (BF16+rem.
/// masters, BF16 moments)".
std::string optimizer_row_label(const RecipeOptimizer& o) {
  const bool m16 = o.exp_avg_dtype == StateDtype::kBf16, v16 = o.exp_avg_sq_dtype == StateDtype::kBf16;
  if (o.master_weights == MasterWeights::kFp32 && !m16 && !v16) return "optimizer state (FP32 masters, moments)";
  const std::string masters = o.master_weights == MasterWeights::kFp32 ? "FP32 masters" : "BF16+rem. masters";
  const std::string moments = m16 && v16 ? "BF16 moments" : m16 ? "BF16 m, FP32 v" : v16 ? "FP32 m, BF16 v" : "moments";
  return "optimizer (" + masters + ", " + moments + ")";
}

/// The recipe's fields that change its stack's memory and that the plan does not price (docs/memory-plan.md, "Not
/// modelled"): recompute modules other than those selective_recompute_freed_bytes prices for `family`, and on the
/// torch backend's plan (Qwen3.5) a BF16 gradient reduce, which the backend does not run.
std::vector<std::string> plan_not_modelled(const Recipe& recipe, ModelFamily family) {
  std::vector<std::string> out;
  const RecipeRecompute& rc = recipe.layout.recompute;
  if (rc.granularity == "selective")
    for (RecomputeModule r : rc.modules)
      if (!recompute_module_priced(family, r))
        out.push_back(std::string("layout.recompute.modules ") + to_string(r) + " (its activations are planned as kept)");
  if (family == ModelFamily::kQwen35 && recipe.optimizer.grad_reduce_dtype == StateDtype::kBf16)
    out.push_back("optimizer.grad_reduce_dtype bf16 (the torch backend keeps FP32 gradients; planned as such)");
  return out;
}

}  // namespace

const RankMemory& MemoryPlan::worst() const {
  if (ranks.empty()) throw std::logic_error("memory plan without ranks");
  return *std::max_element(ranks.begin(), ranks.end(),
                           [](const RankMemory& a, const RankMemory& b) { return a.peak < b.peak; });
}

std::string MemoryPlan::largest_term() const {
  const RankMemory& w = worst();
  const std::vector<std::pair<double, std::string>> terms = {
      {w.params, "parameters"},
      {w.grads, grad_term},
      {w.optimizer, "optimizer state (" + optimizer_state + ")"},
      {w.activations_in_flight, "activations of " + std::to_string(w.microbatches_in_flight) +
                                    (w.microbatches_in_flight == 1 ? " microbatch" : " microbatches") + " in flight"},
      {w.transient, w.transient_term}};
  return std::max_element(terms.begin(), terms.end())->second;
}

namespace {

// docs/memory-plan.md, "Reserve": the CUDA context and NCCL buffers (1-3 GB per GPU: the upper end) and the largest
// measured peak over its plan among the committed emulated ranks (1.076, reports/bench/h200-2026-12-02-emulate).
constexpr double kCudaFixedReserveBytes = 3e9;
constexpr double kPlanErrorFraction = 0.08;

}  // namespace

MemoryReserve measured_reserve(Device device) {
  MemoryReserve r;
  r.fixed_bytes = device == Device::kCuda ? kCudaFixedReserveBytes : 0;
  r.fraction = kPlanErrorFraction;
  return r;
}

MemoryReserve stated_reserve(double gb) {
  if (!std::isfinite(gb) || gb < 0) throw std::invalid_argument("a memory reserve of at least 0 GB");
  MemoryReserve r;
  r.fixed_bytes = gb * 1e9;
  r.stated = true;
  return r;
}

std::string MemoryReserve::text(double peak) const {
  char s[96];
  if (stated)
    std::snprintf(s, sizeof s, "%.1f GB (--memory-reserve)", bytes(peak) / 1e9);
  else if (fixed_bytes > 0)
    std::snprintf(s, sizeof s, "%.1f GB (%.1f GB + %.0f%% of the peak)", bytes(peak) / 1e9, fixed_bytes / 1e9,
                  fraction * 100);
  else
    std::snprintf(s, sizeof s, "%.1f GB (%.0f%% of the peak)", bytes(peak) / 1e9, fraction * 100);
  return s;
}

bool fits_with_reserve(double peak, double capacity, const MemoryReserve& reserve) {
  return peak + reserve.bytes(peak) <= capacity;
}

int torch_compute_bytes(const std::string& precision, bool cuda) {
  if (precision == "bf16") return cuda ? 2 : 4;
  if (precision == "fp32") return 4;
  if (precision == "fp64") return 8;
  return 0;
}

PlanOptions plan_options(const RunSettings& s, Device device) {
  PlanOptions p;
  p.device = device;
  p.fused_kernels = s.kernels == Kernels::kFused;
  p.ep_dispatch = s.ep_dispatch;
  p.overlap_param_gather = s.overlap_param_gather;
  return p;
}

namespace {

/// One microbatch's shape on a rank of `map` as the plan sizes it: rows, tokens per CP rank, TP, element bytes,
/// kernels, and the fixed_capacity dispatch's rows (bench.ep_dispatch fixed_capacity: P blocks of C =
/// max_tokens_per_gpu / TP x top_k rows per MoE layer).
MicrobatchShape microbatch_shape(const Recipe& recipe, const ModelConfig& model, const RankMap& map,
                                 const PlanOptions& o) {
  MicrobatchShape shape;
  shape.rows = map.rows_per_microbatch;
  // CP > 1: each CP rank holds 1 / CP of every row (Megatron-LM's context parallelism; CP 1 on the torch backend).
  shape.tokens = map.rows_per_microbatch * recipe.workload.row_tokens / std::max(1, map.cp);
  shape.tp = map.tp;
  const bool cuda = o.device == Device::kCuda;
  shape.param_bytes = torch_compute_bytes(recipe.workload.precision, cuda);
  if (shape.param_bytes == 0) shape.param_bytes = 4;  // a precision the backend refuses: planned as FP32
  shape.sdpa = cuda;
  shape.impl = o.impl;
  shape.fused_kernels = o.fused_kernels;
  if (o.ep_dispatch.value_or(recipe.bench.ep_dispatch.value_or(EpDispatch::kHostSplits)) ==
          EpDispatch::kFixedCapacity &&
      map.ep > 1)
    shape.ep_capacity_rows = static_cast<int64_t>(map.ep) * (recipe.layout.max_tokens_per_gpu / map.tp) * model.top_k;
  return shape;
}

/// The first rank of each pipeline rank: from the map's index when it has one (a plan of 65,536 GPUs: `plan`'s
/// search), else in one pass over its ranks. A stage's index must hold a rank of that stage. Throws
/// std::logic_error for a pipeline rank without a rank.
std::vector<const RankPlacement*> stage_first_ranks(const RankMap& map) {
  std::vector<const RankPlacement*> first(static_cast<size_t>(map.pp), nullptr);
  if (map.stage_first_rank.size() == first.size()) {
    for (size_t p = 0; p < first.size(); ++p)
      if (map.stage_first_rank[p] < map.ranks.size() && map.ranks[map.stage_first_rank[p]].pp == static_cast<int>(p))
        first[p] = &map.ranks[map.stage_first_rank[p]];
  } else {
    for (const auto& r : map.ranks)
      if (r.pp >= 0 && r.pp < map.pp && first[static_cast<size_t>(r.pp)] == nullptr)
        first[static_cast<size_t>(r.pp)] = &r;
  }
  for (size_t p = 0; p < first.size(); ++p)
    if (!first[p]) throw std::logic_error("rank map without pipeline rank " + std::to_string(p));
  return first;
}

/// The pipeline ranks that stand for each kind of stage: the first, the middle one with the highest peak (PP > 2),
/// the last (PP > 1).
std::vector<size_t> stage_kinds(const std::vector<RankMemory>& ranks) {
  std::vector<size_t> kinds{0};
  if (ranks.size() > 2) {
    size_t mid = 1;
    for (size_t i = 2; i + 1 < ranks.size(); ++i)
      if (ranks[i].peak > ranks[mid].peak) mid = i;
    kinds.push_back(mid);
  }
  if (ranks.size() > 1) kinds.push_back(ranks.size() - 1);
  return kinds;
}

}  // namespace

MemoryPlan plan_memory(const Recipe& recipe, const ModelConfig& model, const RankMap& map, const PlanOptions& o) {
  MemoryPlan plan;
  plan.gpu = recipe.gpu.type;
  const GpuSpec* gpu = find_gpu(recipe.gpu.type);
  plan.gpu_memory = gpu ? gpu->memory_bytes : recipe.gpu.memory_gb * 1e9;
  plan.reserve = o.reserve.value_or(measured_reserve(o.device));
  plan.optimizer_state = optimizer_state_label(recipe.optimizer);
  plan.optimizer_row = optimizer_row_label(recipe.optimizer);
  plan.analytical = model.family != ModelFamily::kQwen35;
  plan.not_modelled = plan_not_modelled(recipe, model.family);
  if (plan.analytical && recipe.optimizer.grad_reduce_dtype == StateDtype::kBf16 &&
      torch_compute_bytes(recipe.workload.precision, o.device == Device::kCuda) == 2)
    plan.grad_term = "gradients (BF16)";
  const MicrobatchShape shape = microbatch_shape(recipe, model, map, o);
  plan.ep_capacity_rows = shape.ep_capacity_rows;
  const bool experts_apart = map.ep > 1 || map.tp > 1;
  plan.experts_in_distributed_optimizer = !experts_apart && map.world > 1 && model.num_experts > 0;
  plan.expert_state_shards = experts_apart && map.world > 1 ? map.edp : 1;
  const bool kept_shard = o.overlap_param_gather.value_or(recipe.bench.overlap_param_gather.value_or(false));
  for (const RankPlacement* q : stage_first_ranks(map))
    plan.ranks.push_back(rank_memory(recipe, model, map, *q, shape, experts_apart, kept_shard));
  plan.kinds = stage_kinds(plan.ranks);
  return plan;
}

}  // namespace recipebench
