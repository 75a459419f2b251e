#include "plan/layout_search.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "catalog/hardware.h"
#include "layout/rank_map.h"
#include "plan/topology.h"
#include "recipe/layout_check.h"
#include "settings/switches.h"

namespace recipebench {

namespace {

std::vector<int> divisors(int64_t n) {
  std::vector<int> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(static_cast<int>(d));
  return out;
}

/// The layer splits of `layers` over `pp` stages: the even one (nullopt, nullopt) when it divides, and first =
/// last = f < the middle stages' count where the rest splits evenly over PP - 2 (at least half a middle stage).
std::vector<std::pair<std::optional<int>, std::optional<int>>> layer_splits(int64_t layers, int pp) {
  std::vector<std::pair<std::optional<int>, std::optional<int>>> out;
  if (layers % pp == 0) out.push_back({std::nullopt, std::nullopt});
  if (pp <= 2) return out;
  for (int64_t f = 1; 2 * f < layers; ++f) {
    const int64_t rest = layers - 2 * f;
    if (rest % (pp - 2) != 0) continue;
    const int64_t mid = rest / (pp - 2);
    if (f >= mid || 2 * f < mid) continue;
    out.push_back({static_cast<int>(f), static_cast<int>(f)});
  }
  return out;
}

/// The problem's field path of a refused layout ("layout.ep: ..." -> "layout.ep").
std::string refusal_field(const std::string& what) { return what.substr(0, what.find(':')); }

}  // namespace

const char* to_string(OptimizerForm f) {
  switch (f) {
    case OptimizerForm::kFp32:
      return "fp32";
    case OptimizerForm::kBf16Remainder:
      return "bf16_remainder";
    case OptimizerForm::kBf16Moments:
      return "bf16_moments";
  }
  return "fp32";
}

std::optional<OptimizerForm> optimizer_form_named(const std::string& name) {
  for (OptimizerForm f : {OptimizerForm::kFp32, OptimizerForm::kBf16Remainder, OptimizerForm::kBf16Moments})
    if (name == to_string(f)) return f;
  return std::nullopt;
}

RecipeOptimizer with_optimizer_form(RecipeOptimizer o, OptimizerForm f) {
  o.master_weights = f == OptimizerForm::kFp32 ? MasterWeights::kFp32 : MasterWeights::kBf16Remainder;
  const StateDtype moments = f == OptimizerForm::kBf16Moments ? StateDtype::kBf16 : StateDtype::kFp32;
  o.exp_avg_dtype = moments;
  o.exp_avg_sq_dtype = moments;
  return o;
}

namespace {

template <typename T>
std::string joined(const std::vector<T>& values) {
  std::string s;
  for (const T& v : values) s += (s.empty() ? "" : ", ") + fmt::format("{}", v);
  return s;
}

}  // namespace

std::vector<std::string> searched_dimensions(const LayoutSpace& space, int nvlink_gpus) {
  std::vector<std::string> forms;
  for (OptimizerForm f : space.optimizer_forms) forms.push_back(to_string(f));
  return {
      fmt::format("TP {} (within one scale-up domain: {} GPUs; sequence parallel when > 1)", joined(space.tp),
                  nvlink_gpus),
      "PP: every divisor of GPUs / TP up to the layers; the even layer split and lighter first and last stages",
      fmt::format("VPP {} (where every stage's layers divide)", joined(space.vpp)),
      "EP: divisors of the stage's GPUs and of the experts; ETP 1; CP 1; DP = GPUs / (TP PP)",
      fmt::format("rows per microbatch {} (max tokens per GPU = rows x row tokens)", joined(space.rows_per_microbatch)),
      space.try_recompute ? "recompute none, full (uniform, 1 layer)" : "recompute none",
      "optimizer state " + joined(forms) + " (the first that fits, per layout)",
      "the priced overlap switches on where they apply (overlap_param_gather also off where it costs the fit)"};
}

std::vector<std::string> left_out_dimensions(int64_t row_tokens) {
  std::vector<std::string> out = {
      "CP > 1: the torch backend runs CP 1 (the step-time model prices ring attention's exchange of keys and values "
      "but not Gated DeltaNet's state passing)",
      "ETP > 1: the torch backend runs ETP 1 (TP folded into EP)",
      "selective recompute and recompute of several layers per unit: the torch backend runs full (uniform or block) "
      "or none; the search tries full uniform 1 layer",
      "dispatchers other than alltoall (allgather, DeepEP flex): the torch backend runs alltoall (the step-time model "
      "prices allgather by its own collectives, flex as alltoall)",
      "CPU offload of optimizer state or activations: the torch backend runs none",
      "FP32 masters with BF16 moments: BF16 + remainder masters hold the same FP32 value in less memory"};
  if (row_tokens >= 32768)
    out.push_back(
        fmt::format("rows of {} tokens: every proposal holds whole rows on one GPU (context parallelism, "
                    "the usual answer for long rows, is not searched)",
                    row_tokens));
  return out;
}

Recipe base_recipe(const LayoutRequest& r) {
  const GpuSpec* gpu = find_gpu(r.gpu);
  if (gpu == nullptr) throw std::invalid_argument("GPU " + r.gpu + " is not in the catalog");
  if (r.count < 1 || r.global_batch < 1 || r.row_tokens < 1 || r.per_node < 1)
    throw std::invalid_argument("a plan needs GPUs, GPUs per node, a global batch and row tokens of at least 1");
  Recipe base;
  base.file = "<plan>";
  base.model = r.model.name;
  base.gpu.type = gpu->name;
  base.gpu.memory_gb = gpu->memory_bytes / 1e9;
  base.gpu.count = r.count;
  base.gpu.per_node = std::min(r.per_node, r.count);
  const InstanceSpec* inst = r.instance.empty() ? default_instance_for_gpu(gpu->name) : find_instance(r.instance);
  if (!r.instance.empty() && inst == nullptr)
    throw std::invalid_argument("instance " + r.instance + " is not in the catalog");
  if (inst != nullptr && inst->gpu != gpu->name)
    throw std::invalid_argument("instance " + inst->label() + " holds " + inst->gpu + " GPUs, not " + gpu->name);
  if (inst != nullptr) base.gpu.instance = inst->label();
  base.status = "proposed";
  base.author = "recipebench plan";
  base.workload.row_tokens = r.row_tokens;
  base.workload.global_batch = r.global_batch;
  base.workload.precision = "bf16";
  base.workload.rows = "synthetic SFT rows (seeded, learnable structure)";
  base.doc = Json::object();
  return base;
}

namespace {

/// One point of the space: the degrees and choices a candidate layout is made of.
struct Candidate {
  int tp = 1, pp = 1, vpp = 1, dp = 1, ep = 1, rows = 1;
  std::pair<std::optional<int>, std::optional<int>> split;
  bool recompute = false;
};

/// The proposed recipe of candidate `c`: `base` with its layout (ETP 1, sequence parallel with TP); its switches are
/// engaged by `consider` once its rank map is known.
Recipe candidate_recipe(const Recipe& base, const Candidate& c) {
  Recipe rec = base;
  RecipeLayout& l = rec.layout;
  l.tp = c.tp;
  l.pp = c.pp;
  l.vpp = c.vpp;
  l.dp = c.dp;
  l.ep = c.ep;
  l.etp = 1;
  l.sequence_parallel = c.tp > 1;
  l.first_stage_layers = c.split.first;
  l.last_stage_layers = c.split.second;
  l.rows_per_microbatch = c.rows;
  l.max_tokens_per_gpu = c.rows * base.workload.row_tokens;
  if (c.recompute) l.recompute = RecipeRecompute{"full", "uniform", 1};
  l.label = layout_label(l);
  return rec;
}

/// The rank map of the last layout built, kept for the next candidates of the same layout (they differ in rows per
/// microbatch or recompute): a change of rows sets the map's microbatch counts (O(GPUs) integers) instead of building
/// it again (O(GPUs) placements, each with its layer ranges): a quarter of the builds of a search.
class RankMaps {
 public:
  const std::optional<RankMap>& of(const Recipe& rec, const ModelConfig& model) {
    const RecipeLayout& l = rec.layout;
    const std::vector<int64_t> key{l.tp, l.pp, l.vpp, l.dp, l.ep, l.first_stage_layers.value_or(-1),
                                   l.last_stage_layers.value_or(-1)};
    const int64_t rows = rows_per_microbatch(l.max_tokens_per_gpu, rec.workload.row_tokens);
    if (!map_ || key != key_ || rows < 1) {
      map_ = build_rank_map(rec, model), key_ = key;
    } else if (map_->rows_per_microbatch != rows) {  // build_rank_map's microbatch counts, for these rows
      map_->rows_per_microbatch = rows;
      map_->microbatches = rec.workload.global_batch / l.dp / rows;
      for (RankPlacement& q : map_->ranks) q.microbatches = map_->microbatches;
    }
    return map_;
  }

