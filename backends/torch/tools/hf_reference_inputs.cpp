// Writes the inputs of the Hugging Face parity check (tests/reference/README.md), deterministically:
//   weights.safetensors  the tiny model's ("Qwen3.5-tiny") float32 parameters under Hugging Face's names
//   batch.safetensors    input_ids int64 [2, 45] and loss_mask int64 [2, 45]
//   config.json          the Hugging Face Qwen3_5MoeTextConfig of the same model
// tests/reference/hf_reference.py runs transformers' Qwen3_5MoeForCausalLM on them (reference.safetensors,
// reference.json) and backends/torch/tests/test_hf_parity.cpp checks that recipebench reproduces the result.
//
// The weights are not the training init (std 0.02, zero norms, dt_bias 1): every matrix is N(0, 1/fan_in), the
// embedding N(0, 1), the zero-centred norm weights N(0, 0.3^2), the gated norms N(1, 0.3^2), A_log = log U(0.02,
// 0.5) and dt_bias N(0.5, 0.5^2), so that every mixer contributes to the logits at order 1 and the recurrent
// state of the Gated DeltaNet carries across chunks. 45 tokens are two whole GDN chunks of 16 and a part.
//
// usage: recipebench_hf_reference_inputs [--out DIR]   (default: <source>/tests/data/hf-parity)
#include "catalog/models.h"
#include "model/qwen35_moe.h"
#include "model/safetensors.h"

#include <torch/types.h>
#include <torch/utils.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#ifndef RECIPEBENCH_SOURCE_DIR
#define RECIPEBENCH_SOURCE_DIR "."
#endif

using namespace recipebench::torch_model;

namespace {

constexpr uint64_t kSeed = 20261129;
constexpr int64_t kBatch = 2, kSeq = 45;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// Re-draws every parameter (see the file comment). Throws on a parameter it does not know how to draw.
void draw_weights(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (const auto& kv : m.named_parameters()) {
    const std::string& n = kv.key();
    auto p = kv.value();
    if (ends_with(n, "A_log"))
      p.uniform_(0.02, 0.5).log_();
    else if (ends_with(n, "dt_bias"))
      p.normal_(0.5, 0.5);
    else if (ends_with(n, "linear_attn.norm.weight"))
      p.normal_(1.0, 0.3);  // gated RMSNorm: y = norm(x) * w * silu(z), identity at w = 1
    else if (ends_with(n, "norm.weight") || ends_with(n, "layernorm.weight"))
      p.normal_(0.0, 0.3);  // zero-centred RMSNorm: y = norm(x) * (1 + w)
    else if (n == "model.embed_tokens.weight")
      p.normal_(0.0, 1.0);
    else if (p.dim() >= 2)
      p.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(p.size(-1))));  // [.., out, in] or conv [C, 1, K]
    else
      throw std::runtime_error("no drawing rule for parameter " + n);
  }
}

double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  const auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  return (ad - bd).norm().item<double>() / bd.norm().item<double>();
}

/// The Hugging Face Qwen3_5MoeTextConfig (config.json of a text-only checkpoint) of `c`.
nlohmann::ordered_json hf_config(const recipebench::ModelConfig& c) {
  nlohmann::ordered_json layer_types = nlohmann::ordered_json::array();
  for (int64_t i = 0; i < c.num_layers; ++i)
    layer_types.push_back(c.is_full_attention(i) ? "full_attention" : "linear_attention");
  const double partial = static_cast<double>(c.rope_dims) / static_cast<double>(c.head_dim);
  return {
      {"architectures", {"Qwen3_5MoeForCausalLM"}},
      {"model_type", "qwen3_5_moe_text"},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden_size},
      {"num_hidden_layers", c.num_layers},
      {"layer_types", layer_types},
      {"full_attention_interval", c.full_attention_interval},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"attention_bias", false},
      {"partial_rotary_factor", partial},
      {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", c.rope_theta}, {"partial_rotary_factor", partial}}},
      {"linear_num_key_heads", c.linear_num_key_heads},
      {"linear_num_value_heads", c.linear_num_value_heads},
      {"linear_key_head_dim", c.linear_key_head_dim},
      {"linear_value_head_dim", c.linear_value_head_dim},
      {"linear_conv_kernel_dim", c.linear_conv_kernel},
      {"num_experts", c.num_experts},
      {"num_experts_per_tok", c.top_k},
      {"moe_intermediate_size", c.expert_ffn},
      {"shared_expert_intermediate_size", c.shared_expert_ffn},
      {"mtp_num_hidden_layers", c.mtp_layers},
      {"hidden_act", "silu"},
      {"rms_norm_eps", c.rms_norm_eps},
      {"tie_word_embeddings", false},
      {"max_position_embeddings", 4096},
      {"initializer_range", 0.02},
      {"output_router_logits", false},
      {"use_cache", false},
  };
}

