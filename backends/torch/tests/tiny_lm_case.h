// The loss tests' shared fixture: the tiny model in float64, one SFT batch and the reference loss of the model's
// full logits (test_model_loss.cpp, test_lm_loss.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <torch/types.h>
#include <torch/utils.h>

#include <cstdint>

#include "catalog/models.h"
#include "model/qwen35_moe.h"

namespace rbt_test {

/// The tiny model (float64, initialised after torch::manual_seed(seed)), ids [2, 9] drawn from its vocabulary, a
/// mask [2, 9] that is false on the first `masked_prefix` tokens of each row, the model's logits [2, 9, vocab] and
/// `expect`: sft_loss of logits[:, 0:8] against ids[:, 1:9] under mask[:, 1:9] (targets shifted by one token).
struct TinyLmCase {
  const recipebench::ModelConfig* config = nullptr;
  recipebench::torch_model::Qwen35MoeForCausalLM lm{nullptr};
  torch::Tensor ids, mask, logits, expect;
};

inline TinyLmCase tiny_lm_case(uint64_t seed, int64_t masked_prefix) {
  torch::manual_seed(seed);
  TinyLmCase c;
  c.config = recipebench::find_model("Qwen3.5-tiny");
  REQUIRE(c.config != nullptr);
  c.lm = recipebench::torch_model::Qwen35MoeForCausalLM(*c.config);
  c.lm->to(torch::kDouble);
  c.ids = torch::randint(0, c.config->vocab_size, {2, 9}, torch::kLong);
  c.mask = torch::ones({2, 9}, torch::kBool);
  c.mask.narrow(1, 0, masked_prefix).fill_(false);
  c.logits = c.lm(c.ids);
  c.expect =
      recipebench::torch_model::sft_loss(c.logits.narrow(1, 0, 8), c.ids.narrow(1, 1, 8), c.mask.narrow(1, 1, 8));
  return c;
}

}  // namespace rbt_test
