#include "plan/compute_profile.h"

#include <cmath>
#include <stdexcept>

namespace recipebench {

namespace {


bool recomputed(ProfileComponent c) { return c != ProfileComponent::kEmbedding && c != ProfileComponent::kLmHeadLoss; }

ProfileComponent component_at(int i) { return static_cast<ProfileComponent>(i); }

}  // namespace

WorkKind work_kind(ProfileComponent c) {
  switch (c) {
    case ProfileComponent::kGdn:
    case ProfileComponent::kAttention:
    case ProfileComponent::kMoeRouter:
    case ProfileComponent::kMoeSharedExpert:
    case ProfileComponent::kMoeExperts:
    case ProfileComponent::kLmHeadLoss:
      return WorkKind::kMatrix;
    case ProfileComponent::kEmbedding:
    case ProfileComponent::kMoeDispatch:
    case ProfileComponent::kMoeCombine:
    case ProfileComponent::kMoeRest:
    case ProfileComponent::kOther:
      return WorkKind::kMemory;
    case ProfileComponent::kDenseMlp:
      return WorkKind::kMatrix;
  }
  return WorkKind::kMemory;
}

const char* to_string(WorkKind k) { return k == WorkKind::kMatrix ? "matrix" : "memory"; }

double moe_layers(const ModelConfig& m, const ChunkShape& s) {
  return m.num_experts > 0 ? static_cast<double>(s.layers() - s.dense_mlp_layers) : 0.0;
}

int64_t every_component_layers(const ModelConfig& m) {
  return m.family == ModelFamily::kTransformer && m.dense_layers > 0 && m.intermediate_size > 0 ? 1 : 0;
}

double component_work(ProfileComponent c, const ModelConfig& m, const ChunkShape& s) {
  const ParamCounts p = count_params(m);
  const double per_rank_tokens = static_cast<double>(s.tokens) / s.tp;  // T / TP
  const double h = static_cast<double>(m.hidden_size);
  const double layers = static_cast<double>(s.layers());
  const double moe = moe_layers(m, s);
  switch (c) {
    case ProfileComponent::kGdn: {
      const double state =
          static_cast<double>(m.linear_num_value_heads) * 4.0 * m.linear_key_head_dim * m.linear_value_head_dim;
      return s.gdn_layers * (2.0 * p.gdn_layer + state) * per_rank_tokens;
    }
    case ProfileComponent::kAttention: {
      const AttentionHeadDims d = attention_head_dims(m);
      const double core = static_cast<double>(s.row_tokens) * m.num_attention_heads * (d.qk + d.v);
      return s.attention_layers * (2.0 * p.attention_layer + core) * per_rank_tokens;
    }
    case ProfileComponent::kMoeRouter:
      return moe * 2.0 * h * m.num_experts * per_rank_tokens;
    case ProfileComponent::kMoeSharedExpert:
      return moe * 6.0 * h * m.shared_expert_ffn * per_rank_tokens;
    case ProfileComponent::kMoeExperts:
      return moe * 6.0 * h * m.expert_ffn * m.top_k * per_rank_tokens;
    case ProfileComponent::kDenseMlp:
      return s.dense_mlp_layers * 6.0 * h * m.intermediate_size * per_rank_tokens;
    case ProfileComponent::kLmHeadLoss:
      return s.lm_head ? 2.0 * h * m.vocab_size * per_rank_tokens : 0.0;
    case ProfileComponent::kEmbedding:
      return s.embedding ? h * kActivationBytes * per_rank_tokens : 0.0;
    case ProfileComponent::kMoeDispatch:
    case ProfileComponent::kMoeCombine:
      return moe * m.top_k * h * kActivationBytes * per_rank_tokens;
    case ProfileComponent::kMoeRest:
      return moe * h * kActivationBytes * per_rank_tokens;
    case ProfileComponent::kOther:
      return layers * h * kActivationBytes * per_rank_tokens;
  }
  return 0;
}

double component_runs(ProfileComponent c, const ModelConfig& m, const ChunkShape& s) {
  switch (c) {
    case ProfileComponent::kEmbedding:
      return s.embedding ? 1 : 0;
    case ProfileComponent::kLmHeadLoss:
      return s.lm_head ? 1 : 0;
    case ProfileComponent::kGdn:
      return static_cast<double>(s.gdn_layers);
    case ProfileComponent::kAttention:
      return static_cast<double>(s.attention_layers);
    case ProfileComponent::kDenseMlp:
      return static_cast<double>(s.dense_mlp_layers);
    case ProfileComponent::kOther:
      return static_cast<double>(s.layers());
    case ProfileComponent::kMoeSharedExpert:
      return m.shared_expert_ffn > 0 ? moe_layers(m, s) : 0.0;
    case ProfileComponent::kMoeRouter:
    case ProfileComponent::kMoeDispatch:
    case ProfileComponent::kMoeExperts:
    case ProfileComponent::kMoeCombine:
    case ProfileComponent::kMoeRest:
      return moe_layers(m, s);
  }
  return 0;
}

void calibrate(ProfiledRank& r, double factor) {
  if (!(factor > 0) || !std::isfinite(factor))
    throw std::invalid_argument(r.source + ": calibration factor " + std::to_string(factor) + ", expected > 0");
  for (ProfiledChunk& ch : r.chunks)
    for (PhaseCells* cells : {&ch.forward, &ch.backward})
      for (auto& phase : *cells)
        for (double& v : phase) v *= factor;
  r.optimizer_seconds *= factor;
  r.between_passes_seconds *= factor;
}

double component_params(ProfileComponent c, const ModelConfig& m, const ChunkShape& s) {
  const double h = static_cast<double>(m.hidden_size);
  const ParamCounts p = count_params(m);
  switch (c) {
    case ProfileComponent::kGdn:
      return s.gdn_layers * static_cast<double>(p.gdn_layer) / s.tp;
    case ProfileComponent::kAttention:
      return s.attention_layers * static_cast<double>(p.attention_layer) / s.tp;
    case ProfileComponent::kMoeRouter:
      return moe_layers(m, s) * h * m.num_experts;
    case ProfileComponent::kMoeSharedExpert:
      return moe_layers(m, s) * 3 * h * m.shared_expert_ffn / s.tp;
    case ProfileComponent::kMoeExperts:
      return moe_layers(m, s) * static_cast<double>(m.num_experts) / s.ep * 3 * h * m.expert_ffn / s.etp;
    case ProfileComponent::kDenseMlp:
      return s.dense_mlp_layers * static_cast<double>(p.dense_mlp_layer) / s.tp;
    case ProfileComponent::kLmHeadLoss:
      return s.lm_head ? h * m.vocab_size / s.tp : 0.0;
    case ProfileComponent::kEmbedding:
      return s.embedding ? h * m.vocab_size / s.tp : 0.0;
    default:
      return 0;
  }
}

double chunk_params(const ModelConfig& m, const ChunkShape& s) {
  double sum = 0;
  for (int c = 0; c < kProfileComponents; ++c) sum += component_params(component_at(c), m, s);
  return sum;
}

double weight_bytes_per_pass(ProfileComponent c, const ModelConfig& m, const ChunkShape& s, bool backward) {
  // The embedding's forward reads only the tokens' rows (its work); its backward writes the table's gradient.
  if (c == ProfileComponent::kEmbedding) return backward ? kActivationBytes * component_params(c, m, s) : 0.0;
  return (backward ? 2 * kActivationBytes : kActivationBytes) * component_params(c, m, s);
}

namespace {

/// What a pass's fixed cost of component `c` scales with: the weights it streams (bytes), or for a component
/// without weights the chunk's layers (a per-layer latency).
double fixed_regressor(ProfileComponent c, const ModelConfig& m, const ChunkShape& s, bool backward) {
  if (component_params(c, m, s) > 0) return weight_bytes_per_pass(c, m, s, backward);
  return static_cast<double>(s.layers());
}

/// One measured cell: its fixed regressor, its work and its seconds.
struct CellPoint {
  double fixed = 0, work = 0, seconds = 0;
  int64_t tokens = 0;
  bool weights = false;  ///< `fixed` is streamed weight bytes (else layers)
};

/// Seconds per fixed unit and per unit of work of one (component, pass kind) from its points: least squares of
/// seconds = a fixed + k work when the points span two or more microbatch sizes and both come out >= 0; else a =
/// `default_a` and k from the rest (at least 0).
std::pair<double, double> fit_cell(const std::vector<CellPoint>& points, double default_a, bool& two_point) {
  double ff = 0, fw = 0, ww = 0, fy = 0, wy = 0, sum_w = 0, rest = 0;
  int64_t first_tokens = points.empty() ? 0 : points.front().tokens;
  bool spans = false;
  for (const CellPoint& p : points) {
    ff += p.fixed * p.fixed;
    fw += p.fixed * p.work;
    ww += p.work * p.work;
    fy += p.fixed * p.seconds;
    wy += p.work * p.seconds;
    sum_w += p.work;
    rest += p.seconds - default_a * p.fixed;
    spans = spans || p.tokens != first_tokens;
  }
  const double det = ff * ww - fw * fw;
  if (spans && det > 1e-12 * ff * ww) {
    const double a = (fy * ww - wy * fw) / det, k = (wy * ff - fy * fw) / det;
    if (a >= 0 && k >= 0) {
      two_point = true;
      return {a, k};
    }
  }
  return {default_a, sum_w > 0 ? std::max(0.0, rest) / sum_w : 0.0};
}

using CellPoints = std::array<std::array<std::vector<CellPoint>, kProfileComponents>, 2>;  // [fwd, bwd][component]

/// Refuses a rank of another model or device than the first's, or one without passes.
void check_same_profile(const UnitCosts& u, const ProfiledRank& r) {
  if (r.model != u.model)
    throw std::invalid_argument("profiles of two models (" + u.model + ", " + r.model + "): give one model's");
  if (r.gpu != u.gpu)
    throw std::invalid_argument("profiles measured on two devices (" + u.gpu + ", " + r.gpu + "): give one device's");
  if (r.kernels != u.kernels)
    throw std::invalid_argument("profiles of two kernel sets (bench.kernels " + to_string(u.kernels) + ", " +
                                to_string(r.kernels) + "): give one set's");
  if (r.chunks.empty()) throw std::invalid_argument(r.source + ": the profile holds no pass");
}

/// One measured chunk's cells as points of each (pass kind, component) with work, and its recompute seconds and
/// work summed per component.
void add_chunk_points(const ModelConfig& widths, const ProfiledChunk& ch, CellPoints& points, ComponentCells& rec_s,
                      ComponentCells& rec_w) {
  for (int c = 0; c < kProfileComponents; ++c) {
    const ProfileComponent comp = component_at(c);
    const double w = component_work(comp, widths, ch.shape);
    if (w <= 0) continue;
    for (int kind = 0; kind < 2; ++kind) {
      const bool backward = kind == 1;
      const double y = backward ? ch.backward[kBackwardIndex][c] : ch.forward[kForwardIndex][c];
      points[kind][c].push_back({fixed_regressor(comp, widths, ch.shape, backward), w, y, ch.shape.tokens,
                                 component_params(comp, widths, ch.shape) > 0});
    }
    if (ch.backward[kRecomputeIndex][c] > 0) {
      rec_s[c] += ch.backward[kRecomputeIndex][c];
      rec_w[c] += w;
    }
  }
}

}  // namespace

UnitCosts fit_unit_costs(const std::vector<ProfiledRank>& ranks) {
  if (ranks.empty()) throw std::invalid_argument("no profiled rank to fit the compute profile from");
  UnitCosts u;
  u.gpu = ranks.front().gpu;
  u.model = ranks.front().model;
  u.kernels = ranks.front().kernels;
  ComponentCells rec_s{}, rec_w{};
  CellPoints points;
  double opt_s = 0, opt_bytes = 0, between_s = 0, between_p = 0;
  for (const ProfiledRank& r : ranks) {
    opt_s += r.optimizer_seconds;
    opt_bytes += r.optimizer_bytes_per_param * r.optimizer_params;  // docs/optimizer.md, "Memory traffic"
  }
  u.weight_stream_bytes_per_s = opt_s > 0 ? opt_bytes / opt_s : 0;
  for (const ProfiledRank& r : ranks) {
    check_same_profile(u, r);
    u.sources.push_back(r.source);
    for (const ProfiledChunk& ch : r.chunks) add_chunk_points(r.widths, ch, points, rec_s, rec_w);
    double params = 0;
    for (const ProfiledChunk& ch : r.chunks) params += chunk_params(r.widths, ch.shape);
    between_s += std::max(0.0, r.between_passes_seconds);
    between_p += params * static_cast<double>(r.microbatches);
  }
  const double per_byte = u.weight_stream_bytes_per_s > 0 ? 1 / u.weight_stream_bytes_per_s : 0;
  for (int c = 0; c < kProfileComponents; ++c) {
    u.measured_forward[c] = !points[0][c].empty();
    u.measured_backward[kBackwardIndex][c] = !points[1][c].empty();
    for (int kind = 0; kind < 2; ++kind) {
      if (points[kind][c].empty()) continue;
      bool two = false;
      // One microbatch size: the fixed part is the weights' streaming (none for a component without weights).
      const auto [a, k] = fit_cell(points[kind][c], points[kind][c].front().weights ? per_byte : 0.0, two);
      u.fixed_seconds_per_unit[kind][c] = a;
      (kind == 0 ? u.forward_pass[kForwardIndex] : u.backward_pass[kBackwardIndex])[c] = k;
      u.fixed_fitted = u.fixed_fitted || two;
    }
    u.measured_backward[kRecomputeIndex][c] = rec_w[c] > 0;
    if (rec_w[c] > 0) u.backward_pass[kRecomputeIndex][c] = rec_s[c] / rec_w[c];
  }
  u.between_seconds_per_param = between_p > 0 ? between_s / between_p : 0;
  return u;
}

std::array<ComponentCells, 2> achieved_flops(const UnitCosts& costs) {
  std::array<ComponentCells, 2> out{};
  for (int c = 0; c < kProfileComponents; ++c) {
    if (work_kind(component_at(c)) != WorkKind::kMatrix) continue;
    const double f = costs.forward_pass[kForwardIndex][c], b = costs.backward_pass[kBackwardIndex][c];
    out[0][c] = f > 0 ? 1 / f : 0;
    out[1][c] = b > 0 ? 2 / b : 0;  // a backward does twice its forward's FLOP (input and weight gradients)
  }
  return out;
}

PhaseCells pass_cells(const UnitCosts& costs, const ModelConfig& m, const ChunkShape& s, bool backward,
                      const PassCostOptions& o) {
  PhaseCells out{};
  for (int c = 0; c < kProfileComponents; ++c) {
    const ProfileComponent comp = component_at(c);
    const double w = component_work(comp, m, s);
    if (w <= 0) continue;
    if (!costs.measured_forward[c])
      throw ProfileGap(std::string("the profile never measured ") + to_string(comp) +
                                  ", which this layout's chunk runs: add a profile of a rank that holds it");
    const double runs = component_runs(comp, m, s);
    const double stream = costs.fixed_seconds_per_unit[backward ? 1 : 0][c] * fixed_regressor(comp, m, s, backward) +
                          costs.launch_seconds_per_run[backward ? 1 : 0][c] * runs;
    if (!backward) {
      out[kForwardIndex][c] = (stream + costs.forward_pass[kForwardIndex][c] * w) * o.scale[c];
      continue;
    }
    out[kBackwardIndex][c] = (stream + costs.backward_pass[kBackwardIndex][c] * w) * o.scale[c];
    if (comp == ProfileComponent::kOther)
      out[kBackwardIndex][c] += costs.between_seconds_per_param * chunk_params(m, s) * o.scale[c];
    if (o.recompute[c] > 0 && recomputed(comp)) {
      const double per_unit =
          costs.measured_backward[kRecomputeIndex][c] ? costs.backward_pass[kRecomputeIndex][c] : costs.forward_pass[kForwardIndex][c];
      out[kRecomputeIndex][c] =
          (per_unit * w + costs.launch_seconds_per_run[0][c] * runs) * o.scale[c] * o.recompute[c];
    }
  }
  return out;
}

double cells_seconds(const PhaseCells& cells) {
  double s = 0;
  for (const auto& phase : cells)
    for (double v : phase) s += v;
  return s;
}

std::vector<ChunkShape> chunk_shapes(const RankMap& map, const ModelConfig& m, int pp, int64_t row_tokens) {
  if (pp < 0 || pp >= map.pp) throw std::invalid_argument("pipeline rank " + std::to_string(pp) + " outside the map");
  const RankPlacement* first = nullptr;
  if (map.stage_first_rank.size() == static_cast<size_t>(map.pp)) {  // the map's index (build_rank_map)
    const size_t i = map.stage_first_rank[static_cast<size_t>(pp)];
    if (i < map.ranks.size() && map.ranks[i].pp == pp) first = &map.ranks[i];
  }
  for (size_t i = 0; first == nullptr && i < map.ranks.size(); ++i)
    if (map.ranks[i].pp == pp) first = &map.ranks[i];
  if (first == nullptr) throw std::invalid_argument("no rank of pipeline rank " + std::to_string(pp) + " in the map");
  std::vector<ChunkShape> out;
  for (const LayerRange& range : first->layers) {
    ChunkShape s;
    for (int64_t i = range.first; i < range.first + range.count; ++i) {
      (m.is_full_attention(i) ? s.attention_layers : s.gdn_layers) += 1;
      if (m.family == ModelFamily::kTransformer && i < m.dense_layers) s.dense_mlp_layers += 1;
    }
    s.embedding = pp == 0 && range.virtual_stage == 0;
    s.lm_head = pp == map.pp - 1 && range.virtual_stage == map.vpp - 1;
    s.tokens = map.rows_per_microbatch * row_tokens / map.cp;
    s.row_tokens = row_tokens;
    s.tp = map.tp;
    s.ep = map.ep;
    s.etp = map.etp;
    s.cp = map.cp;
    out.push_back(s);
  }
  return out;
}

}  // namespace recipebench
