#include "schedule/pipeline_schedule.h"
#include "util/format.h"

#include <algorithm>
#include <stdexcept>

namespace recipebench {

namespace {

void check(int pp, int vpp, int stage, int64_t microbatches) {
  if (pp < 1 || vpp < 1)
    throw std::invalid_argument("pipeline schedule: PP " + std::to_string(pp) + " and VPP " + std::to_string(vpp) +
                                " must be >= 1");
  if (stage < 0 || stage >= pp)
    throw std::invalid_argument("pipeline schedule: stage " + std::to_string(stage) + " outside 0.." +
                                std::to_string(pp - 1));
  if (microbatches < 1)
    throw std::invalid_argument("pipeline schedule: " + std::to_string(microbatches) + " microbatches, expected >= 1");
  if (vpp > 1 && (pp < 2 || microbatches % pp != 0))
    throw std::invalid_argument("interleaved pipeline schedule: " + std::to_string(microbatches) +
                                " microbatches with PP " + std::to_string(pp) + " and VPP " + std::to_string(vpp) +
                                ": needs PP >= 2 and microbatches a multiple of PP");
}

/// The k-th forward (backward when `backward`) of a rank's interleaved order: groups of PP microbatches, each group
/// through every chunk (forward: chunk 0 first; backward: chunk VPP-1 first).
PipelineAction virtual_microbatch(int pp, int vpp, int64_t k, bool backward) {
  const int64_t group = k / (int64_t{pp} * vpp), in_group = k % (int64_t{pp} * vpp);
  PipelineAction a;
  a.kind = backward ? PipelineAction::Kind::Backward : PipelineAction::Kind::Forward;
  a.microbatch = group * pp + in_group % pp;
  const int chunk = static_cast<int>(in_group / pp);
  a.chunk = backward ? vpp - 1 - chunk : chunk;
  return a;
}

}  // namespace

int64_t pipeline_warmup(int pp, int vpp, int stage, int64_t microbatches) {
  check(pp, vpp, stage, microbatches);
  if (vpp == 1) return std::min<int64_t>(pp - stage - 1, microbatches);
  return std::min<int64_t>(2 * int64_t{pp - stage - 1} + int64_t{vpp - 1} * pp, microbatches * vpp);
}

std::vector<PipelineAction> pipeline_schedule(int pp, int vpp, int stage, int64_t microbatches) {
  const int64_t warmup = pipeline_warmup(pp, vpp, stage, microbatches);
  const int64_t total = microbatches * vpp;  // passes of each kind on this rank
  std::vector<PipelineAction> out;
  out.reserve(static_cast<size_t>(2 * total));
  auto forward = [&](int64_t k) { out.push_back(virtual_microbatch(pp, vpp, k, false)); };
  auto backward = [&](int64_t k) { out.push_back(virtual_microbatch(pp, vpp, k, true)); };
  for (int64_t k = 0; k < warmup; ++k) forward(k);
  for (int64_t i = 0; i < total - warmup; ++i) {  // steady: one forward, one backward
    forward(warmup + i);
    backward(i);
  }
  for (int64_t k = total - warmup; k < total; ++k) backward(k);  // cool-down
  return out;
}

std::string pipeline_schedule_runs(int pp, int vpp, const std::vector<std::vector<PipelineAction>>& orders,
                                   int64_t microbatches) {
  const int64_t stages = int64_t{pp} * vpp;
  if (static_cast<int64_t>(orders.size()) != pp) return "expected " + counted(pp, "order");
  // done[kind][microbatch * stages + global stage]
  std::vector<std::vector<bool>> done(2, std::vector<bool>(static_cast<size_t>(microbatches * stages), false));
  auto at = [&](int64_t m, int64_t g) { return static_cast<size_t>(m * stages + g); };
  std::vector<size_t> next(pp, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < pp; ++r) {
      while (next[r] < orders[r].size()) {
        const PipelineAction& a = orders[r][next[r]];
        if (a.microbatch < 0 || a.microbatch >= microbatches || a.chunk < 0 || a.chunk >= vpp)
          return "rank " + std::to_string(r) + ": action out of range";
        const int64_t g = int64_t{a.chunk} * pp + r;
        bool ready;
        if (a.kind == PipelineAction::Kind::Forward)
          ready = g == 0 || done[0][at(a.microbatch, g - 1)];
        else
          ready = done[0][at(a.microbatch, g)] && (g == stages - 1 || done[1][at(a.microbatch, g + 1)]);
        if (!ready) break;
        done[a.kind == PipelineAction::Kind::Forward ? 0 : 1][at(a.microbatch, g)] = true;
        ++next[r];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int r = 0; r < pp; ++r)
    if (next[r] < orders[r].size())
      stuck += (stuck.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " waits at " +
               format_pipeline_order({orders[r][next[r]]});
  return stuck;
}

std::string format_pipeline_order(const std::vector<PipelineAction>& order) {
  std::string s;
  for (const auto& a : order) {
    if (!s.empty()) s += ' ';
    s += (a.kind == PipelineAction::Kind::Forward ? 'F' : 'B') + std::to_string(a.microbatch) + "." +
         std::to_string(a.chunk);
  }
  return s;
}

}  // namespace recipebench
