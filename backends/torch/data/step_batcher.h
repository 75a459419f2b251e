// The rows of each training step, packed into this rank's microbatches and copied to its device (outside the
// timed region: data loading is not timed).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "catalog/models.h"
#include "data/packing.h"
#include "data/rows.h"
#include "pipeline/pipeline_executor.h"
#include "rank/run_context.h"
#include "recipe/recipe.h"

namespace recipebench::train {

/// One step's data on this rank.
struct StepBatch {
  std::vector<PipelineMicrobatch> microbatches;  ///< this rank's, on its device: ids int64, mask uint8 [rows, len]
  int64_t tokens = 0;      ///< the step's tokens over all ranks (the rows' lengths, padding excluded)
  int64_t supervised = 0;  ///< the step's supervised tokens over all ranks (the loss's denominator)
};

/// Every rank draws the step's whole global batch (the one-rank order) and keeps its DP rank's contiguous block of
/// global_batch / DP rows, packed first-fit into microbatches of at most max_tokens_per_gpu tokens (dynamic
/// batching, data/packing.h), each row's length padded to a multiple of TP (sequence parallel splits the sequence
/// over TP); every rank trains as many microbatches as the DP rank with the most (a multiple of PP with VPP > 1).
/// The TP ranks and the pipeline stages of a DP rank train on the same rows. Every rank holds the whole global
/// batch, so the step's counts and every rank's packing are known without a collective.
class StepBatcher {
 public:
  /// The rows come from options.settings.data.path (DataSource::kFile) or the seeded synthetic generator. Throws
  /// RunError ("data: ...") when the source cannot be opened.
  StepBatcher(const Recipe& recipe, const ModelConfig& model, const RunOptions& options, const RunContext& ctx);

  /// The next step's rows, packed and on the device.
  StepBatch next();

 private:
  /// The microbatches of DP rank `dp_rank` (row indices within its block).
  std::vector<Microbatch> pack(const Rows& rows, int64_t dp_rank) const;
  /// The rows of `mb` as [rows, longest] tensors on the device (longest padded to a multiple of TP).
  PipelineMicrobatch to_device(const Rows& rows, const Microbatch& mb) const;
  int64_t padded_to_tp(int64_t length) const { return (length + tp_ - 1) / tp_ * tp_; }

  std::unique_ptr<RowSource> source_;
  int64_t global_batch_, row_tokens_, max_tokens_, tp_, dp_, dp_rank_, rows_per_rank_;
  int pp_, vpp_;
  c10::Device device_;
};

}  // namespace recipebench::train
