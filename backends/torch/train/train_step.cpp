#include "train/train_step.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <csignal>
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
/// `own_sum` gets this rank's part of the loss sum before the reduction (for non_finite_loss_ranks). `nan_loss`:
/// the test hook (StepChecks) makes this rank's part NaN.
double global_loss(const RunContext& ctx, torch::Tensor loss_sum, double denom, torch::Tensor& own_sum,
                   bool nan_loss) {
  const double own = ctx.emulated() ? loss_sum.item<double>() : 0.0;
  if (ctx.me.tp != 0) loss_sum.zero_();
  if (nan_loss) loss_sum.fill_(std::numeric_limits<double>::quiet_NaN());
  own_sum = loss_sum.clone();  // on the device: read only when the reduced loss is not finite
  if (ctx.group) ctx.group->all_reduce_sum(loss_sum);
  if (ctx.emulated())
    return ctx.last_stage() ? own * ctx.map.dp * ctx.map.cp / denom : std::numeric_limits<double>::quiet_NaN();
  return loss_sum.item<double>() / denom;
}

/// When the reduced loss is not finite (every rank sees the same value, so every rank calls this): the ranks whose
/// own part was not finite, e.g. " (not finite on rank 42 before the sum over the ranks)", gathered over the ranks
/// (a collective); "" on one rank or
/// when every part was finite (the sum overflowed).
std::string non_finite_loss_ranks(const RunContext& ctx, const torch::Tensor& own_sum) {
  if (!ctx.group || ctx.emulated()) return "";
  auto flags = torch::zeros({ctx.world}, torch::kInt64);
  flags[ctx.rank] = std::isfinite(own_sum.item<double>()) ? 0 : 1;
  ctx.group->all_reduce_sum(flags);
  std::string ranks;
  for (int r = 0; r < ctx.world; ++r)
    if (flags[r].item<int64_t>() != 0) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  return ranks.empty() ? "" : " (not finite on rank " + ranks + " before the sum over the ranks)";
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
  if (checks.kill_mid_step) raise(SIGKILL);  // the test hook: the other ranks wait for this one in the norm
  r.grad_norm = optimizer.grad_norm();
  torch::Tensor own_sum;
  r.loss = global_loss(ctx, loss_sum, denom, own_sum, checks.nan_loss);
  const bool has_loss = !ctx.emulated() || ctx.last_stage();
  if ((has_loss && !std::isfinite(r.loss)) || !std::isfinite(r.grad_norm))
    throw RunError("step " + std::to_string(step) + ": the loss is " + std::to_string(r.loss) +
                       (has_loss && !std::isfinite(r.loss) ? non_finite_loss_ranks(ctx, own_sum) : "") +
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
