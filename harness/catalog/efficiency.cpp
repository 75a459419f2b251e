#include "catalog/efficiency.h"

#include <cmath>
#include <iterator>

namespace recipebench {

const char* to_string(Operation op) {
  switch (op) {
    case Operation::kDenseGemm:
      return "dense_gemm";
    case Operation::kGroupedGemm:
      return "grouped_gemm";
    case Operation::kAttention:
      return "attention";
    case Operation::kGatedDeltaNet:
      return "gated_deltanet";
    case Operation::kMemoryBound:
      return "memory_bound";
    case Operation::kOptimizer:
      return "optimizer";
  }
  return "?";
}

std::string operation_names() {
  std::string out;
  for (size_t i = 0; i < std::size(kOperations); ++i)
    out += std::string(i == 0 ? "" : i + 1 == std::size(kOperations) ? " or " : ", ") + to_string(kOperations[i]);
  return out;
}

std::optional<Operation> operation_named(const std::string& name) {
  for (Operation op : kOperations)
    if (name == to_string(op)) return op;
  return std::nullopt;
}

bool bandwidth_bound(Operation op) { return op == Operation::kMemoryBound || op == Operation::kOptimizer; }

const char* shape_key(Operation op) {
  switch (op) {
    case Operation::kDenseGemm:
      return "smallest_dimension";
    case Operation::kGroupedGemm:
      return "tokens_per_expert";
    case Operation::kAttention:
    case Operation::kGatedDeltaNet:
      return "sequence_tokens";
    case Operation::kMemoryBound:
    case Operation::kOptimizer:
      return "";
  }
  return "";
}

double EfficiencyCurve::at(double key) const {
  if (points.empty()) return 0;
  if (points.size() == 1 || !(key > points.front().key)) return points.front().efficiency;
  if (key >= points.back().key) return points.back().efficiency;
  for (size_t i = 1; i < points.size(); ++i) {
    const EfficiencyPoint& a = points[i - 1];
    const EfficiencyPoint& b = points[i];
    if (key > b.key) continue;
    const double t = (std::log(key) - std::log(a.key)) / (std::log(b.key) - std::log(a.key));
    return a.efficiency + t * (b.efficiency - a.efficiency);
  }
  return points.back().efficiency;
}

}  // namespace recipebench
