#include "train/train_step.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "train/device.h"

namespace recipebench::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// The step's loss: the last stages' sums reach every rank; every TP rank of a last stage has the whole loss of its
/// rows (vocab-parallel cross-entropy), so TP rank 0's counts.
double global_loss(const RunContext& ctx, torch::Tensor loss_sum, double denom) {
  if (ctx.me.tp != 0) loss_sum.zero_();
  if (ctx.group) ctx.group->all_reduce_sum(loss_sum);
  return loss_sum.item<double>() / denom;
}

}  // namespace

StepResult train_step(const RunContext& ctx, RankModel& model, Optimizer& optimizer, const StepBatch& batch, double lr,
                      int step, bool profile) {
  StepResult r;
  ctx.synchronize();
  ctx.barrier();
  reset_peak_memory(ctx.device);
  r.start = Clock::now();
  auto since = r.start;
  auto lap = [&](bool backward) {
    if (!profile) return;
    ctx.synchronize();
    const auto now = Clock::now();
    (backward ? r.backward_seconds : r.forward_seconds) += seconds_between(since, now);
    since = now;
  };

  optimizer.zero_grad();
  const double denom = static_cast<double>(std::max<int64_t>(1, batch.supervised));
  torch::Tensor loss_sum = run_pipeline_step(
      model.stage, batch.microbatches, ctx.place, denom, [&] { optimizer.accumulate_grads(); }, lap);
  r.grad_norm = optimizer.grad_norm();
  r.loss = global_loss(ctx, loss_sum, denom);
  if (!std::isfinite(r.loss) || !std::isfinite(r.grad_norm))
    throw RunError("step " + std::to_string(step) + ": the loss is " + std::to_string(r.loss) +
                       " and the gradient norm " + std::to_string(r.grad_norm) + "; the run stops here",
                   step);
  optimizer.clip(r.grad_norm);
  optimizer.step(lr);
  ctx.synchronize();
  ctx.barrier();
  r.end = Clock::now();
  if (profile) r.optimizer_seconds = seconds_between(since, r.end);
  return r;
}

}  // namespace recipebench::train
