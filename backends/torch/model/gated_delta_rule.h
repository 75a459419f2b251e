// The gated delta rule of Gated DeltaNet (Yang, Kautz, Hatamizadeh, "Gated Delta Networks: Improving Mamba2 with
// Delta Rule", arXiv 2412.06464), in two exact forms: the per-token recurrence (the reference) and the chunked
// form (WY / UT transform of the delta rule, arXiv 2406.06484 section 3, with the gate of 2412.06464 section 3.3).
// Pure libtorch ops; differentiable by autograd.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace recipebench::torch_model {

/// Output of a gated delta rule.
struct GatedDeltaRuleOutput {
  torch::Tensor output;       ///< [batch, seq, v_heads, v_dim], dtype of the value input
  torch::Tensor final_state;  ///< [batch, v_heads, k_dim, v_dim] in the compute dtype, undefined unless requested
};

/// Per-token gated delta rule (the reference). With the state S_t: [k_dim, v_dim] per (batch, head),
/// a_t = exp(g_t), and q_t already scaled by `scale`:
///   S'_t = a_t S_{t-1}
///   S_t  = S'_t + k_t (beta_t (v_t - S'_t^T k_t))^T        (= a_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T)
///   o_t  = S_t^T q_t
/// q, k: [batch, seq, k_heads, k_dim]; v: [batch, seq, v_heads, v_dim]; g (log decay, <= 0), beta:
/// [batch, seq, v_heads]. v_heads must be a multiple of k_heads: query/key head i serves the value heads
/// i * r .. i * r + r - 1 (r = v_heads / k_heads, Hugging Face repeat_interleave). q and k are used as given
/// (normalise them beforehand); scale <= 0 means 1/sqrt(k_dim). initial_state: [batch, v_heads, k_dim, v_dim] or
/// undefined (zeros). Computed in fp32 (fp64 for fp64 inputs).
GatedDeltaRuleOutput recurrent_gated_delta_rule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                                const torch::Tensor& g, const torch::Tensor& beta,
                                                const torch::Tensor& initial_state = {},
                                                bool output_final_state = false, double scale = 0.0);

/// Chunked gated delta rule: the same function as recurrent_gated_delta_rule (equal up to rounding), computed
/// in chunks of `chunk_size` tokens (the sequence is zero-padded to a multiple; padded tokens have beta = 0 and
/// g = 0 and change nothing). Inside a chunk with cumulative log decay G_r = g_1 + ... + g_r and start state S_0,
/// the written values U = [u_1..u_C] solve the unit lower-triangular system
///   (I + A) U = diag(beta) V - diag(beta e^G) K S_0,   A_rs = beta_r e^(G_r - G_s) k_r.k_s for s < r
/// (solved with linalg_solve_triangular), then
///   O   = diag(e^G) Q S_0 + ((Q K^T) * D) U,   D_rs = e^(G_r - G_s) for s <= r, 0 otherwise
///   S_C = e^(G_C) S_0 + (diag(e^(G_C - G)) K)^T U.
/// The chunks are then scanned sequentially. Same shapes, dtypes and arguments as recurrent_gated_delta_rule.
GatedDeltaRuleOutput chunk_gated_delta_rule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                            const torch::Tensor& g, const torch::Tensor& beta, int64_t chunk_size,
                                            const torch::Tensor& initial_state = {}, bool output_final_state = false,
                                            double scale = 0.0);

}  // namespace recipebench::torch_model
