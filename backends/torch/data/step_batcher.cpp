#include "data/step_batcher.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <string>

namespace recipebench::train {

StepBatcher::StepBatcher(const Recipe& recipe, const ModelConfig& model, const RunOptions& o, const RunContext& ctx)
    : global_batch_(recipe.workload.global_batch),
      row_tokens_(recipe.workload.row_tokens),
      max_tokens_(recipe.layout.max_tokens_per_gpu),
      tp_(ctx.map.tp),
      dp_(ctx.map.dp),
      dp_rank_(ctx.me.dp),
      rows_per_rank_(recipe.workload.global_batch / ctx.map.dp),
      pp_(ctx.map.pp),
      vpp_(ctx.map.vpp),
      device_(ctx.device) {
  try {
    if (o.settings.data.source == DataSource::kFile)
      source_ = std::make_unique<FileRows>(o.settings.data.path, row_tokens_, model.vocab_size);
    else
      source_ = std::make_unique<SyntheticRows>(model.vocab_size, row_tokens_, o.settings.data.supervised_token_ratio,
                                                o.settings.seed, o.settings.data.min_row_tokens);
  } catch (const std::exception& e) {
    throw RunError(std::string("data: ") + e.what());
  }
}

std::vector<Microbatch> StepBatcher::pack(const Rows& rows, int64_t dp_rank) const {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < rows_per_rank_; ++i)
    lengths.push_back(padded_to_tp(rows.lengths[dp_rank * rows_per_rank_ + i]));
  return pack_first_fit(lengths, max_tokens_);
}

PipelineMicrobatch StepBatcher::to_device(const Rows& rows, const Microbatch& mb) const {
  const int64_t first_row = dp_rank_ * rows_per_rank_;
  int64_t longest = 0;
  for (const int64_t i : mb) longest = std::max(longest, rows.lengths[first_row + i]);
  longest = padded_to_tp(longest);  // row_tokens is a multiple of TP
  std::vector<int64_t> ids_host;
  std::vector<uint8_t> mask_host;
  for (const int64_t i : mb) {
    const int64_t at = (first_row + i) * row_tokens_;
    ids_host.insert(ids_host.end(), rows.tokens.begin() + at, rows.tokens.begin() + at + longest);
    mask_host.insert(mask_host.end(), rows.mask.begin() + at, rows.mask.begin() + at + longest);
  }
  const auto k = static_cast<int64_t>(mb.size());
  auto ids = torch::from_blob(ids_host.data(), {k, longest}, torch::kInt64).clone().to(device_);
  auto mask = torch::from_blob(mask_host.data(), {k, longest}, torch::kUInt8).clone().to(device_);
  return {ids, mask};
}

StepBatch StepBatcher::next() {
  StepBatch batch;
  const Rows rows = source_->next(global_batch_);
  for (int64_t i = 0; i < rows.rows; ++i) {
    batch.tokens += rows.lengths[i];
    for (int64_t t = 1; t < row_tokens_; ++t) batch.supervised += rows.mask[i * row_tokens_ + t];
  }
  size_t count = 0;
  std::vector<Microbatch> mine;
  for (int64_t r = 0; r < dp_; ++r) {
    auto p = pack(rows, r);
    count = std::max(count, p.size());
    if (r == dp_rank_) mine = std::move(p);
  }
  // The interleaved schedule needs a multiple of PP microbatches (layout_check: for full rows); with shorter rows
  // the packed count is rounded up (never past one row per microbatch: rows_per_rank is such a multiple).
  if (vpp_ > 1) count = (count + pp_ - 1) / pp_ * pp_;
  split_to_count(mine, static_cast<int64_t>(count));
  for (const auto& mb : mine) batch.microbatches.push_back(to_device(rows, mb));
  return batch;
}

}  // namespace recipebench::train
