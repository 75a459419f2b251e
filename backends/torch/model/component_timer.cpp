#include "model/component_timer.h"

#include <torch/autograd.h>

#include <atomic>

namespace recipebench::torch_model {

namespace {

std::atomic<ComponentTimer*> g_active{nullptr};

/// An identity whose forward calls `on_forward` and whose backward calls `on_backward` on the active timer.
template <bool kEnter>
struct BoundaryMark : torch::autograd::Function<BoundaryMark<kEnter>> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, int64_t component) {
    ctx->saved_data["c"] = component;
    if (auto* t = g_active.load()) kEnter ? t->start(Component(component)) : t->stop(Component(component));
    return x;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto c = Component(ctx->saved_data["c"].toInt());
    if (auto* t = g_active.load()) kEnter ? t->stop(c) : t->start(c);
    return {grad[0], at::Tensor()};
  }
};

at::Tensor mark(const at::Tensor& x, Component c, bool enter) {
  if (!g_active.load() || !x.defined()) return x;
  const auto id = static_cast<int64_t>(c);
  return enter ? BoundaryMark<true>::apply(x, id) : BoundaryMark<false>::apply(x, id);
}

}  // namespace

void ComponentTimer::start(Component c) {
  sync_();
  started_[static_cast<int>(c)] = Clock::now();
}

void ComponentTimer::stop(Component c) {
  sync_();
  const int i = static_cast<int>(c);
  seconds_[i] += std::chrono::duration<double>(Clock::now() - started_[i]).count();
}

void set_active_component_timer(ComponentTimer* timer) { g_active.store(timer); }

at::Tensor component_enter(const at::Tensor& x, Component c) { return mark(x, c, true); }
at::Tensor component_exit(const at::Tensor& y, Component c) { return mark(y, c, false); }

}  // namespace recipebench::torch_model
