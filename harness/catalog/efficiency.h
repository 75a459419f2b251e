// Per-operation efficiency of each GPU (docs/catalog.md, "Efficiencies"): how much of a GPU's dense BF16 peak (or
// HBM bandwidth) one kind of operation reaches at a shape, as data with its source. The step-time model carries a
// profile from one GPU to another by these figures, operation by operation (plan/gpu_scaling.h), instead of by one
// ratio of peaks.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace recipebench {

/// The kinds of operation a GPU's efficiency is known for; each has one shape key (shape_key).
enum class Operation {
  kDenseGemm,      ///< a dense BF16 GEMM; key: its smallest dimension (tokens, or a weight's width)
  kGroupedGemm,    ///< the routed experts' grouped GEMM; key: tokens per expert
  kAttention,      ///< causal softmax attention's score and value products; key: sequence tokens
  kGatedDeltaNet,  ///< the chunked gated delta rule (Gated DeltaNet's state update and read-out); key: sequence tokens
  kMemoryBound,    ///< element-wise and data-movement work (norms, permutes, the embedding); no key
  kOptimizer,      ///< the optimizer step's streaming of parameters, gradients and state; no key
};

/// Every operation, in declaration order.
inline constexpr Operation kOperations[] = {Operation::kDenseGemm,     Operation::kGroupedGemm,
                                            Operation::kAttention,     Operation::kGatedDeltaNet,
                                            Operation::kMemoryBound,   Operation::kOptimizer};

/// "dense_gemm", "grouped_gemm", "attention", "gated_deltanet", "memory_bound", "optimizer" (the catalog's names).
const char* to_string(Operation op);

/// "dense_gemm, grouped_gemm, ... or optimizer": every catalog name, for a refusal's "expected".
std::string operation_names();

/// The operation of a catalog name; nullopt for another name.
std::optional<Operation> operation_named(const std::string& name);

/// What an efficiency is a fraction of: true for the HBM bandwidth (memory_bound, optimizer), false for the dense
/// BF16 peak.
bool bandwidth_bound(Operation op);

/// The shape key's name: "smallest_dimension", "tokens_per_expert", "sequence_tokens", or "" (no key).
const char* shape_key(Operation op);

/// One measured or published point: at shape key `key`, the fraction `efficiency` (0 < e <= 1) of the peak.
struct EfficiencyPoint {
  double key = 0;
  double efficiency = 0;
};

/// One GPU's efficiency of one operation over its shape key, from one source.
struct EfficiencyCurve {
  std::string gpu;  ///< catalog GPU name (an alias in the file is resolved to the name)
  Operation operation = Operation::kDenseGemm;
  std::vector<EfficiencyPoint> points;  ///< ascending keys; one point for an operation without key
  /// The measurement series: curves of one series (one tool, one software stack, across GPUs) compare; a profile
  /// is carried between two GPUs only by curves of one series (plan/gpu_scaling.h).
  std::string series;
  std::string source;                   ///< who measured it, where it is published
  std::string url;                      ///< "" when not given
  std::string date;                     ///< YYYY-MM or YYYY-MM-DD
  std::string method;                   ///< how the figures were read or derived from the source
  std::string origin;                   ///< the catalog file that defined the entry
  std::string pointer;                  ///< its JSON pointer in that file: "/efficiencies/3"

  /// The efficiency at shape key `key`: linear in log(key) between the two nearest points, the end point's value
  /// beyond the ends (no extrapolation); the one point's value for an operation without key or a curve of one point.
  double at(double key) const;
};

}  // namespace recipebench
