#include "train/train_step.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "model/component_timer.h"
#include "rank/device.h"

namespace recipebench::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// The step's loss: the last stages' sums reach every rank; every TP rank of a last stage has the whole loss of its
/// rows (vocab-parallel cross-entropy), so TP rank 0's counts. An emulated rank's rows stand for each of the DP x CP
/// blocks of the global batch (docs/emulation.md): its loss is its own sum x DP x CP / denom on a last stage, NaN
/// (no loss) elsewhere; the reduction still runs, as the real rank's does.
double global_loss(const RunContext& ctx, torch::Tensor loss_sum, double denom) {
  const double own = ctx.emulated() ? loss_sum.item<double>() : 0.0;
  if (ctx.me.tp != 0) loss_sum.zero_();
  if (ctx.group) ctx.group->all_reduce_sum(loss_sum);
  if (ctx.emulated())
    return ctx.last_stage() ? own * ctx.map.dp * ctx.map.cp / denom : std::numeric_limits<double>::quiet_NaN();
  return loss_sum.item<double>() / denom;
}

/// With --profile: the component timer of one step, installed while it lives (also when the step throws).
class ComponentProfile {
 public:
  ComponentProfile(const RunContext& ctx, bool on) {
    if (!on) return;
    timer_.emplace([&ctx] { ctx.synchronize(); });
    torch_model::set_active_component_timer(&*timer_);
  }
  ~ComponentProfile() {
    if (timer_) torch_model::set_active_component_timer(nullptr);
  }
  ComponentProfile(const ComponentProfile&) = delete;
  ComponentProfile& operator=(const ComponentProfile&) = delete;
  std::vector<PassSample> passes() const { return timer_ ? timer_->passes() : std::vector<PassSample>{}; }

 private:
  std::optional<torch_model::ComponentTimer> timer_;
};

}  // namespace

StepResult train_step(const RunContext& ctx, RankModel& model, Optimizer& optimizer, const StepBatch& batch, double lr,
                      int step, bool profile, const StepChecks& checks) {
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
  // bench.overlap_param_gather: the last step's all-gathers start now, inside this step's timed region, and the
  // forward passes wait for each module's own (docs/distributed.md, "Overlap"); nothing otherwise.
  optimizer.start_param_gather();
  ComponentProfile components(ctx, profile);
  const double denom = static_cast<double>(std::max<int64_t>(1, batch.supervised));
  torch::Tensor loss_sum;  // on the device: read after the optimizer's norm
  auto passes = [&] {
    if (checks.inject_sync) inject_host_sync(ctx.device);
    loss_sum = run_pipeline_step(
        model.stage, batch.microbatches, ctx.place, denom, [&] { optimizer.accumulate_grads(); }, lap,
        [&](int chunk) { optimizer.begin_last_backward(chunk); });
  };
  if (checks.host_sync)
    checks.host_sync->region(step, passes);
  else
    passes();
  r.passes = components.passes();
  r.components = component_totals(r.passes);
  r.grad_norm = optimizer.grad_norm();
  r.loss = global_loss(ctx, loss_sum, denom);
  const bool has_loss = !ctx.emulated() || ctx.last_stage();
  if ((has_loss && !std::isfinite(r.loss)) || !std::isfinite(r.grad_norm))
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
