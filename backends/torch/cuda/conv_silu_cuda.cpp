#include "cuda/conv_silu_cuda.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/autograd.h>

#include "cuda/conv_silu_kernels.h"
#include "cuda/glue_util.h"

namespace recipebench::torch_model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

at::Tensor forward_pass(const at::Tensor& x, const at::Tensor& w) {
  const c10::cuda::CUDAGuard guard(x.device());
  auto y = at::empty_like(x);
  check_launch(conv::conv_silu_forward(bf16_ptr(x), bf16_ptr(w), bf16_mut(y), x.size(0), x.size(1), x.size(2),
                                       w.size(2), c10::cuda::getCurrentCUDAStream()),
               "fused conv1d + SiLU forward");
  return y;
}

/// {dx, dw}: dw summed over the tiles' FP32 partials by at::sum (a fixed-order reduction), then in w's dtype.
tensor_list backward_pass(const at::Tensor& x, const at::Tensor& w, const at::Tensor& dy) {
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t batch = x.size(0), seq = x.size(1), channels = x.size(2), k = w.size(2);
  auto dx = at::empty_like(x);
  auto partial = at::empty({conv::conv_silu_tiles(batch, seq), channels, k}, x.options().dtype(at::kFloat));
  check_launch(conv::conv_silu_backward(bf16_ptr(x), bf16_ptr(w), bf16_ptr(dy), bf16_mut(dx), partial.data_ptr<float>(),
                                        batch, seq, channels, k, c10::cuda::getCurrentCUDAStream()),
               "fused conv1d + SiLU backward");
  return {dx, partial.sum(0).reshape(w.sizes()).to(w.scalar_type())};
}

struct ConvSilu : torch::autograd::Function<ConvSilu> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w) {
    ctx->save_for_backward({x, w});
    return forward_pass(x, w);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    return backward_pass(saved[0], saved[1], grads[0].to(at::kBFloat16).contiguous());
  }
};

}  // namespace

bool cuda_conv_silu_supports(const at::Tensor& x, const at::Tensor& w) {
  return x.is_cuda() && w.device() == x.device() && x.scalar_type() == at::kBFloat16 &&
         w.scalar_type() == at::kBFloat16 && x.dim() == 3 && w.dim() == 3 && w.size(0) == x.size(2) && w.size(1) == 1 &&
         conv::conv_silu_supports_width(w.size(2));
}

at::Tensor cuda_conv_silu(const at::Tensor& x, const at::Tensor& w) {
  TORCH_CHECK(cuda_conv_silu_supports(x, w), "fused conv1d + SiLU: x BF16 [batch, seq, channels] and w BF16 ",
              "[channels, 1, K in 2..4] on one CUDA device expected, got x ", x.sizes(), " ", x.scalar_type(), ", w ",
              w.sizes(), " ", w.scalar_type());
  return ConvSilu::apply(x.contiguous(), w.contiguous());
}

}  // namespace recipebench::torch_model
