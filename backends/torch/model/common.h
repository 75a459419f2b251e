// Small helpers shared by the layers of the torch model.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/ScalarType.h>

namespace recipebench::torch_model {

/// The dtype in which reductions and recurrences are computed for inputs of dtype `t`:
/// float64 stays float64 (the reference tests), everything else (bf16, fp16, fp32) is computed in float32.
inline c10::ScalarType compute_dtype(c10::ScalarType t) { return t == c10::kDouble ? c10::kDouble : c10::kFloat; }

/// Fills `w` in place with N(0, std^2) outside autograd (the initializer_range convention of Hugging Face), from
/// torch's default generator (a model built on its own; the model builder's rank-local values are
/// docs/initialization.md's). Nothing on a meta tensor.
inline void init_normal_(const at::Tensor& w, double std) {
  if (w.is_meta()) return;
  at::NoGradGuard no_grad;
  w.normal_(0.0, std);
}

/// Fills `w` in place with `value` outside autograd. Nothing on a meta tensor.
inline void init_fill_(const at::Tensor& w, double value) {
  if (w.is_meta()) return;
  at::NoGradGuard no_grad;
  w.fill_(value);
}

/// Standard deviation of the normal initialisation of projections, embeddings and experts
/// (Hugging Face `initializer_range` of the Qwen3.5 configs).
constexpr double kInitStd = 0.02;

}  // namespace recipebench::torch_model
