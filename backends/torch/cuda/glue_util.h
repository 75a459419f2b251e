// Helpers shared by the libtorch glue of the CUDA kernels (the *_cuda.cpp and gdn_autograd.cpp files): a tensor's
// BF16 data as CUDA's type, and the check of a launch's error. Includes CUDA headers: only for files built with the
// kernels.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace recipebench::torch_model {

/// t's data as __nv_bfloat16 (same bits as at::BFloat16), read-only; the kernels index it as a contiguous tensor, so
/// the caller passes contiguous tensors. Throws c10::Error when t does not hold BF16.
inline const __nv_bfloat16* bf16_ptr(const at::Tensor& t) {
  return reinterpret_cast<const __nv_bfloat16*>(t.data_ptr<at::BFloat16>());
}
/// As bf16_ptr, writable (an output tensor of the kernel).
inline __nv_bfloat16* bf16_mut(at::Tensor& t) { return reinterpret_cast<__nv_bfloat16*>(t.data_ptr<at::BFloat16>()); }

/// Throws c10::Error "<what>: <CUDA's message>" unless `e` is cudaSuccess.
inline void check_launch(cudaError_t e, const char* what) {
  TORCH_CHECK(e == cudaSuccess, what, ": ", cudaGetErrorString(e));
}

}  // namespace recipebench::torch_model
