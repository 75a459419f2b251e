// Parameter counts of the config.json families counted by formula (docs/metrics.md, "Parameter counts by family"):
// hand counts on small configs, and the published totals of each family's model cards on their real config.json
// values (tests/data/hf_configs, README.md there names each file's source).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "catalog/hf_config.h"
#include "catalog/models.h"
#include "test_util.h"

using namespace recipebench;

namespace {

/// A small config of `type`: hidden 8, 2 heads of 4 (1 KV head), 2 layers, vocabulary 10, MLP 16, untied.
Json tiny(const std::string& type) {
  return Json{{"model_type", type},     {"vocab_size", 10},         {"hidden_size", 8},
              {"num_hidden_layers", 2}, {"num_attention_heads", 2}, {"num_key_value_heads", 1},
              {"head_dim", 4},          {"intermediate_size", 16},  {"tie_word_embeddings", false}};
}

ParamCounts counts(const Json& c) { return count_params(model_config_from_hf(c, "c.json", "m")); }

ParamCounts counts_of_file(const std::string& name) {
  return count_params(load_hf_config(test::source_path("tests/data/hf_configs/" + name)));
}

}  // namespace

// Each figure below is written out by hand from the family's modeling file (docs/metrics.md lists them).
TEST_CASE("hand counts of small configs, family by family", "[models][families]") {
  // Llama: q 8x8, k and v 8x4 each, o 8x8 = 192; MLP 3 x 8 x 16 = 384; norms 2 x 8 per layer, final 8;
  // embedding and output layer 10 x 8 each.
  const int64_t attn = 8 * 8 + 2 * 8 * 4 + 8 * 8, mlp = 3 * 8 * 16;
  ParamCounts c = counts(tiny("llama"));
  CHECK(c.attention_layer == 192);
  CHECK(c.active == 80 + 2 * (attn + mlp));               // 1,232
  CHECK(c.total == 80 + 80 + 8 + 2 * (attn + mlp + 16));  // 1,352
  CHECK(counts(tiny("mistral")).total == c.total);        // the same layout
  Json j = tiny("llama");
  j["attention_bias"] = true;  // q, k, v and o biases: 8 + 4 + 4 + 8
  j["mlp_bias"] = true;        // gate and up 16 each, down 8
  CHECK(counts(j).active == c.active + 2 * (24 + 40));
  j = tiny("llama");
  j["tie_word_embeddings"] = true;  // the output layer is the embedding: once in total, still in active
  CHECK(counts(j).total == c.total - 80);
  CHECK(counts(j).active == c.active);

  // Qwen2: q, k, v biases (8 + 4 + 4), no o bias.
  j = tiny("qwen2");
  j.erase("head_dim");  // not a Qwen2 field: hidden_size / heads = 4
  CHECK(counts(j).active == c.active + 2 * 16);
  // Qwen3: q/k norms (4 + 4 per layer) in total only.
  CHECK(counts(tiny("qwen3")).total == c.total + 2 * 8);
  CHECK(counts(tiny("qwen3")).active == c.active);

  // Mixtral: 4 experts of width 16, top 2, router 8 x 4.
  j = tiny("mixtral");
  j["num_local_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  c = counts(j);
  CHECK(c.moe_layer_active == 2 * 384 + 32);
  CHECK(c.moe_layer_total == 4 * 384 + 32);
  CHECK(c.active == 80 + 2 * (attn + 2 * 384 + 32));
  CHECK(c.total == 80 + 80 + 8 + 2 * (attn + 4 * 384 + 32 + 16));

  // Qwen3-MoE: experts of moe_intermediate_size 6 (3 x 8 x 6 = 144), q/k norms.
  j = tiny("qwen3_moe");
  j["num_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["moe_intermediate_size"] = 6;
  c = counts(j);
  CHECK(c.active == 80 + 2 * (attn + 2 * 144 + 32));
  CHECK(c.total == 80 + 80 + 8 + 2 * (attn + 8 + 4 * 144 + 32 + 16));

  // GPT-OSS: attention biases (24) and 2 sinks; experts with biases (gate_up 2 x 16 + down 8 = 40); router bias 4.
  j = tiny("gpt_oss");
  j["num_local_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  c = counts(j);
  const int64_t expert = 384 + 40, router = 32 + 4;
  CHECK(c.active == 80 + 2 * (attn + 24 + 2 * expert + router));
  CHECK(c.total == 80 + 80 + 8 + 2 * (attn + 24 + 2 + 4 * expert + router + 16));
}

TEST_CASE("DeepSeek-V3's MLA, shared expert and dense first layers by hand", "[models][families]") {
  Json j = {{"model_type", "deepseek_v3"},
            {"vocab_size", 10},
            {"hidden_size", 8},
            {"num_hidden_layers", 3},
            {"num_attention_heads", 2},
            {"num_key_value_heads", 2},
            {"q_lora_rank", 4},
            {"kv_lora_rank", 2},
            {"qk_nope_head_dim", 3},
            {"qk_rope_head_dim", 1},
            {"v_head_dim", 2},
            {"intermediate_size", 16},
            {"moe_intermediate_size", 4},
            {"n_routed_experts", 4},
            {"n_shared_experts", 1},
            {"num_experts_per_tok", 2},
            {"first_k_dense_replace", 1},
            {"num_nextn_predict_layers", 1}};
  const ModelConfig m = model_config_from_hf(j, "c.json", "m");
  CHECK(m.mtp_layers == 1);  // stated, not counted
  const ParamCounts c = count_params(m);
  // q_a 8x4, q_b 4 x 2 x (3+1), kv_a 8 x (2+1), kv_b 2 x 2 x (3+2), o 2 x 2 x 8: 32 + 32 + 24 + 20 + 32 = 140;
  // q_a and kv_a norms 4 + 2 in total only.
  CHECK(c.attention_layer == 140);
  // An expert 3 x 8 x 4 = 96; MoE layer: router 8 x 4, 2 routed + 1 shared (no gate); score bias 4 in total only.
  CHECK(c.moe_layer_active == 3 * 96 + 32);
  CHECK(c.moe_layer_total == 5 * 96 + 32 + 4);
  CHECK(c.active == 80 + 3 * 140 + 384 + 2 * (3 * 96 + 32));
  CHECK(c.total == 80 + 80 + 8 + 3 * (140 + 6 + 16) + 384 + 2 * (5 * 96 + 32 + 4));
  j["q_lora_rank"] = nullptr;  // q projected directly: 8 x 2 x 4
  CHECK(count_params(model_config_from_hf(j, "c.json", "m")).attention_layer == 64 + 24 + 20 + 32);
}

namespace {

/// A model card's figure in billions and the digits it gives (8.03 -> 0.01): ours within one unit of its last digit
/// (cards round, some truncate: Qwen3-30B-A3B's 3.35B activated is written 3.3B).
bool within_card(int64_t ours, double billions, double unit) {
  return std::fabs(static_cast<double>(ours) / 1e9 - billions) < unit;
}

}  // namespace

TEST_CASE("real configs of each family give their model cards' totals", "[models][families]") {
  struct Card {
    const char* file;
    int64_t total, active;  // ours, exact (docs/metrics.md lists them)
    double card_total, total_unit;
    double card_active, active_unit;
    bool card_counts_embedding;  // the card's active figure counts the input embedding (ours never does)
  };
  const Card cards[] = {
      {"llama-3.1-8b.json", 8030261248, 7504658432, 8.03, 0.01, 0, 0, false},
      {"llama-3.1-70b.json", 70553706496, 69501714432, 70.6, 0.1, 0, 0, false},
      {"mistral-7b-v0.1.json", 7241732096, 7110393856, 7.24, 0.01, 0, 0, false},
      {"mixtral-8x7b.json", 46702792704, 12748587008, 46.7, 0.1, 12.9, 0.1, true},
      {"qwen2-7b.json", 7615616512, 7070414848, 7.62, 0.01, 0, 0, false},
      {"qwen3-8b.json", 8190735360, 7568097280, 8.2, 0.1, 0, 0, false},
      {"qwen3-30b-a3b.json", 30532122624, 3041656832, 30.5, 0.1, 3.3, 0.1, true},
      {"qwen3-235b-a22b.json", 235093634560, 21567635456, 235, 1, 22, 1, true},
      {"deepseek-v3.json", 671026419200, 36624596992, 671, 1, 37, 1, false},
      {"gpt-oss-120b.json", 116829156672, 5132636928, 116.83, 0.01, 5.13, 0.01, false},
      {"gpt-oss-20b.json", 20914757184, 3608164608, 20.91, 0.01, 3.61, 0.01, false},
  };
  for (const Card& card : cards) {
    INFO(card.file);
    const ParamCounts c = counts_of_file(card.file);
    CHECK(c.total == card.total);
    CHECK(c.active == card.active);
    CHECK(within_card(c.total, card.card_total, card.total_unit));
    if (card.card_active > 0)
      CHECK(within_card(c.active + (card.card_counts_embedding ? c.embedding : 0), card.card_active, card.active_unit));
  }
  // Qwen3's cards also give the non-embedding count (embedding and output layer left out): 6.95B, 29.9B, 234B.
  const ParamCounts q8 = counts_of_file("qwen3-8b.json");
  CHECK(within_card(q8.total - q8.embedding - q8.output_layer, 6.95, 0.01));
  const ParamCounts q30 = counts_of_file("qwen3-30b-a3b.json");
  CHECK(within_card(q30.total - q30.embedding - q30.output_layer, 29.9, 0.1));
}

TEST_CASE("a counted family's config: its missing, unknown and uncounted fields are located", "[models][families]") {
  Json j = tiny("llama");
  j.erase("intermediate_size");
  CHECK_THROWS_WITH(model_config_from_hf(j, "c.json", "m"),
                    "c.json: intermediate_size: missing, expected an integer from 1 to 1048576");
  j = tiny("mistral");
  j["num_local_experts"] = 8;  // a Mixtral field in a Mistral config: never ignored
  CHECK_THROWS_WITH(model_config_from_hf(j, "c.json", "m"),
                    Catch::StartsWith("c.json: num_local_experts: 8, expected no such field of a mistral config"));
  j = tiny("qwen3_moe");
  j["num_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["moe_intermediate_size"] = 6;
  j["mlp_only_layers"] = {0};
  CHECK_THROWS_WITH(model_config_from_hf(j, "c.json", "m"),
                    "c.json: mlp_only_layers: [0], expected [] (recipebench counts qwen3_moe with every layer sparse; "
                    "docs/hf-config-fields.md)");
  j = tiny("llama");
  j["num_key_value_heads"] = 3;
  CHECK_THROWS_WITH(model_config_from_hf(j, "c.json", "m"),
                    "c.json: num_key_value_heads: 3, expected a divisor of num_attention_heads (2)");
  j = tiny("gpt_oss");
  j["num_local_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["experts_per_token"] = 3;
  CHECK_THROWS_WITH(model_config_from_hf(j, "c.json", "m"),
                    "c.json: experts_per_token: 3, expected 2, the value of num_experts_per_tok (both are read; they "
                    "must agree)");
  // A Qwen3.5-shaped config named qwen3_moe (case hf-config-unsupported-family): read as qwen3_moe, whose fields
  // these are not, so it is refused at its first Qwen3.5 field, never counted as Qwen3.5.
  CHECK_THROWS_WITH(load_hf_config(test::source_path("tests/data/cases/hf-config-unsupported-family/"
                                                     "tiny-wrong-model-type.json")),
                    Catch::Contains("expected no such field of a qwen3_moe config"));
}

// ---------------------------------------------------------------- a recipe's model outside the registry

#include "plan/memory_check.h"
#include "recipe/run_model.h"
#include "recipe/validate.h"

namespace {

const std::string kLlamaCase = "tests/data/cases/unregistered-model-recipe/recipes/llama-3.1-8b/h100/tp1-dp8.yaml";

/// The case's Llama recipe with `from` replaced by `to` (the first occurrence), validated as `name` in the case's
/// folder (so a model_params.config path resolves against it).
ValidatedRecipe llama_with(const std::string& from, const std::string& to) {
  std::string text = test::read_file(test::source_path(kLlamaCase));
  if (!from.empty()) {
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), to);
  }
  return validate_recipe_text(text, test::source_path(kLlamaCase));
}

std::string all(const Diagnostics& ds) {
  std::string out;
  for (const auto& d : ds) out += d.to_string() + "\n";
  return out;
}

}  // namespace

TEST_CASE("unregistered-model-recipe: a model outside the registry with its stated N validates, with a warning",
          "[models][families][cases]") {
  const ValidatedRecipe v = llama_with("", "");
  INFO(all(v.errors));
  REQUIRE(v.ok());
  REQUIRE(v.warnings.size() == 1);
  CHECK(v.warnings[0].severity == "warning");
  CHECK(v.warnings[0].path == "model");
  CHECK_THAT(v.warnings[0].to_string(),
             Catch::Contains("warning: model: 'Llama-3.1-8B' is outside the registry, known by its stated counts only "
                             "(stated: result.active_params.count (https://huggingface.co/meta-llama/Llama-3.1-8B)), "
                             "expected model_params.config"));
  const std::optional<RunModel> ran = run_model(*v.recipe);
  REQUIRE(ran);
  CHECK(ran->counts_from == CountsFrom::kStated);
  CHECK(count_params(ran->model).active == 6979321856);  // the recipe's N, used for MFU as stated
  // The memory plan models the torch backend's family only: not checked, and said.
  const auto d = check_memory_fits(*v.recipe, test::source_path(kLlamaCase), true);
  REQUIRE(d);
  CHECK(d->severity == "warning");
  CHECK_THAT(d->to_string(),
             Catch::Contains("model: the memory plan is not checked: Llama-3.1-8B is known by its stated "
                             "counts only"));
}

TEST_CASE("a recipe's model_params: a config.json counted and checked, stated counts with their source",
          "[models][families]") {
  // The case recipe with the Llama config.json of tests/data/hf_configs: counted by formula, so the stated N
  // (6,979,321,856, no output layer) is held against the formula's 7,504,658,432.
  ValidatedRecipe v = llama_with("gpu:", "model_params:\n  config: ../../../../../hf_configs/llama-3.1-8b.json\ngpu:");
  REQUIRE(v.errors.size() == 1);
  CHECK_THAT(v.errors[0].to_string(),
             Catch::Contains("error: result.active_params.count: 6,979,321,856, expected 7,504,658,432 active "
                             "parameters of the 32-layer Llama-3.1-8B that ran"));
  CHECK(v.warnings.empty());  // the architecture is known: nothing left unchecked
  // With the formula's N it validates; TP 3 is refused on its 32 heads and 8 KV heads.
  std::string text = test::read_file(test::source_path(kLlamaCase));
  text.replace(text.find("gpu:"), 4, "model_params:\n  config: ../../../../../hf_configs/llama-3.1-8b.json\ngpu:");
  text.replace(text.find("count: 6979321856"), 17, "count: 7504658432");
  v = validate_recipe_text(text, test::source_path(kLlamaCase));
  INFO(all(v.errors));
  CHECK(v.ok());
  text.replace(text.find("tp: 1"), 5, "tp: 3");
  v = validate_recipe_text(text, test::source_path(kLlamaCase));
  CHECK_THAT(all(v.errors), Catch::Contains("layout.tp: TP 3, which does not divide the 32 attention heads, 8 KV "
                                            "heads of Llama-3.1-8B"));
  // A config.json of an unknown family: the config's own located error, at model_params.config.
  v = llama_with("gpu:",
                 "model_params:\n  config: ../../../../hf-config-unsupported-family/tiny-wrong-model-type.json\ngpu:");
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].path == "model_params.config");
  CHECK_THAT(v.errors[0].found, Catch::Contains("tiny-wrong-model-type.json:"));
  CHECK_THAT(v.errors[0].found, Catch::Contains("no such field of a qwen3_moe config"));
  // Stated counts need their source, a total at least the active count, and agree with each other.
  v = llama_with("    source: https://huggingface.co/meta-llama/Llama-3.1-8B\n", "");
  REQUIRE(v.errors.size() == 1);
  CHECK_THAT(v.errors[0].to_string(), Catch::Contains("result.active_params: count 6,979,321,856 without its source"));
  v = llama_with("gpu:", "model_params:\n  active: 6979321856\n  total: 8030261248\ngpu:");
  REQUIRE(v.errors.size() == 1);
  CHECK_THAT(v.errors[0].to_string(), Catch::Contains("model_params: stated counts without model_params.source"));
  v = llama_with("gpu:", "model_params:\n  active: 6979321856\n  total: 6000000000\n  source: card\ngpu:");
  CHECK_THAT(all(v.errors),
             Catch::Contains("model_params.total: 6,000,000,000, expected at least model_params.active"));
  v = llama_with("gpu:", "model_params:\n  active: 7000000000\n  source: card\ngpu:");
  CHECK_THAT(all(v.errors), Catch::Contains("result.active_params.count: 6,979,321,856, expected 7,000,000,000, "
                                            "model_params.active"));
  // Stated counts of a registry model must be the formula's.
  text = test::read_file(test::source_path("tests/data/dist/tiny-dp2.yaml"));
  text.replace(text.find("gpu:"), 4, "model_params:\n  active: 1000\n  source: guess\ngpu:");
  v = validate_recipe_text(text, "t.yaml");
  CHECK_THAT(all(v.errors), Catch::Contains("model_params.active: 1,000, expected 177,408 (counted by the registry's "
                                            "formula for Qwen3.5-tiny; docs/metrics.md)"));
}

TEST_CASE("a name near a registry model's, with stated counts: accepted, and the warning asks", "[models][families]") {
  const ValidatedRecipe v = llama_with("model: Llama-3.1-8B", "model: Qwen3-397B-A17B");
  REQUIRE(v.ok());
  REQUIRE(v.warnings.size() == 1);
  CHECK_THAT(v.warnings[0].found, Catch::EndsWith("; did you mean Qwen3.5-397B-A17B?"));
}
