// The GDN CUDA kernels (gdn_kernels.h, docs/gdn-kernels.md) as a libtorch autograd function. Built only when the
// kernels were built and the Torch found has CUDA (RECIPEBENCH_GDN_CUDA); model/gated_delta_rule.h stays the CPU
// path and the reference.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "model/gated_delta_rule.h"

namespace recipebench::torch_model {

/// True when the tensors can go to the CUDA kernels: all on one CUDA device, k_dim = v_dim = 128, fp32 / bf16 /
/// fp16 (not fp64), v_heads a multiple of k_heads.
bool cuda_gated_delta_rule_supports(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

/// The chunked gated delta rule (chunk 64) on the GPU, with the contract of chunk_gated_delta_rule
/// (model/gated_delta_rule.h): q, k [batch, seq, k_heads, 128] (normalised by the caller), v [batch, seq, v_heads,
/// 128], g (log decay) and beta [batch, seq, v_heads], initial_state [rows, v_heads, 128, 128] or undefined,
/// scale <= 0 means 1/sqrt(128). Computed with bf16 inputs and fp32 accumulation and state.
/// cu_seqlens (host offsets, optional): with batch = 1, the seq tokens are packed rows cu_seqlens[i] ..
/// cu_seqlens[i+1] - 1, each starting from its own state (rows = cu_seqlens.size() - 1); empty = one row per batch
/// entry. Returns the output [batch, seq, v_heads, 128] in v's dtype and, when requested, the final state
/// [rows, v_heads, 128, 128] fp32. Differentiable in q, k, v, g, beta and initial_state (deterministic backward).
/// Throws c10::Error on unsupported inputs (see cuda_gated_delta_rule_supports) or a CUDA launch failure.
GatedDeltaRuleOutput cuda_chunk_gated_delta_rule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                                 const torch::Tensor& g, const torch::Tensor& beta,
                                                 const torch::Tensor& initial_state = {},
                                                 bool output_final_state = false, double scale = 0.0,
                                                 const std::vector<int64_t>& cu_seqlens = {});

}  // namespace recipebench::torch_model
