#include "cuda/gemm_accumulate_cuda.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cublas_v2.h>

#include <limits>

namespace recipebench::torch_model {

bool cuda_accumulate_tn_supports(const at::Tensor& acc, const at::Tensor& x, const at::Tensor& y) {
  const auto fits = [](const at::Tensor& t) {
    for (const auto d : t.sizes())
      if (d > std::numeric_limits<int>::max()) return false;
    return true;
  };
  return acc.is_cuda() && x.device() == acc.device() && y.device() == acc.device() &&
         acc.scalar_type() == at::kFloat && x.scalar_type() == at::kBFloat16 && y.scalar_type() == at::kBFloat16 &&
         acc.dim() == 2 && x.dim() == 2 && y.dim() == 2 && x.size(0) == y.size(0) && acc.size(0) == x.size(1) &&
         acc.size(1) == y.size(1) && acc.is_contiguous() && x.is_contiguous() && y.is_contiguous() && fits(acc) &&
         fits(x) && fits(y);
}

void cuda_accumulate_tn_(at::Tensor& acc, const at::Tensor& x, const at::Tensor& y) {
  TORCH_CHECK(cuda_accumulate_tn_supports(acc, x, y), "cuda_accumulate_tn_: acc FP32 [M, N], x BF16 [K, M] and y ",
              "BF16 [K, N], contiguous on one CUDA device, expected; got acc ", acc.sizes(), " ", acc.scalar_type(),
              ", x ", x.sizes(), " ", x.scalar_type(), ", y ", y.sizes(), " ", y.scalar_type());
  if (acc.numel() == 0 || x.size(0) == 0) return;
  const c10::cuda::CUDAGuard guard(acc.device());
  const int M = static_cast<int>(acc.size(0)), N = static_cast<int>(acc.size(1)), K = static_cast<int>(x.size(0));
  const float alpha = 1.f, beta = 1.f;
  // Column-major view: acc^T [N x M] (ld N) = y^T [N x K] (y as stored, ld N) times x [K x M] (x^T as stored, ld M).
  const cublasStatus_t st = cublasGemmEx(at::cuda::getCurrentCUDABlasHandle(), CUBLAS_OP_N, CUBLAS_OP_T, N, M, K,
                                         &alpha, y.data_ptr(), CUDA_R_16BF, N, x.data_ptr(), CUDA_R_16BF, M, &beta,
                                         acc.data_ptr(), CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  TORCH_CHECK(st == CUBLAS_STATUS_SUCCESS, "cuda_accumulate_tn_: cublasGemmEx failed with status ",
              static_cast<int>(st));
}

}  // namespace recipebench::torch_model
