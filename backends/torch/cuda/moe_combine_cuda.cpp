#include "cuda/moe_combine_cuda.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/autograd.h>

#include "cuda/glue_util.h"
#include "cuda/moe_combine_kernels.h"

namespace recipebench::torch_model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct MoeCombine : torch::autograd::Function<MoeCombine> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& ys, const at::Tensor& inv,
                            const at::Tensor& weights) {
    ctx->save_for_backward({ys, inv, weights});
    const c10::cuda::CUDAGuard guard(ys.device());
    const int64_t tokens = weights.size(0), k = weights.size(1), hidden = ys.size(1);
    auto out = at::empty({tokens, hidden}, ys.options());
    check_launch(moe_combine::combine_forward(bf16_ptr(ys), inv.data_ptr<int64_t>(), bf16_ptr(weights), bf16_mut(out),
                                              tokens, static_cast<int>(k), hidden, c10::cuda::getCurrentCUDAStream()),
                 "fused MoE combine forward");
    return out;
  }

  /// {d ys, none, d weights}.
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &ys = saved[0], &inv = saved[1], &weights = saved[2];
    const auto g = grads[0].to(at::kBFloat16).contiguous();
    const c10::cuda::CUDAGuard guard(ys.device());
    const int64_t tokens = weights.size(0), k = weights.size(1), hidden = ys.size(1);
    auto grad_ys = at::empty_like(ys), grad_w = at::empty_like(weights);
    check_launch(moe_combine::combine_backward(bf16_ptr(ys), inv.data_ptr<int64_t>(), bf16_ptr(weights), bf16_ptr(g),
                                               bf16_mut(grad_ys), bf16_mut(grad_w), tokens, static_cast<int>(k), hidden,
                                               c10::cuda::getCurrentCUDAStream()),
                 "fused MoE combine backward");
    return {grad_ys, at::Tensor(), grad_w};
  }
};

}  // namespace

bool cuda_moe_combine_supports(const at::Tensor& ys, const at::Tensor& inv, const at::Tensor& weights) {
  return ys.is_cuda() && inv.device() == ys.device() && weights.device() == ys.device() &&
         ys.scalar_type() == at::kBFloat16 && weights.scalar_type() == at::kBFloat16 &&
         inv.scalar_type() == at::kLong && ys.dim() == 2 && weights.dim() == 2 && inv.dim() == 1 &&
         ys.size(0) == weights.size(0) * weights.size(1) && inv.size(0) == ys.size(0) &&
         moe_combine::supports(weights.size(1), ys.size(1));
}

at::Tensor cuda_moe_combine(const at::Tensor& ys, const at::Tensor& inv, const at::Tensor& weights) {
  TORCH_CHECK(cuda_moe_combine_supports(ys, inv, weights), "fused MoE combine: ys BF16 [tokens k, hidden] (hidden a ",
              "multiple of 8), inv int64 [tokens k] and weights BF16 [tokens, k <= 16] on one CUDA device expected, ",
              "got ys ", ys.sizes(), " ", ys.scalar_type(), ", inv ", inv.sizes(), " ", inv.scalar_type(), ", weights ",
              weights.sizes(), " ", weights.scalar_type());
  return MoeCombine::apply(ys.contiguous(), inv.contiguous(), weights.contiguous());
}

}  // namespace recipebench::torch_model
