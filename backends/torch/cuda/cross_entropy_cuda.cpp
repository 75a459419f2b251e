#include "cuda/cross_entropy_cuda.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "cuda/cross_entropy_kernels.h"
#include "cuda/glue_util.h"

namespace recipebench::torch_model {

namespace {

void check_inputs(const at::Tensor& logits, const at::Tensor& local_target, const at::Tensor& held) {
  TORCH_CHECK(logits.is_cuda() && logits.scalar_type() == at::kBFloat16 && logits.dim() == 2 && logits.is_contiguous(),
              "fused cross-entropy: logits must be contiguous BF16 [rows, vocab] on CUDA, got ", logits.sizes(), " ",
              logits.scalar_type());
  TORCH_CHECK(local_target.scalar_type() == at::kLong && held.scalar_type() == at::kBool &&
                  local_target.numel() == logits.size(0) && held.numel() == logits.size(0) &&
                  local_target.is_contiguous() && held.is_contiguous(),
              "fused cross-entropy: targets int64 [rows] and held bool [rows] expected");
}

}  // namespace

RowStats cuda_row_stats(const at::Tensor& logits, const at::Tensor& local_target, const at::Tensor& held) {
  check_inputs(logits, local_target, held);
  const c10::cuda::CUDAGuard guard(logits.device());
  const auto f32 = logits.options().dtype(at::kFloat);
  const int64_t rows = logits.size(0);
  RowStats s{at::empty({rows}, f32), at::empty({rows}, f32), at::empty({rows}, f32)};
  check_launch(xent::row_stats(bf16_ptr(logits), rows, logits.size(1), local_target.data_ptr<int64_t>(),
                               held.data_ptr<bool>(), s.row_max.data_ptr<float>(), s.sum_exp.data_ptr<float>(),
                               s.target_logit.data_ptr<float>(), c10::cuda::getCurrentCUDAStream()),
               "fused cross-entropy: row statistics");
  return s;
}

void cuda_logit_grad_(at::Tensor& logits, const at::Tensor& local_target, const at::Tensor& held,
                      const at::Tensor& row_max, const at::Tensor& sum_exp, const at::Tensor& scale) {
  check_inputs(logits, local_target, held);
  for (const auto* t : {&row_max, &sum_exp, &scale})
    TORCH_CHECK(t->scalar_type() == at::kFloat && t->numel() == logits.size(0) && t->is_contiguous(),
                "fused cross-entropy: row statistics must be FP32 [rows]");
  const c10::cuda::CUDAGuard guard(logits.device());
  check_launch(xent::logit_grad(bf16_mut(logits), logits.size(0), logits.size(1), local_target.data_ptr<int64_t>(),
                                held.data_ptr<bool>(), row_max.data_ptr<float>(), sum_exp.data_ptr<float>(),
                                scale.data_ptr<float>(), c10::cuda::getCurrentCUDAStream()),
               "fused cross-entropy: logit gradient");
}

}  // namespace recipebench::torch_model
