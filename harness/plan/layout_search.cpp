#include "plan/layout_search.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "catalog/hardware.h"
#include "layout/rank_map.h"
#include "plan/activation_memory.h"
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

const std::vector<std::vector<RecomputeModule>>& selective_module_sets() {
  using R = RecomputeModule;
  static const std::vector<std::vector<RecomputeModule>> sets{
      {R::kCoreAttn}, {R::kCoreAttn, R::kLayernorm, R::kMoeAct}, {R::kMoeAct}, {R::kLayernorm, R::kMoeAct}};
  return sets;
}

std::vector<std::vector<RecomputeModule>> searched_selective_modules(const ModelConfig& m) {
  std::vector<std::vector<RecomputeModule>> out;
  for (const std::vector<RecomputeModule>& set : selective_module_sets()) {
    bool priced = true;
    for (RecomputeModule r : set)
      priced = priced && recompute_module_priced(m.family, r) && (r != RecomputeModule::kMoeAct || m.num_experts > 0);
    if (priced) out.push_back(set);
  }
  return out;
}

namespace {

/// "core_attn; core_attn+layernorm+moe_act; ...": the sets of selective_module_sets.
std::string selective_sets_text() {
  std::string s;
  for (const std::vector<RecomputeModule>& set : selective_module_sets()) {
    std::string one;
    for (RecomputeModule r : set) one += (one.empty() ? "" : "+") + to_string(r);
    s += (s.empty() ? "" : "; ") + one;
  }
  return s;
}

}  // namespace

std::vector<std::string> searched_dimensions(const LayoutSpace& space, int nvlink_gpus) {
  std::vector<std::string> forms, dispatchers;
  for (OptimizerForm f : space.optimizer_forms) forms.push_back(to_string(f));
  for (Dispatcher d : space.dispatchers) dispatchers.push_back(to_string(d) + (d == Dispatcher::kFlex ? " (DeepEP)" : ""));
  return {
      fmt::format("TP {} (within one scale-up domain: {} GPUs; sequence parallel when > 1)", joined(space.tp),
                  nvlink_gpus),
      space.try_cp ? "CP 1, 2, 4, ... (powers of two; ring attention's exchange priced, see the pruning rules)" : "CP 1",
      "PP: every divisor of GPUs / (TP CP) up to the layers; the even layer split and lighter first and last stages",
      space.max_vpp > 0 ? fmt::format("VPP 1 to {} (where every stage's layers divide)", space.max_vpp)
                        : "VPP: every degree where every stage's layers divide (up to one layer per virtual stage)",
      space.try_etp ? "ETP 1 (TP folded into EP) and ETP = TP" : "ETP 1",
      "EP: divisors of the stage's GPUs / ETP and of the experts; DP = GPUs / (TP CP PP)",
      "dispatcher " + joined(dispatchers) + " (EP > 1)",
      fmt::format("rows per microbatch {} (max tokens per GPU = rows x row tokens)", joined(space.rows_per_microbatch)),
      space.try_recompute ? "recompute none, selective (" + selective_sets_text() +
                                "; each set only where the memory plan prices all its modules for the model, and "
                                "moe_act only with experts), full block (the fewest layers per stage that fit), full "
                                "uniform 1 layer"
                          : std::string("recompute none"),
      "optimizer state " + joined(forms) + " (the first that fits, per layout)",
      "the priced overlap switches on where they apply (overlap_param_gather also off where it costs the fit)"};
}

