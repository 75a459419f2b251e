// The one place where libtorch 1.13 (Debian, CPU machines) and libtorch 2.x (GPU machine) differ for the model.
// Include only from .cpp files that already use ATen.
//   - at::scaled_dot_product_attention exists from 2.0 (fused flash / memory-efficient attention on CUDA);
//   - at::_grouped_mm (one launch for all experts' matmuls, bf16 on sm90+) exists from 2.8.
#pragma once

#include <torch/version.h>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#if TORCH_VERSION_MAJOR >= 2
#include <ATen/ops/scaled_dot_product_attention.h>
#define RECIPEBENCH_TORCH_HAS_SDPA 1
#else
#define RECIPEBENCH_TORCH_HAS_SDPA 0
#endif

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 8)
#include <ATen/ops/_grouped_mm.h>
#define RECIPEBENCH_TORCH_HAS_GROUPED_MM 1
#else
#define RECIPEBENCH_TORCH_HAS_GROUPED_MM 0
#endif

#if TORCH_VERSION_MAJOR >= 2 && __has_include(<ATen/ops/_fused_adamw.h>)
#include <ATen/ops/_fused_adamw.h>
#define RECIPEBENCH_TORCH_HAS_FUSED_ADAMW 1
#else
#define RECIPEBENCH_TORCH_HAS_FUSED_ADAMW 0
#endif

namespace recipebench::torch_model::compat {

constexpr bool kHasSdpa = RECIPEBENCH_TORCH_HAS_SDPA != 0;
constexpr bool kHasGroupedMm = RECIPEBENCH_TORCH_HAS_GROUPED_MM != 0;

/// True when sdpa_causal() may be used for `q`: libtorch 2.x and a CUDA tensor.
inline bool sdpa_usable(const at::Tensor& q) { return kHasSdpa && q.is_cuda(); }

/// Causal softmax attention with the default scale 1/sqrt(head_dim).
/// q, k, v: [batch, heads, seq, head_dim], the same number of heads (GQA already expanded) -> [batch, heads, seq,
/// head_dim].
inline at::Tensor sdpa_causal(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if RECIPEBENCH_TORCH_HAS_SDPA
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
#else
  (void)k;
  (void)v;
  TORCH_CHECK(false, "scaled_dot_product_attention needs libtorch >= 2.0 (this build: ", TORCH_VERSION, ")");
  return q;
#endif
}

/// True when grouped_mm() can run on `x`: libtorch >= 2.8, a CUDA tensor, bf16.
inline bool grouped_mm_usable(const at::Tensor& x) {
  return kHasGroupedMm && x.is_cuda() && x.scalar_type() == c10::kBFloat16;
}

/// Grouped matmul of row groups with per-group matrices (differentiable in libtorch 2.x).
/// a: [rows, K] with its rows sorted by group; b: [groups, K, N]; offs: int32 [groups], cumulative row ends
/// (offs[g] = rows of groups 0..g). Returns [rows, N]: rows of group g times b[g]. Empty groups are allowed.
inline at::Tensor grouped_mm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& offs) {
#if RECIPEBENCH_TORCH_HAS_GROUPED_MM
  return at::_grouped_mm(a, b, offs);
#else
  (void)b;
  (void)offs;
  TORCH_CHECK(false, "_grouped_mm needs libtorch >= 2.8 (this build: ", TORCH_VERSION, ")");
  return a;
#endif
}

/// True when fused_adamw() can run on `x`: libtorch 2.x with at::_fused_adamw_ and a CUDA tensor.
/// Whether fused_adamw below runs on state like `x`: libtorch 2.x, CUDA, FP32 (an FP64 run's state takes the
/// per-tensor ops: docs/determinism.md, "Precision").
inline bool fused_adamw_usable(const at::Tensor& x) {
  return RECIPEBENCH_TORCH_HAS_FUSED_ADAMW && x.is_cuda() && x.scalar_type() == at::kFloat;
}

/// One AdamW step over lists of FP32 tensors with one multi-tensor CUDA kernel (PyTorch's fused AdamW):
/// w <- w (1 - lr wd) - lr (m / (1 - b1^t)) / (sqrt(v) / sqrt(1 - b2^t) + eps), with m, v updated first.
/// `steps` are float32 scalars on the device holding t (incremented by the caller before the call).
inline void fused_adamw(at::TensorList w, at::TensorList g, at::TensorList m, at::TensorList v, at::TensorList steps,
                        double lr, double beta1, double beta2, double weight_decay, double eps) {
#if RECIPEBENCH_TORCH_HAS_FUSED_ADAMW
  at::_fused_adamw_(w, g, m, v, /*max_exp_avg_sqs=*/{}, steps, lr, beta1, beta2, weight_decay, eps,
                    /*amsgrad=*/false, /*maximize=*/false);
#else
  (void)w, (void)g, (void)m, (void)v, (void)steps, (void)lr, (void)beta1, (void)beta2, (void)weight_decay, (void)eps;
  TORCH_CHECK(false, "_fused_adamw_ needs libtorch >= 2 (this build: ", TORCH_VERSION, ")");
#endif
}

}  // namespace recipebench::torch_model::compat
