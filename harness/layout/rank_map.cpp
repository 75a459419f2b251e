#include "layout/rank_map.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <stdexcept>

#include "recipe/layout_check.h"
#include "util/format.h"

namespace recipebench {

namespace {

/// Why `layers` decoder layers do not split over the layout's pipeline stages, with the counts.
std::string layer_split_problem(int64_t layers, const RecipeLayout& L) {
  const std::string n = std::to_string(layers), pp = std::to_string(L.pp);
  if (!L.first_stage_layers && !L.last_stage_layers) {
    char per[32];
    std::snprintf(per, sizeof per, "%.4g", static_cast<double>(layers) / L.pp);
    return n + " layers do not split over PP " + pp + " (" + per + " per stage): give a layer count divisible by " +
           pp + " (--layers) or a layout.layer_split";
  }
  const int64_t f = L.first_stage_layers.value_or(0), l = L.last_stage_layers.value_or(0);
  return "layout.layer_split first " + std::to_string(f) + " + last " + std::to_string(l) + " of " + n +
         " layers leaves " + std::to_string(layers - f - l) + " for " + std::to_string(L.pp - 2) +
         " middle stage(s) of PP " + pp + ": each stage needs a positive whole number of layers";
}

/// Decoder layers per pipeline stage of `model` under layout `L`. Throws std::invalid_argument when the model's
/// layers are unknown (stated counts only), the split does not add up, or a stage's layers do not divide by VPP.
std::vector<int64_t> stage_layers_of(const RecipeLayout& L, const ModelConfig& model) {
  if (!model.architecture_known())
    throw std::invalid_argument("model " + model.name +
                                " is known by its stated counts only: its layers are not known, so no rank map is "
                                "built (name its config.json in model_params.config)");
  std::vector<int64_t> layers = stage_layer_counts(model.num_layers, L.pp, L.first_stage_layers, L.last_stage_layers);
  if (layers.empty()) throw std::invalid_argument(layer_split_problem(model.num_layers, L));
  for (size_t s = 0; s < layers.size(); ++s)
    if (layers[s] % L.vpp != 0)
      throw std::invalid_argument("stage " + std::to_string(s) + " has " + std::to_string(layers[s]) +
                                  " layers, not divisible by VPP " + std::to_string(L.vpp));
  return layers;
}

/// Rank `rank`'s coordinates in `m`'s grids (attention: TP fastest, then CP, DP, PP; experts: ETP, EP, EDP, PP),
/// its node and its microbatches; its layers are the caller's.
RankPlacement placement(const RankMap& m, int rank) {
  RankPlacement q;
  q.rank = rank;
  q.node = rank / m.per_node;
  q.local_rank = rank % m.per_node;
  int rest = rank;
  q.tp = rest % m.tp, rest /= m.tp;
  q.cp = rest % m.cp, rest /= m.cp;
  q.dp = rest % m.dp, rest /= m.dp;
  q.pp = rest;
  rest = rank;
  q.etp = rest % m.etp, rest /= m.etp;
  q.ep = rest % m.ep, rest /= m.ep;
  q.edp = rest % m.edp, rest /= m.edp;
  if (rest != q.pp) throw std::logic_error("attention and expert grids disagree on the pipeline rank");
  q.microbatches = m.microbatches;
  return q;
}

}  // namespace

namespace {
std::atomic<int64_t> g_rank_map_builds{0};
}  // namespace

int64_t rank_map_builds() { return g_rank_map_builds.load(); }

namespace {

/// The map of `r` without its ranks: the grid, the layer split and batches (build_rank_map's first part), and each
/// pipeline stage's layers by virtual stage into `stage_chunks`.
RankMap map_header(const Recipe& r, const ModelConfig& model, std::vector<std::vector<LayerRange>>& stage_chunks) {
  const RecipeLayout& L = r.layout;
  RankMap m;
  m.world = static_cast<int>(L.world());
  m.tp = L.tp;
  m.cp = L.cp;
  m.dp = L.dp;
  m.pp = L.pp;
  m.vpp = L.vpp;
  m.etp = L.effective_etp();
  m.ep = L.ep;
  m.per_node = r.gpu.per_node > 0 ? r.gpu.per_node : m.world;
  if (m.world % (m.etp * m.ep * m.pp) != 0)
    throw std::invalid_argument("expert grid: world " + std::to_string(m.world) +
                                " not divisible by ETP x EP x PP = " + std::to_string(m.etp * m.ep * m.pp));
  m.edp = m.world / (m.etp * m.ep * m.pp);
  m.stage_layers = stage_layers_of(L, model);
  m.rows_per_microbatch = rows_per_microbatch(L.max_tokens_per_gpu, r.workload.row_tokens);
  if (m.rows_per_microbatch < 1) throw std::invalid_argument("max_tokens_per_gpu holds no row");
  m.microbatches = r.workload.global_batch / L.dp / m.rows_per_microbatch;
  m.schedule = L.pp == 1 ? "no pipeline" : L.vpp == 1 ? "1F1B" : "interleaved 1F1B (VPP " + std::to_string(L.vpp) + ")";

  // Layers of virtual stage v on pipeline rank p: chunk v of every stage, stages in order, then chunk v + 1.
  stage_chunks.assign(static_cast<size_t>(L.pp), {});
  int64_t offset = 0;
  for (int v = 0; v < L.vpp; ++v)
    for (int p = 0; p < L.pp; ++p) {
      const int64_t n = m.stage_layers[p] / L.vpp;
      stage_chunks[p].push_back(LayerRange{v, offset, n});
      offset += n;
    }
  return m;
}

}  // namespace

RankMap build_rank_map(const Recipe& r, const ModelConfig& model) {
  ++g_rank_map_builds;
  std::vector<std::vector<LayerRange>> stage_chunks;
  RankMap m = map_header(r, model, stage_chunks);
  m.ranks.reserve(static_cast<size_t>(m.world));
  m.stage_first_rank.assign(static_cast<size_t>(m.pp), m.ranks.max_size());
  for (int rank = 0; rank < m.world; ++rank) {
    RankPlacement q = placement(m, rank);
    q.layers = stage_chunks[q.pp];
    size_t& first = m.stage_first_rank[static_cast<size_t>(q.pp)];
    if (first == m.ranks.max_size()) first = m.ranks.size();
    m.ranks.push_back(std::move(q));
  }
  return m;
}

RankPlacement rank_placement(const RankMap& map, int rank) {
  if (rank < 0 || rank >= map.world)
    throw std::invalid_argument("rank " + std::to_string(rank) + " is not in the layout's " +
                                counted(map.world, "rank"));
  RankPlacement q = placement(map, rank);
  const size_t stage = static_cast<size_t>(q.pp);
  if (stage < map.stage_first_rank.size() && map.stage_first_rank[stage] < map.ranks.size())
    q.layers = map.ranks[map.stage_first_rank[stage]].layers;
  return q;
}

RankMap build_stage_map(const Recipe& r, const ModelConfig& model) {
  std::vector<std::vector<LayerRange>> stage_chunks;
  RankMap m = map_header(r, model, stage_chunks);
  m.stages_only = true;
  const int stage_ranks = m.tp * m.cp * m.dp;  // pp is the attention grid's outermost coordinate
  for (int p = 0; p < m.pp; ++p) {
    RankPlacement q = placement(m, p * stage_ranks);
    q.layers = stage_chunks[static_cast<size_t>(p)];
    m.stage_first_rank.push_back(m.ranks.size());
    m.ranks.push_back(std::move(q));
  }
  return m;
}

void keep_stage_layers(RankMap& map, int pp, int64_t layers) {
  const int64_t have = map.stage_layers.at(static_cast<size_t>(pp));
  if (layers < map.vpp || layers > have)
    throw std::invalid_argument("pipeline stage " + std::to_string(pp) + " has " + std::to_string(have) +
                                " layers over " + std::to_string(map.vpp) + " virtual stages; " +
                                std::to_string(layers) + " layers would " +
                                (layers > have ? "be more than it has" : "leave a virtual stage empty"));
  map.stage_layers[static_cast<size_t>(pp)] = layers;
  for (RankPlacement& q : map.ranks) {
    if (q.pp != pp) continue;
    for (LayerRange& lr : q.layers) lr.count = layers / map.vpp + (lr.virtual_stage < layers % map.vpp ? 1 : 0);
  }
}

std::string format_rank_map(const RankMap& m) {
  std::string out;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "world %d = TP %d x CP %d x DP %d x PP %d; experts: ETP %d x EP %d x EDP %d x PP %d; VPP %d; %d per node\n",
      m.world, m.tp, m.cp, m.dp, m.pp, m.etp, m.ep, m.edp, m.pp, m.vpp, m.per_node);
  out += line;
  std::string split;
  for (size_t i = 0; i < m.stage_layers.size(); ++i) split += (i ? ", " : "") + std::to_string(m.stage_layers[i]);
  std::snprintf(line, sizeof line,
                "layers per pipeline stage: %s; %lld row(s) per microbatch, %lld microbatches per step per DP rank; "
                "schedule: %s\n",
                split.c_str(), static_cast<long long>(m.rows_per_microbatch), static_cast<long long>(m.microbatches),
                m.schedule.c_str());
  out += line;
  std::snprintf(line, sizeof line, "%5s %5s %5s | %3s %3s %3s %3s | %3s %3s %3s | %s\n", "rank", "node", "local", "tp",
                "cp", "dp", "pp", "etp", "ep", "edp", "layers (virtual stage: first-last)");
  out += line;
  for (const auto& q : m.ranks) {
    std::string layers;
    for (const auto& lr : q.layers) {
      if (!layers.empty()) layers += "  ";
      layers += "v" + std::to_string(lr.virtual_stage) + ": " + std::to_string(lr.first) + "-" +
                std::to_string(lr.first + lr.count - 1);
    }
    std::snprintf(line, sizeof line, "%5d %5d %5d | %3d %3d %3d %3d | %3d %3d %3d | %s\n", q.rank, q.node, q.local_rank,
                  q.tp, q.cp, q.dp, q.pp, q.etp, q.ep, q.edp, layers.c_str());
    out += line;
  }
  return out;
}

int64_t ep_capacity_tokens(const RecipeLayout& layout) { return layout.max_tokens_per_gpu / std::max(1, layout.tp); }

}  // namespace recipebench
