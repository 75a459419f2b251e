#include "cuda/gated_norm_cuda.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/autograd.h>

#include "cuda/gated_norm_kernels.h"
#include "cuda/glue_util.h"

namespace recipebench::torch_model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct GatedNorm : torch::autograd::Function<GatedNorm> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& z, const at::Tensor& w,
                            double eps) {
    ctx->save_for_backward({x, z, w});
    ctx->saved_data["eps"] = eps;
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = at::empty_like(x);
    const int64_t dim = w.size(0);
    check_launch(gnorm::gated_norm_forward(bf16_ptr(x), bf16_ptr(z), bf16_ptr(w), bf16_mut(y), x.numel() / dim, dim,
                                           static_cast<float>(eps), c10::cuda::getCurrentCUDAStream()),
                 "fused gated RMSNorm forward");
    return y;
  }

  /// {dx, dz, dw, none}: dw summed over the warps' FP32 partials by at::sum (a fixed-order reduction).
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &z = saved[1], &w = saved[2];
    const double eps = ctx->saved_data["eps"].toDouble();
    const auto dy = grads[0].to(at::kBFloat16).contiguous();
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t dim = w.size(0), rows = x.numel() / dim;
    auto dx = at::empty_like(x), dz = at::empty_like(z);
    auto partial = at::empty({gnorm::gated_norm_warps(rows), dim}, x.options().dtype(at::kFloat));
    check_launch(gnorm::gated_norm_backward(bf16_ptr(x), bf16_ptr(z), bf16_ptr(w), bf16_ptr(dy), bf16_mut(dx),
                                            bf16_mut(dz), partial.data_ptr<float>(), rows, dim, static_cast<float>(eps),
                                            c10::cuda::getCurrentCUDAStream()),
                 "fused gated RMSNorm backward");
    return {dx, dz, partial.sum(0).to(w.scalar_type()), at::Tensor()};
  }
};

}  // namespace

bool cuda_gated_norm_supports(const at::Tensor& x, const at::Tensor& z, const at::Tensor& w) {
  return x.is_cuda() && z.device() == x.device() && w.device() == x.device() && x.scalar_type() == at::kBFloat16 &&
         z.scalar_type() == at::kBFloat16 && w.scalar_type() == at::kBFloat16 && z.sizes() == x.sizes() &&
         w.dim() == 1 && x.dim() >= 1 && x.size(-1) == w.size(0) && gnorm::gated_norm_supports_dim(w.size(0));
}

at::Tensor cuda_gated_norm(const at::Tensor& x, const at::Tensor& z, const at::Tensor& w, double eps) {
  TORCH_CHECK(cuda_gated_norm_supports(x, z, w), "fused gated RMSNorm: x, z BF16 [..., dim] and w BF16 [dim] ",
              "(dim 64, 128 or 256) on one CUDA device expected, got x ", x.sizes(), " ", x.scalar_type(), ", z ",
              z.sizes(), ", w ", w.sizes(), " ", w.scalar_type());
  return GatedNorm::apply(x.contiguous(), z.contiguous(), w.contiguous(), eps);
}

}  // namespace recipebench::torch_model
