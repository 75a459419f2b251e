#include "model/component_timer.h"

#include <torch/autograd.h>

#include <algorithm>
#include <atomic>

namespace recipebench::torch_model {

namespace {

std::atomic<ComponentTimer*> g_active{nullptr};

/// An identity whose forward opens (kEnter) or closes its component on the active timer and whose backward does
/// the opposite: the gradient leaves a component through the mark where the values entered it.
template <bool kEnter>
struct BoundaryMark : torch::autograd::Function<BoundaryMark<kEnter>> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, int64_t component) {
    ctx->saved_data["c"] = component;
    if (auto* t = g_active.load()) kEnter ? t->open(ProfileComponent(component)) : t->close(ProfileComponent(component));
    return x;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto c = ProfileComponent(ctx->saved_data["c"].toInt());
    if (auto* t = g_active.load()) kEnter ? t->close(c) : t->open(c);
    return {grad[0], at::Tensor()};
  }
};

at::Tensor mark(const at::Tensor& x, ProfileComponent c, bool enter) {
  if (!g_active.load() || !x.defined()) return x;
  const auto id = static_cast<int64_t>(c);
  return enter ? BoundaryMark<true>::apply(x, id) : BoundaryMark<false>::apply(x, id);
}

}  // namespace

void ComponentTimer::charge() {
  sync_();
  const auto now = Clock::now();
  const ProfileComponent c = open_.empty() ? ProfileComponent::kOther : open_.back();
  pass_->phases[static_cast<size_t>(phase_)][static_cast<size_t>(c)] +=
      std::chrono::duration<double>(now - since_).count();
  since_ = now;
}

void ComponentTimer::begin_pass(bool backward, int virtual_stage, int64_t microbatch) {
  sync_();
  pass_.emplace();
  pass_->backward = backward, pass_->virtual_stage = virtual_stage, pass_->microbatch = microbatch;
  phase_ = backward ? PassPhase::kBackward : PassPhase::kForward;
  open_.clear();
  since_ = Clock::now();
}

void ComponentTimer::end_pass() {
  if (!pass_) return;
  charge();
  pass_->seconds = 0;
  for (int p = 0; p < kPassPhases; ++p) pass_->seconds += pass_->phase_seconds(PassPhase(p));
  passes_.push_back(*pass_);
  pass_.reset();
  open_.clear();
}

void ComponentTimer::open(ProfileComponent c) {
  if (!pass_) return;
  charge();
  open_.push_back(c);
}

void ComponentTimer::close(ProfileComponent c) {
  if (!pass_) return;
  charge();
  // The innermost open c, with whatever is still open inside it (a part whose closing mark did not run, e.g. the
  // dispatch of an expert-parallel rank that received no rows).
  const auto it = std::find(open_.rbegin(), open_.rend(), c);
  if (it != open_.rend()) open_.erase(std::next(it).base(), open_.end());
}

void ComponentTimer::begin_recompute() {
  if (!pass_ || !pass_->backward) return;
  charge();
  phase_ = PassPhase::kRecompute;
}

void ComponentTimer::end_recompute() {
  if (!pass_ || !pass_->backward) return;
  charge();
  phase_ = PassPhase::kBackward;
}

void set_active_component_timer(ComponentTimer* timer) { g_active.store(timer); }

void profile_begin_pass(bool backward, int virtual_stage, int64_t microbatch) {
  if (auto* t = g_active.load()) t->begin_pass(backward, virtual_stage, microbatch);
}
void profile_end_pass() {
  if (auto* t = g_active.load()) t->end_pass();
}
void profile_begin_recompute() {
  if (auto* t = g_active.load()) t->begin_recompute();
}
void profile_end_recompute() {
  if (auto* t = g_active.load()) t->end_recompute();
}

at::Tensor component_enter(const at::Tensor& x, ProfileComponent c) { return mark(x, c, true); }
at::Tensor component_exit(const at::Tensor& y, ProfileComponent c) { return mark(y, c, false); }

}  // namespace recipebench::torch_model
