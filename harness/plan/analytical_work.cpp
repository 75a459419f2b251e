#include "plan/analytical_work.h"

namespace recipebench {

namespace {

/// Elements one token's pass of component `c` reads and writes per layer (per pass for the embedding and the LM
/// head) in its memory-bound kernels: analytical_memory_bytes's table over 2 bytes (the router's FP32 apart).
double elements_per_token(ProfileComponent c, const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size), k = static_cast<double>(m.top_k);
  switch (c) {
    case ProfileComponent::kEmbedding:
      return 2 * h;
    case ProfileComponent::kOther:
      return 2 * 2 * h + 2 * 3 * h;
    case ProfileComponent::kMoeDispatch:
      return 4 * k * h;
    case ProfileComponent::kMoeCombine:
      return 3 * k * h + h;
    case ProfileComponent::kMoeRest:
      return m.shared_expert_ffn > 0 ? (m.shared_expert_gate ? 5 * h : 3 * h) : 0.0;
    case ProfileComponent::kMoeRouter:
      return 6.0 * static_cast<double>(m.num_experts);  // 12 E bytes in FP32, as 6 E two-byte elements
    case ProfileComponent::kMoeExperts:
      return 3.0 * static_cast<double>(m.expert_ffn) * k;
    case ProfileComponent::kMoeSharedExpert:
      return 3.0 * static_cast<double>(m.shared_expert_ffn);
    case ProfileComponent::kDenseMlp:
      return 3.0 * static_cast<double>(m.intermediate_size);
    case ProfileComponent::kGdn: {
      const double dk = static_cast<double>(m.linear_key_dim()), dv = static_cast<double>(m.linear_value_dim());
      return 2 * (2 * dk + dv) + 4 * dk + 3 * dv;
    }
    case ProfileComponent::kAttention: {
      const double d = static_cast<double>(m.head_dim), q = static_cast<double>(m.num_attention_heads);
      const double heads = q + static_cast<double>(m.num_kv_heads);
      return m.family == ModelFamily::kQwen35 ? 4 * heads * d + 3 * q * d : 2 * heads * d;
    }
    case ProfileComponent::kLmHeadLoss:
      return 2.0 * static_cast<double>(m.vocab_size);
  }
  return 0;
}

}  // namespace

double analytical_memory_bytes(ProfileComponent c, const ModelConfig& m, const ChunkShape& s) {
  const double tokens = static_cast<double>(s.tokens) / s.tp;  // t = T / TP
  return component_runs(c, m, s) * elements_per_token(c, m) * kActivationBytes * tokens;
}

int forward_kernels(ProfileComponent c, const ModelConfig& m) {
  switch (c) {
    case ProfileComponent::kOther:
      return 4;
    case ProfileComponent::kEmbedding:
      return 1;
    case ProfileComponent::kLmHeadLoss:
      return 3;
    case ProfileComponent::kGdn:
      return 14;
    case ProfileComponent::kAttention:
      return 8;
    case ProfileComponent::kMoeRouter:
      return 4;
    case ProfileComponent::kMoeSharedExpert:
      return m.shared_expert_gate ? 5 : 4;
    case ProfileComponent::kMoeDispatch:
      return 6;
    case ProfileComponent::kMoeExperts:
    case ProfileComponent::kMoeCombine:
    case ProfileComponent::kDenseMlp:
      return 3;
    case ProfileComponent::kMoeRest:
      return 2;
  }
  return 0;
}

}  // namespace recipebench
