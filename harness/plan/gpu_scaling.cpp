#include "plan/gpu_scaling.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace recipebench {

std::vector<OperationWork> component_operations(ProfileComponent c, const ModelConfig& m, const ChunkShape& s) {
  const ParamCounts p = count_params(m);
  const double tokens = static_cast<double>(s.tokens) / s.tp;  // T / TP
  const double h = static_cast<double>(m.hidden_size);
  const double total = component_work(c, m, s);
  const double gemm_key = std::min(tokens, h);
  switch (c) {
    case ProfileComponent::kGdn: {
      const double projections = s.gdn_layers * 2.0 * p.gdn_layer * tokens;
      return {{Operation::kDenseGemm, projections, gemm_key},
              {Operation::kGatedDeltaNet, total - projections, static_cast<double>(s.row_tokens)}};
    }
    case ProfileComponent::kAttention: {
      const double projections = s.attention_layers * 2.0 * p.attention_layer * tokens;
      return {{Operation::kDenseGemm, projections, gemm_key},
              {Operation::kAttention, total - projections, static_cast<double>(s.row_tokens)}};
    }
    case ProfileComponent::kMoeRouter:
      return {{Operation::kDenseGemm, total, std::min(tokens, static_cast<double>(m.num_experts))}};
    case ProfileComponent::kMoeSharedExpert:
      return {{Operation::kDenseGemm, total, std::min(tokens, static_cast<double>(m.shared_expert_ffn))}};
    case ProfileComponent::kDenseMlp:
      return {{Operation::kDenseGemm, total, std::min(tokens, static_cast<double>(m.intermediate_size))}};
    case ProfileComponent::kMoeExperts: {
      // ETP > 1: the ETP ranks' rows gathered (x ETP rows per expert, each GEMM F / ETP wide).
      const double per_expert = m.num_experts > 0 ? tokens * m.top_k * s.ep / m.num_experts * s.etp : 0;
      return {{Operation::kGroupedGemm, total, per_expert}};
    }
    case ProfileComponent::kLmHeadLoss:
      return {{Operation::kDenseGemm, total, gemm_key}};
    case ProfileComponent::kEmbedding:
    case ProfileComponent::kMoeDispatch:
    case ProfileComponent::kMoeCombine:
    case ProfileComponent::kMoeRest:
    case ProfileComponent::kOther:
      return {{Operation::kMemoryBound, total, 0}};
  }
  return {};
}

double operation_peak(const GpuSpec& gpu, Operation op) {
  return bandwidth_bound(op) ? gpu.memory_bandwidth : gpu.peak_bf16_flops;
}

OperationScale scale_operation(const HardwareCatalog& catalog, const GpuSpec& from, const GpuSpec& to, Operation op,
                               double key) {
  if (!(operation_peak(from, op) > 0) || !(operation_peak(to, op) > 0))
    throw std::invalid_argument("GPU scale needs the peak FLOP/s and HBM bandwidth of " + from.name + " and " +
                                to.name);
  OperationScale out;
  out.operation = op;
  out.key = key;
  const EfficiencyCurve* a = catalog.efficiency(from.name, op);
  const EfficiencyCurve* b = catalog.efficiency(to.name, op);
  out.fallback = a == nullptr || b == nullptr;
  if (a == nullptr) out.missing = from.name;
  if (b == nullptr) out.missing += (out.missing.empty() ? "" : " and ") + to.name;
  if (!out.fallback && a->series != b->series) out.series_note = a->series + " -> " + b->series;
  if (!out.fallback) {
    out.from_efficiency = a->at(key);
    out.to_efficiency = b->at(key);
    out.from_source = a->source;
    out.to_source = b->source;
  }
  out.ratio = (out.from_efficiency * operation_peak(from, op)) / (out.to_efficiency * operation_peak(to, op));
  return out;
}

GpuScaling per_operation_scaling(const HardwareCatalog& catalog, const GpuSpec& from, const GpuSpec& to,
                                 const ModelConfig& m, ChunkShape shape) {
  shape.gdn_layers = std::max<int64_t>(shape.gdn_layers, 1);
  shape.attention_layers = std::max<int64_t>(shape.attention_layers, 1);
  shape.dense_mlp_layers = every_component_layers(m);
  shape.embedding = shape.lm_head = true;
  GpuScaling out;
  auto remember = [&](const OperationScale& s) {
    for (const OperationScale& seen : out.operations)
      if (seen.operation == s.operation && seen.key == s.key) return;
    out.operations.push_back(s);
  };
  for (int c = 0; c < kProfileComponents; ++c) {
    double profile_seconds = 0, target_seconds = 0;
    for (const OperationWork& w : component_operations(static_cast<ProfileComponent>(c), m, shape)) {
      if (!(w.work > 0)) continue;
      const OperationScale s = scale_operation(catalog, from, to, w.operation, w.key);
      const double on_profile_gpu = w.work / (s.from_efficiency * operation_peak(from, w.operation));
      profile_seconds += on_profile_gpu;
      target_seconds += on_profile_gpu * s.ratio;
      remember(s);
    }
    if (profile_seconds > 0) out.scale[c] = target_seconds / profile_seconds;
  }
  const OperationScale optimizer = scale_operation(catalog, from, to, Operation::kOptimizer, 0);
  out.optimizer_scale = optimizer.ratio;
  remember(optimizer);
  std::sort(out.operations.begin(), out.operations.end(), [](const OperationScale& a, const OperationScale& b) {
    return a.operation != b.operation ? a.operation < b.operation : a.key < b.key;
  });
  out.single_ratio = from.peak_bf16_flops / to.peak_bf16_flops;
  return out;
}

namespace {

std::string key_text(const OperationScale& s) {
  const std::string name = shape_key(s.operation);
  if (name.empty()) return "";
  std::string readable = name;
  std::replace(readable.begin(), readable.end(), '_', ' ');
  return fmt::format(" at {} {:.0f}", readable, s.key);
}

}  // namespace

std::vector<std::string> scaling_lines(const GpuScaling& s, const std::string& from, const std::string& to) {
  std::vector<std::string> out;
  std::vector<std::string> sources;
  auto cite = [&](const std::string& gpu, Operation op, const std::string& source) {
    const std::string line = gpu + " " + to_string(op) + ": " + source;
    if (std::find(sources.begin(), sources.end(), line) == sources.end()) sources.push_back(line);
  };
  for (const OperationScale& o : s.operations) {
    const char* peak = bandwidth_bound(o.operation) ? "HBM bandwidths" : "dense BF16 peaks";
    if (o.fallback) {
      out.push_back(fmt::format("{}{}: no efficiency of {} in the catalog: ratio of {} x {:.3f}",
                                to_string(o.operation), key_text(o), o.missing, peak, o.ratio));
      continue;
    }
    out.push_back(fmt::format("{}{}: {} {:.3g} -> {} {:.3g} of peak: x {:.3f}{}", to_string(o.operation), key_text(o),
                              from, o.from_efficiency, to, o.to_efficiency, o.ratio,
                              o.series_note.empty() ? ""
                                                    : " (two measurement series, " + o.series_note +
                                                          ": the ratio carries their stacks' difference too)"));
    cite(from, o.operation, o.from_source);
    cite(to, o.operation, o.to_source);
  }
  for (const std::string& c : sources) out.push_back("source, " + c);
  return out;
}

}  // namespace recipebench