std::vector<std::string> pruning_rules(const LayoutSpace& space, int64_t row_tokens) {
  std::vector<std::string> out;
  if (space.try_cp)
    out.push_back(row_tokens >= space.cp_from_row_tokens
                      ? fmt::format("CP > 1 only with one row per microbatch and at least {} tokens per CP rank (CP "
                                    "up to {} for rows of {} tokens)",
                                    space.cp_min_rank_tokens, std::max<int64_t>(1, row_tokens / space.cp_min_rank_tokens),
                                    row_tokens)
                      : fmt::format("CP > 1 only for rows of {} tokens or more: rows of {} fit whole on one GPU's "
                                    "microbatch, so CP 1",
                                    space.cp_from_row_tokens, row_tokens));
  out.push_back(
      "dispatcher: EP 1 has none to choose (alltoall written); allgather only where ETP x EP stays within the scale-up "
      "domain (it gathers every EP rank's tokens), flex (DeepEP) only where ETP x EP spans more than one (its "
      "internode kernels' use; within one domain it is priced but not searched, so that the layouts the torch "
      "backend runs keep their places)");
  if (space.try_recompute)
    out.push_back(
        "recompute only where no recompute does not fit (recompute costs time); there full uniform 1 layer first "
        "(the least memory: where it does not fit, no recompute does), then with its optimizer-state form selective "
        "of each module set (where it fits) and full block over the fewest layers per virtual stage that fit (bisected)");
  out.push_back("optimizer state: per layout, the first form that fits (without recompute, else with full recompute); "
                "the others are less precise or no faster");
  out.push_back("ETP = TP only for TP > 1 (ETP 1 is TP folded into EP)");
  return out;
}

std::vector<std::string> left_out_dimensions() {
  return {"CPU offload of optimizer state or activations: the memory plan and the step-time model do not price host "
          "traffic, and the torch backend runs none",
          "TP beyond the scale-up domain: TP's collectives run on every layer",
          "ETP other than 1 and TP",
          "recompute uniform over several layers per unit: full block over the fewest layers that fit saves the "
          "same memory with less recompute",
          "selective recompute of mlp, moe, shared_experts or mla_up_proj (--recompute-modules): not searched (the "
          "memory plan does not price their activations; docs/memory-plan.md)",
          "FP32 masters with BF16 moments: BF16 + remainder masters hold the same FP32 value in less memory"};
}

