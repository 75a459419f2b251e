// Carrying a profile from the GPU it was measured on to another, operation by operation (docs/step-time.md,
// "Scaling to another GPU"): each component's work is split into the operations it runs (a Gated DeltaNet mixer is
// dense GEMMs for its projections and the chunked delta rule), each operation's seconds scale by the ratio of what
// the two GPUs reach at that operation's shape (catalog/efficiency.yaml: efficiency x peak), and a pair without
// data for an operation falls back to the ratio of peaks (dense BF16 FLOP/s, or HBM bandwidth), said in the notes.
#pragma once

#include <string>
#include <vector>

#include "catalog/efficiency.h"
#include "catalog/hardware.h"
#include "plan/compute_profile.h"

namespace recipebench {

/// One operation of a component in one forward pass: its work (FLOP, or bytes for a bandwidth-bound operation, as
/// component_work counts them) and its shape key (catalog/efficiency.h shape_key; 0 for none).
struct OperationWork {
  Operation operation = Operation::kDenseGemm;
  double work = 0;
  double key = 0;
};

/// The operations of component `c` in one forward pass of `s` (their work sums to component_work(c, m, s)):
///   gdn          dense GEMM 2 P_gdn T/TP (key min(T/TP, h)) + gated delta rule Hv 4 dk dv T/TP (key S)
///   attention    dense GEMM 2 P_attn T/TP (key min(T/TP, h)) + attention 2 S Hq d T/TP (key S)
///   moe_router   dense GEMM (key min(T/TP, E));  moe_shared_expert dense GEMM (key min(T/TP, Fs));
///   moe_experts  grouped GEMM (key T/TP x k x EP x ETP / E: a rank's rows per local expert, balanced routing);
///   lm_head_loss dense GEMM (key min(T/TP, h));  embedding, moe_dispatch, moe_combine, moe_rest, other: memory-bound
/// with T the chunk's tokens, S the row's, h hidden, E experts, k top-k, Fs the shared expert's width.
std::vector<OperationWork> component_operations(ProfileComponent c, const ModelConfig& m, const ChunkShape& s);

/// The peak an operation's efficiency is a fraction of on `gpu`: its HBM bandwidth (bytes/s) for a bandwidth-bound
/// operation, else its dense BF16 FLOP/s.
double operation_peak(const GpuSpec& gpu, Operation op);

/// How one operation was carried between the two GPUs.
struct OperationScale {
  Operation operation = Operation::kDenseGemm;
  double key = 0;                ///< the target's shape key
  double from_efficiency = 1;    ///< fraction of the profile GPU's peak (1 when the fallback rule applies)
  double to_efficiency = 1;      ///< fraction of the target GPU's peak (1 when the fallback rule applies)
  double ratio = 1;              ///< target seconds / profile seconds
  bool fallback = false;         ///< no curve for one of the GPUs: the ratio of peaks
  std::string missing;      ///< the GPUs without a curve ("B200", "H200 and B200"); "" when both have one
  /// "SERIES_FROM -> SERIES_TO" when the two curves are of different measurement series (the ratio then carries
  /// the two stacks' difference as well as the GPUs'); "" for one series or the fallback.
  std::string series_note;
  std::string from_source;       ///< the profile GPU's curve's source ("" in the fallback)
  std::string to_source;         ///< the target GPU's curve's source ("" in the fallback)
};

/// The scale of every component and of the optimizer step from GPU `from` to GPU `to` at the target's chunk shape.
struct GpuScaling {
  ComponentCells scale = kUnitCells;  ///< target seconds / profile seconds per component
  double optimizer_scale = 1;                              ///< the optimizer step's
  /// Each operation met, once: what carried it (efficiencies and sources, or the fallback).
  std::vector<OperationScale> operations;
  /// The same with one ratio of dense BF16 peaks for everything (the rule before per-operation data), for
  /// comparison: target seconds / profile seconds.
  double single_ratio = 1;
};

/// The ratio of one operation at `key`: (e_from x peak_from) / (e_to x peak_to), peaks being the dense BF16 FLOP/s
/// or, for a bandwidth-bound operation, the HBM bandwidth; e the catalog's curves at `key` (EfficiencyCurve::at),
/// both 1 when either GPU has none (the fallback rule); curves of two series are used and said (series_note).
OperationScale scale_operation(const HardwareCatalog& catalog, const GpuSpec& from, const GpuSpec& to, Operation op,
                               double key);

/// Per component, target seconds / profile seconds: sum over its operations of work_i / (e_to,i peak_to,i) over
/// the same sum on the profile GPU (component_operations of `shape`, a target chunk; every component is given work:
/// the shape is taken with at least one layer of each kind and with the embedding and the output layer). Throws
/// std::invalid_argument when a GPU lacks a peak or a bandwidth.
GpuScaling per_operation_scaling(const HardwareCatalog& catalog, const GpuSpec& from, const GpuSpec& to,
                                 const ModelConfig& m, ChunkShape shape);

/// One line per operation: "grouped_gemm at tokens per expert 1280: H200 0.377 -> B200 0.394 of peak: x 0.421",
/// or "attention at sequence tokens 8192: no efficiency of H200 and B200 in the catalog: ratio of dense BF16 peaks
/// x 0.440"; then one "source, H200 dense_gemm: ..." line per curve used.
std::vector<std::string> scaling_lines(const GpuScaling& s, const std::string& from, const std::string& to);

}  // namespace recipebench