std::string fmt(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

int run(const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  const recipebench::ModelConfig* found = recipebench::find_model("Qwen3.5-tiny");
  if (!found) throw std::runtime_error("Qwen3.5-tiny is not in the model registry");
  const recipebench::ModelConfig cfg = *found;
  if (kSeq % cfg.gdn_chunk_size == 0)
    throw std::runtime_error("the sequence length must not be a multiple of the GDN chunk");

  torch::manual_seed(kSeed);
  Qwen35MoeForCausalLM lm(cfg);
  draw_weights(*lm);
  const auto ids = torch::randint(0, cfg.vocab_size, {kBatch, kSeq}, torch::kLong);
  auto mask = torch::zeros({kBatch, kSeq}, torch::kLong);
  mask[0].narrow(0, 12, kSeq - 12).fill_(1);  // row 0: a 12-token prompt, then the response to the end
  mask[1].narrow(0, 6, 32).fill_(1);          // row 1: 6-token prompt, 32 supervised tokens, 7 unsupervised

  lm->eval();
  torch::NoGradGuard no_grad;
  const auto logits = lm(ids);
  const auto loss = lm->sft_loss(ids, mask).item<double>();
  Qwen35MoeForCausalLM lm64(cfg);
  load_named_parameters(*lm64, named_parameters_of(*lm), "the float32 weights");
  lm64->to(torch::kDouble);
  lm64->eval();
  const auto logits64 = lm64(ids);
  const auto loss64 = lm64->sft_loss(ids, mask).item<double>();

  const std::string generator = "recipebench_hf_reference_inputs (backends/torch/tools/hf_reference_inputs.cpp)";
  const std::string weights = out_dir + "/weights.safetensors", batch = out_dir + "/batch.safetensors",
                    config = out_dir + "/config.json";
  write_safetensors(weights, named_parameters_of(*lm),
                    {{"format", "pt"}, {"model", cfg.name}, {"seed", std::to_string(kSeed)}, {"generator", generator}});
  write_safetensors(batch, {{"input_ids", ids}, {"loss_mask", mask}},
                    {{"format", "pt"},
                     {"generator", generator},
                     {"loss_convention",
                      "position t predicts input_ids[:, t+1], counted where loss_mask[:, t+1]; "
                      "mean over the supervised tokens"},
                     {"recipebench_loss_fp32", fmt(loss)},
                     {"recipebench_loss_fp64", fmt(loss64)}});
  {
    std::ofstream out(config);
    out << hf_config(cfg).dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + config);
  }
  int64_t supervised = mask.narrow(1, 1, kSeq - 1).sum().item<int64_t>();
  std::printf(
      "wrote %s (%zu float32 tensors, %lld parameters), %s (input_ids and loss_mask [%lld, %lld], %lld "
      "supervised tokens), %s\n",
      weights.c_str(), lm->named_parameters().size(), static_cast<long long>(recipebench::count_params(cfg).total),
      batch.c_str(), static_cast<long long>(kBatch), static_cast<long long>(kSeq), static_cast<long long>(supervised),
      config.c_str());
  std::printf(
      "recipebench: loss fp32 %.9f, fp64 %.12f (relative difference %.2e); logits std %.3f, fp32 vs fp64 "
      "relative error %.2e\n",
      loss, loss64, std::abs(loss - loss64) / std::abs(loss64), logits64.std().item<double>(),
      rel_err(logits, logits64));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = std::string(RECIPEBENCH_SOURCE_DIR) + "/tests/data/hf-parity";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--out DIR]  (default %s)\n", argv[0], out.c_str());
      return 2;
    }
  }
  try {
    return run(out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
