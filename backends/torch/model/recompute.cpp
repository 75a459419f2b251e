#include "model/recompute.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <utility>

#include "model/component_timer.h"

namespace recipebench::torch_model {

namespace {

/// fn kept in the autograd node until its backward ran (or the graph was freed).
struct HeldFn : torch::CustomClassHolder {
  explicit HeldFn(TensorFn f) : fn(std::move(f)) {}
  TensorFn fn;
};

/// Inputs: (held fn, x, params...); backward returns (undefined, dx, dparams...).
struct Checkpoint : torch::autograd::Function<Checkpoint> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, c10::intrusive_ptr<HeldFn> held,
                               const torch::Tensor& x, torch::TensorList params) {
    torch::NoGradGuard no_grad;  // apply() already disables grad mode; said again for the reader
    auto y = held->fn(x);
    std::vector<torch::Tensor> saved{x};  // the input; the params are leaves, saved without a copy
    saved.insert(saved.end(), params.begin(), params.end());
    ctx->save_for_backward(saved);
    ctx->saved_data["fn"] = c10::IValue::make_capsule(std::move(held));
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto held = c10::static_intrusive_pointer_cast<HeldFn>(ctx->saved_data.at("fn").toCapsule());
    const auto saved = ctx->get_saved_variables();
    const auto& g = grad_outputs.at(0);
    // One entry per forward argument: the held fn (never a gradient), x, then the params. The node's graph
    // edges (needs_input_grad's index) are the tensors only: x is edge 0, param i is edge 1 + i.
    torch::autograd::variable_list result(1 + saved.size());
    const bool need_x = ctx->needs_input_grad(0);
    torch::Tensor xd = saved.at(0).detach();
    xd.requires_grad_(need_x);
    torch::Tensor y;
    {
      torch::AutoGradMode grad(true);
      profile_begin_recompute();  // --profile: this forward is the backward pass's recompute (component_timer.h)
      y = held->fn(xd);
      profile_end_recompute();
    }
    std::vector<torch::Tensor> inputs;
    std::vector<size_t> slot;  // the entry of result of each of inputs
    if (need_x) {
      inputs.push_back(xd);
      slot.push_back(1);
    }
    for (size_t i = 1; i < saved.size(); ++i)
      if (ctx->needs_input_grad(i)) {
        inputs.push_back(saved[i]);
        slot.push_back(1 + i);
      }
    if (inputs.empty() || !g.defined() || !y.requires_grad()) return result;
    const auto grads = torch::autograd::grad({y}, inputs, {g}, /*retain_graph=*/false, /*create_graph=*/false,
                                             /*allow_unused=*/true);
    for (size_t i = 0; i < grads.size(); ++i) result[slot[i]] = grads[i];
    return result;
  }
};

}  // namespace

torch::Tensor checkpoint(TensorFn fn, const torch::Tensor& x, const std::vector<torch::Tensor>& params) {
  if (!torch::GradMode::is_enabled()) return fn(x);
  std::vector<torch::Tensor> live;
  for (const auto& p : params)
    if (p.requires_grad()) live.push_back(p);
  return Checkpoint::apply(c10::make_intrusive<HeldFn>(std::move(fn)), x, torch::TensorList(live));
}

}  // namespace recipebench::torch_model