 private:
  std::vector<int64_t> key_;
  std::optional<RankMap> map_;
};

/// One way to run a candidate: its optimizer-state form and its bench switches, with the settings they merge into.
struct Variant {
  OptimizerForm form = OptimizerForm::kFp32;
  RecipeBench bench;
  StepTimeOptions options;
};

/// The ways to run `rec` (its priced switches engaged in `engaged`), most precise first: each form of `forms` with
/// the engaged switches, then, where bench.overlap_param_gather is engaged (the one priced switch the memory plan
/// charges: the kept shard, docs/memory-plan.md), the same form with it off.
std::vector<Variant> variants(const RecipeBench& engaged, const StepTimeOptions& options,
                              const std::vector<OptimizerForm>& forms) {
  std::vector<RecipeBench> benches{engaged};
  if (engaged.overlap_param_gather == std::optional<bool>(true)) {
    benches.push_back(engaged);
    benches.back().overlap_param_gather = false;
  }
  std::vector<Variant> out;
  for (OptimizerForm f : forms)
    for (const RecipeBench& b : benches) {
      Variant v{f, b, options};
      merge_switches(v.bench, RecipeBench{}, v.options.settings);
      out.push_back(std::move(v));
    }
  return out;
}

/// What the memory plan found for a candidate: the first variant that fits (its plan), else the last tried.
struct Planned {
  MemoryPlan memory;
  Variant variant;
  bool inside_reserve = false;  ///< some variant's peak fits the memory, none with the reserve beside it
};

/// The memory plan of `rec` on `map` for each of `vs` in turn, with `reserve` beside the peak, until one fits; `rec`
/// is left with that variant's optimizer form and bench switches. Throws std::invalid_argument for no variant.
Planned plan_variants(Recipe& rec, const ModelConfig& model, const RankMap& map, const std::vector<Variant>& vs,
                      const std::optional<MemoryReserve>& reserve) {
  if (vs.empty()) throw std::invalid_argument("a layout search with no optimizer-state form");
  const RecipeOptimizer asked = rec.optimizer;
  Planned out;
  for (const Variant& v : vs) {
    rec.optimizer = with_optimizer_form(asked, v.form);
    rec.bench = v.bench;
    PlanOptions po = plan_options(v.options.settings, Device::kCuda);
    po.reserve = reserve;
    out.memory = plan_memory(rec, model, map, po);
    out.variant = v;
    out.inside_reserve = out.inside_reserve || out.memory.inside_reserve();
    if (out.memory.fits()) break;
  }
  return out;
}

/// Checks, plans and predicts one candidate into `out` (counts, ranked, closest) and `refusals`. Every priced
/// switch is engaged where its own no-effect rule says it applies on the candidate's rank map
/// (settings/switches.h engage_priced_switches); the memory is planned as `run` would run it (plan_options of those
/// settings, the search's reserve) for each variant (optimizer-state form, overlap_param_gather) until one fits,
/// and the prediction reads the settings `run` would merge from that variant.
void consider(Recipe rec, const LayoutRequest& r, const UnitCosts& costs, const NetworkModel& network,
              const StepTimeOptions& options, const std::vector<OptimizerForm>& forms, RankMaps& maps,
              LayoutSearch& out, std::map<std::string, int64_t>& refusals,
              std::map<std::string, int64_t>& unpredicted) {
  ++out.considered;
  try {
    require_layout(rec, &r.model);
  } catch (const std::invalid_argument& e) {
    ++refusals[refusal_field(e.what())];
    return;
  }
  ++out.layout_ok;
  const std::optional<RankMap>& map = maps.of(rec, r.model);
  StepTimeOptions o = options;
  engage_priced_switches(SwitchContext{rec, o.settings, map}, rec.bench);
  const Planned p = plan_variants(rec, r.model, *map, variants(rec.bench, options, forms), out.reserve);
  const double peak = p.memory.worst().peak, reserve = p.memory.reserve.bytes(peak);
  if (!p.memory.fits()) {
    out.inside_reserve += p.inside_reserve;
    out.closest.push_back({rec, peak, reserve, p.memory.inside_reserve(), p.memory.largest_term(), p.variant.form});
    return;
  }
  ++out.fit;
  try {
    out.ranked.push_back(
        {rec, predict_step(rec, r.model, *map, costs, network, p.variant.options), peak, reserve, p.variant.form});
    ++out.predicted;
  } catch (const std::invalid_argument& e) {
    ++unpredicted[e.what()];
  }
}

/// Every candidate of `space` for `r`, in the order TP, PP, layer split, VPP, EP, rows, recompute.
std::vector<Candidate> candidates(const LayoutRequest& r, const LayoutSpace& space, int nvlink) {
  std::vector<Candidate> out;
  for (int tp : space.tp) {
    if (tp > nvlink || r.count % tp != 0) continue;
    for (int pp : divisors(r.count / tp)) {
      if (pp > r.model.num_layers) continue;
      for (const auto& split : layer_splits(r.model.num_layers, pp))
        for (int vpp : space.vpp) {
          if (vpp > 1 && pp < 2) continue;
          for (int ep : divisors(static_cast<int64_t>(r.count) / pp)) {
            if (r.model.num_experts == 0 ? ep > 1 : r.model.num_experts % ep != 0) continue;  // a dense model: EP 1
            for (int rows : space.rows_per_microbatch)
              for (bool recompute : {false, true})
                if (!recompute || space.try_recompute)
                  out.push_back({tp, pp, vpp, r.count / tp / pp, ep, rows, split, recompute});
          }
        }
    }
  }
  return out;
}

}  // namespace

LayoutSearch search_layouts(const LayoutRequest& r, const UnitCosts& costs, const NetworkModel& network,
                            const StepTimeOptions& options, const LayoutSpace& space) {
  const Recipe base = base_recipe(r);
  LayoutSearch out;
  out.gpu_memory_bytes = base.gpu.memory_gb * 1e9;
  out.reserve = r.reserve.value_or(measured_reserve(Device::kCuda));
  std::map<std::string, int64_t> refusals, unpredicted;
  RankMaps maps;
  // TP within NVLink: the node, or the instance's NVLink domain where it is larger (plan/topology.h).
  const int nvlink = nvlink_island(find_instance(base.gpu.instance), base.gpu.per_node);
  out.nvlink_gpus = nvlink;
  for (const Candidate& c : candidates(r, space, nvlink))
    consider(candidate_recipe(base, c), r, costs, network, options, space.optimizer_forms, maps, out, refusals,
             unpredicted);
  std::stable_sort(out.ranked.begin(), out.ranked.end(), [](const PlannedLayout& a, const PlannedLayout& b) {
    return a.prediction.tokens_per_s_per_gpu > b.prediction.tokens_per_s_per_gpu;
  });
  std::stable_sort(out.closest.begin(), out.closest.end(),
                   [](const MemoryMiss& a, const MemoryMiss& b) { return a.peak_bytes < b.peak_bytes; });
  if (out.closest.size() > 5) out.closest.resize(5);
  const auto most_first = [](const auto& x, const auto& y) { return x.second > y.second; };
  for (const auto& [field, n] : refusals) out.refusals.push_back({field, n});
  std::stable_sort(out.refusals.begin(), out.refusals.end(), most_first);
  for (const auto& [why, n] : unpredicted) out.unpredicted.push_back({why, n});
  std::stable_sort(out.unpredicted.begin(), out.unpredicted.end(), most_first);
  return out;
}

}  // namespace recipebench