Recipe base_recipe(const LayoutRequest& r) {
  const GpuSpec* gpu = find_gpu(r.gpu);
  if (gpu == nullptr) throw std::invalid_argument("GPU " + r.gpu + " is not in the catalog");
  if (r.count < 1 || r.global_batch < 1 || r.row_tokens < 1 || r.per_node < 1)
    throw std::invalid_argument("a plan needs GPUs, GPUs per node, a global batch and row tokens of at least 1");
  Recipe base;
  base.file = "<plan>";
  base.model = r.model.name;
  if (!r.model_config.empty()) {  // the proposals name the config.json their counts come from
    base.model_params.emplace();
    base.model_params->config = r.model_config;
  }
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

/// One point of the space: the degrees and choices a candidate layout is made of (its recompute is chosen by
/// `consider`, by what fits).
struct Candidate {
  int tp = 1, cp = 1, pp = 1, vpp = 1, dp = 1, ep = 1, etp = 1, rows = 1;
  std::pair<std::optional<int>, std::optional<int>> split;
  Dispatcher dispatcher = Dispatcher::kAlltoall;
};

/// The proposed recipe of candidate `c`: `base` with its layout (sequence parallel with TP, no recompute); its
/// switches are engaged by `consider` once its rank map is known.
Recipe candidate_recipe(const Recipe& base, const Candidate& c) {
  Recipe rec = base;
  RecipeLayout& l = rec.layout;
  l.tp = c.tp;
  l.cp = c.cp;
  l.pp = c.pp;
  l.vpp = c.vpp;
  l.dp = c.dp;
  l.ep = c.ep;
  l.etp = c.etp;
  l.sequence_parallel = c.tp > 1;
  l.first_stage_layers = c.split.first;
  l.last_stage_layers = c.split.second;
  l.rows_per_microbatch = c.rows;
  l.max_tokens_per_gpu = c.rows * base.workload.row_tokens;
  l.dispatcher = c.dispatcher;
  l.label = layout_label(l);
  return rec;
}

/// The rank map of the last layout built, kept for the next candidates of the same layout (they differ in dispatcher,
/// rows per microbatch or recompute): a change of rows sets the map's microbatch counts (O(GPUs) integers) instead of
/// building it again (O(GPUs) placements, each with its layer ranges). `build` makes the map: build_stage_map (the
/// stages' first ranks, for the memory plan) or build_rank_map (every rank, for the prediction).
class RankMaps {
 public:
  explicit RankMaps(RankMap (*build)(const Recipe&, const ModelConfig&)) : build_(build) {}

  const std::optional<RankMap>& of(const Recipe& rec, const ModelConfig& model) {
    const RecipeLayout& l = rec.layout;
    const std::vector<int64_t> key{l.tp, l.cp, l.pp, l.vpp, l.dp, l.ep, l.effective_etp(),
                                   l.first_stage_layers.value_or(-1), l.last_stage_layers.value_or(-1)};
    const int64_t rows = rows_per_microbatch(l.max_tokens_per_gpu, rec.workload.row_tokens);
    if (!map_ || key != key_ || rows < 1) {
      map_ = build_(rec, model), key_ = key;
    } else if (map_->rows_per_microbatch != rows) {  // build_rank_map's microbatch counts, for these rows
      map_->rows_per_microbatch = rows;
      map_->microbatches = rec.workload.global_batch / l.dp / rows;
      for (RankPlacement& q : map_->ranks) q.microbatches = map_->microbatches;
    }
    return map_;
  }

 private:
  RankMap (*build_)(const Recipe&, const ModelConfig&);
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

/// What `consider` shares between candidates: the request, costs, network, options, space and the counts.
struct SearchState {
  const LayoutRequest& r;
  const UnitCosts& costs;
  const NetworkModel& network;
  const StepTimeOptions& options;
  const LayoutSpace& space;
  /// The layouts' maps: build_stage_map's (O(PP): each stage's first rank; groups by the grid's arithmetic).
  RankMaps stage_maps;
  LayoutSearch& out;
  std::map<std::string, int64_t> refusals, unpredicted;
};

/// The layers of `l`'s largest virtual stage (chunk) for a model of `layers` layers.
int64_t largest_chunk_layers(const RecipeLayout& l, int64_t layers) {
  int64_t stage = layers / l.pp;
  if (l.first_stage_layers && l.pp > 2)
    stage = std::max<int64_t>(*l.first_stage_layers, (layers - 2 * *l.first_stage_layers) / (l.pp - 2));
  return stage / std::max(1, l.vpp);
}

/// Predicts `rec` (planned as `p`) into the search's ranked list, or counts why it could not be predicted.
void propose(SearchState& st, const Recipe& rec, const Planned& p) {
  const double peak = p.memory.worst().peak;
  ++st.out.fit;
  try {
    const RankMap& map = *st.stage_maps.of(rec, st.r.model);
    st.out.ranked.push_back({rec, predict_step(rec, st.r.model, map, st.costs, st.network, p.variant.options), peak,
                             p.memory.reserve.bytes(peak), p.variant.form});
    ++st.out.predicted;
  } catch (const std::invalid_argument& e) {
    ++st.unpredicted[e.what()];
  }
}

/// The fewest layers per virtual stage whose full block recompute lets `rec` fit, bisected between 1 and the
/// largest chunk's layers - 1 (every layer is full uniform 1's memory), with its plan; nullopt where none fits.
std::optional<std::pair<Recipe, Planned>> fewest_block_layers(SearchState& st, const Recipe& rec, const RankMap& map,
                                                              const std::vector<Variant>& vs) {
  const auto plan_block = [&](int64_t n) {
    Recipe b = rec;
    b.layout.recompute = RecipeRecompute{"full", "block", static_cast<int>(n)};
    Planned p = plan_variants(b, st.r.model, map, vs, st.out.reserve);
    return std::make_pair(std::move(b), std::move(p));
  };
  int64_t lo = 1, hi = largest_chunk_layers(rec.layout, st.r.model.num_layers) - 1;
  if (hi < 1) return std::nullopt;
  auto best = plan_block(hi);
  if (!best.second.memory.fits()) return std::nullopt;
  while (lo < hi) {  // fits(hi); find the least n that fits
    const int64_t mid = (lo + hi) / 2;
    auto p = plan_block(mid);
    if (p.second.memory.fits()) {
      hi = mid;
      best = std::move(p);
    } else {
      lo = mid + 1;
    }
  }
  return best;
}

/// Checks, plans and predicts one candidate into the search's counts, ranked and closest lists. Every priced switch
/// is engaged where its own no-effect rule says it applies on the candidate's rank map (settings/switches.h
/// engage_priced_switches); the memory is planned as `run` would run it (plan_options of those settings, the search's
/// reserve) for each variant (optimizer-state form, overlap_param_gather) until one fits, first without recompute;
/// only where that does not fit, full uniform 1 layer, and where it fits, with its state form, selective and full
/// block over the fewest layers that fit, each proposed where it fits. The prediction reads the settings `run` would merge from the variant that fits.
void consider(Recipe rec, SearchState& st) {
  LayoutSearch& out = st.out;
  ++out.considered;
  try {
    require_layout(rec, &st.r.model);
  } catch (const std::invalid_argument& e) {
    ++st.refusals[refusal_field(e.what())];
    return;
  }
  ++out.layout_ok;
  const std::optional<RankMap>& map = st.stage_maps.of(rec, st.r.model);
  StepTimeOptions o = st.options;
  engage_priced_switches(SwitchContext{rec, o.settings, map}, rec.bench);
  const std::vector<Variant> vs = variants(rec.bench, st.options, st.space.optimizer_forms);
  Planned last = plan_variants(rec, st.r.model, *map, vs, out.reserve);
  bool inside = last.inside_reserve, any = last.memory.fits();
  if (any) {
    propose(st, rec, last);
    return;
  }
  Recipe last_rec = rec;
  if (st.space.try_recompute) {
    // Full uniform 1 layer first (the least memory): where it does not fit, nothing with recompute does. Its state
    // form (the most precise that fits with it) is the one selective and block are tried with.
    Recipe full = rec;
    full.layout.recompute = RecipeRecompute{"full", "uniform", 1};
    Planned pf = plan_variants(full, st.r.model, *map, vs, out.reserve);
    inside = inside || pf.inside_reserve;
    last = pf, last_rec = full;
    if (pf.memory.fits()) {
      std::vector<Variant> same_form;
      for (const Variant& v : vs)
        if (v.form == pf.variant.form) same_form.push_back(v);
      std::vector<std::pair<Recipe, Planned>> tries;
      for (const std::vector<RecomputeModule>& modules : searched_selective_modules(st.r.model)) {
        Recipe sel = rec;
        sel.layout.recompute = RecipeRecompute{"selective", "", 0, modules};
        Planned ps = plan_variants(sel, st.r.model, *map, same_form, out.reserve);
        if (ps.memory.fits()) tries.push_back({sel, ps});
      }
      if (auto block = fewest_block_layers(st, rec, *map, same_form)) tries.push_back(std::move(*block));
      tries.push_back({full, pf});
      any = true;
      for (auto& [t, p] : tries) propose(st, t, p);
    }
  }
  if (any) return;
  out.inside_reserve += inside;
  const double peak = last.memory.worst().peak;
  out.closest.push_back({last_rec, peak, last.memory.reserve.bytes(peak), last.memory.inside_reserve(),
                         last.memory.largest_term(), last.variant.form});
}

/// The CP degrees searched for `r`: 1, and powers of two from 2 while each CP rank keeps at least
/// space.cp_min_rank_tokens of a row, for rows of at least space.cp_from_row_tokens (pruning_rules).
std::vector<int> cp_degrees(const LayoutRequest& r, const LayoutSpace& space) {
  std::vector<int> out{1};
  if (!space.try_cp || r.row_tokens < space.cp_from_row_tokens) return out;
  for (int64_t cp = 2; r.row_tokens / cp >= space.cp_min_rank_tokens && cp <= r.count; cp *= 2)
    out.push_back(static_cast<int>(cp));
  return out;
}

int64_t gcd64(int64_t a, int64_t b) { return b == 0 ? a : gcd64(b, a % b); }

/// The VPP degrees of a PP `pp` split `split` of `layers`: every divisor of each stage's layers (1 alone for PP 1),
/// at most space.max_vpp when it is set.
std::vector<int> vpp_degrees(int64_t layers, int pp, const std::pair<std::optional<int>, std::optional<int>>& split,
                             const LayoutSpace& space) {
  if (pp < 2) return {1};
  int64_t g = layers / pp;
  if (split.first) g = gcd64(*split.first, (layers - 2 * *split.first) / (pp - 2));
  std::vector<int> out;
  for (int v : divisors(g))
    if (space.max_vpp <= 0 || v <= space.max_vpp) out.push_back(v);
  return out;
}

/// The dispatchers searched for an expert group of ETP x EP GPUs with an NVLink domain of `nvlink` (pruning_rules):
/// EP 1 none to choose (alltoall); else alltoall, allgather within the domain, flex beyond it.
std::vector<Dispatcher> dispatchers_for(int ep, int etp, int nvlink, const LayoutSpace& space) {
  if (ep == 1) return {Dispatcher::kAlltoall};
  std::vector<Dispatcher> out;
  const bool within = static_cast<int64_t>(ep) * etp <= nvlink;
  for (Dispatcher d : space.dispatchers)
    if (d == Dispatcher::kAlltoall || (d == Dispatcher::kAllgather && within) || (d == Dispatcher::kFlex && !within))
      out.push_back(d);
  return out;
}

/// ETP 1, and ETP = TP for a model with experts and TP > 1 (pruning_rules).
std::vector<int> etp_degrees(int tp, bool moe, const LayoutSpace& space) {
  if (tp > 1 && moe && space.try_etp) return {1, tp};
  return {1};
}

/// Every candidate of `space` for `r`, in the order TP, CP, PP, layer split, VPP, ETP, EP, dispatcher, rows.
std::vector<Candidate> candidates(const LayoutRequest& r, const LayoutSpace& space, int nvlink) {
  std::vector<Candidate> out;
  const bool moe = r.model.num_experts > 0;
  for (int tp : space.tp) {
    if (tp > nvlink || r.count % tp != 0) continue;
    for (int cp : cp_degrees(r, space)) {
      if ((r.count / tp) % cp != 0) continue;
      for (int pp : divisors(r.count / tp / cp)) {
        if (pp > r.model.num_layers) continue;
        for (const auto& split : layer_splits(r.model.num_layers, pp))
          for (int vpp : vpp_degrees(r.model.num_layers, pp, split, space))
            for (int etp : etp_degrees(tp, moe, space)) {
              if ((r.count / pp) % etp != 0) continue;
              for (int ep : divisors(static_cast<int64_t>(r.count) / pp / etp)) {
                if (!moe ? ep > 1 : r.model.num_experts % ep != 0) continue;  // a dense model: EP 1
                for (Dispatcher d : dispatchers_for(ep, etp, nvlink, space))
                  for (int rows : space.rows_per_microbatch) {
                    if (cp > 1 && rows > 1) continue;  // a long row: one per microbatch
                    out.push_back({tp, cp, pp, vpp, r.count / tp / cp / pp, ep, etp, rows, split, d});
                  }
              }
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
  SearchState st{r, costs, network, options, space, RankMaps(build_stage_map), out, {}, {}};
  // TP within NVLink: the node, or the instance's NVLink domain where it is larger (plan/topology.h).
  const int nvlink = nvlink_island(find_instance(base.gpu.instance), base.gpu.per_node);
  out.nvlink_gpus = nvlink;
  for (const Candidate& c : candidates(r, space, nvlink)) consider(candidate_recipe(base, c), st);
  std::stable_sort(out.ranked.begin(), out.ranked.end(), [](const PlannedLayout& a, const PlannedLayout& b) {
    return a.prediction.tokens_per_s_per_gpu > b.prediction.tokens_per_s_per_gpu;
  });
  std::stable_sort(out.closest.begin(), out.closest.end(),
                   [](const MemoryMiss& a, const MemoryMiss& b) { return a.peak_bytes < b.peak_bytes; });
  if (out.closest.size() > 5) out.closest.resize(5);
  const auto most_first = [](const auto& x, const auto& y) { return x.second > y.second; };
  for (const auto& [field, n] : st.refusals) out.refusals.push_back({field, n});
  std::stable_sort(out.refusals.begin(), out.refusals.end(), most_first);
  for (const auto& [why, n] : st.unpredicted) out.unpredicted.push_back({why, n});
  std::stable_sort(out.unpredicted.begin(), out.unpredicted.end(), most_first);
  return out;
}

}  // namespace recipebench
