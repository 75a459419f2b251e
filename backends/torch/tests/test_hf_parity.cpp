// Safetensors reading and writing, loading weights by Hugging Face name, and the parity of recipebench's model
// with Hugging Face transformers' Qwen3_5MoeForCausalLM on committed weights and logits (tests/data/hf-parity,
// produced as tests/reference/README.md says).
#include "catalog/hf_config.h"
#include "catalog/models.h"
#include "model/qwen35_moe.h"
#include "model/safetensors.h"
#include "record/run_record.h"
#include "test_util.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include "temp_dir.h"

#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

namespace fs = std::filesystem;

const std::string kDataDir = std::string(RECIPEBENCH_SOURCE_DIR) + "/tests/data/hf-parity";
const std::string kRegenerateInputs =
    "build/backends/torch/recipebench_hf_reference_inputs (writes tests/data/hf-parity/{weights,batch}.safetensors "
    "and config.json)";
const std::string kRegenerateReference =
    "on the GPU machine (python3 with torch and transformers): `bash tests/reference/run_on_gpu_machine.sh` from the "
    "repository root, then commit tests/data/hf-parity/reference.safetensors and reference.json "
    "(tests/reference/README.md)";

/// A fresh empty folder, removed at the end of the scope (temp_dir.h says why not std::filesystem::remove_all).
struct TempDir : recipebench::test::TempDir {
  TempDir() : recipebench::test::TempDir("rb-safetensors") {}
};

/// Writes a safetensors file by hand: the 8-byte little-endian size of `header`, `header`, `data`.
void write_raw(const std::string& path, const std::string& header, const std::string& data, int64_t size_field = -1) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = size_field >= 0 ? static_cast<uint64_t>(size_field) : header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << data;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The message of the std::runtime_error that `fn` throws ("" when it throws none).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

recipebench::ModelConfig tiny() { return *recipebench::find_model("Qwen3.5-tiny"); }

}  // namespace

TEST_CASE("safetensors round trip keeps names, order, dtypes, shapes, values and metadata", "[safetensors]") {
  torch::manual_seed(5);
  const NamedTensors tensors = {
      {"model.layers.0.mlp.experts.gate_up_proj", torch::randn({3, 4, 5})},
      {"a.scalar_f64", torch::tensor(3.25, torch::kDouble).reshape({})},
      {"b.bf16", torch::randn({7}).to(torch::kBFloat16)},
      {"c.f16", torch::randn({2, 2}).to(torch::kHalf)},
      {"input_ids", torch::randint(0, 248320, {2, 9}, torch::kLong)},
      {"i32", torch::randint(-5, 5, {3}, torch::kInt)},
      {"u8", torch::randint(0, 255, {5}, torch::kByte)},
      {"mask", torch::rand({4}) > 0.5},
      {"empty", torch::zeros({0, 3})},
      {"transposed", torch::randn({3, 5}).t()},  // not contiguous: written in C order of its shape [5, 3]
  };
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "round \"trip\" \n"}};
  TempDir dir;
  const auto path = dir.file("t.safetensors");
  write_safetensors(path, tensors, meta);
  CHECK_FALSE(fs::exists(path + ".tmp"));

  const auto bytes = read_bytes(path);
  REQUIRE(bytes.size() > 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  CHECK((8 + n) % 8 == 0);  // the data starts 8-byte aligned
  CHECK(bytes[8] == '{');
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(header["b.bf16"]["dtype"] == "BF16");
  CHECK(header["a.scalar_f64"]["shape"] == nlohmann::json::array());
  CHECK(header["transposed"]["shape"] == nlohmann::json({5, 3}));
  CHECK(header["__metadata__"]["format"] == "pt");

  const auto file = read_safetensors(path);
  REQUIRE(file.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(file.tensors[i].first == tensors[i].first);  // written in order, read in data order
    CHECK(file.tensors[i].second.scalar_type() == tensors[i].second.scalar_type());
    CHECK(file.tensors[i].second.sizes() == tensors[i].second.sizes());
    CHECK(torch::equal(file.tensors[i].second, tensors[i].second));
  }
  CHECK(file.metadata == meta);
  CHECK(file.contains("u8"));
  CHECK_FALSE(file.contains("nope"));
  CHECK(has(error_of([&] { file.get("nope"); }), "no tensor named 'nope'"));

  // Writer errors.
  CHECK(has(error_of([&] {
              write_safetensors(dir.file("d.safetensors"), {{"x", torch::ones({1})}, {"x", torch::ones({1})}});
            }),
            "'x' given twice"));
  CHECK(has(error_of([&] {
              write_safetensors(dir.file("d.safetensors"), {{"__metadata__", torch::ones({1})}});
            }),
            "reserved"));
  CHECK(has(error_of([&] {
              write_safetensors(dir.file("d.safetensors"), {{"c", torch::ones({1}, torch::kComplexFloat)}});
            }),
            "tensor 'c' has dtype"));
}

TEST_CASE("safetensors reader reads a file written by hand after the specification", "[safetensors]") {
  // Tensors listed out of data order, metadata last, a header without padding, little-endian values.
  const std::string header =
      R"({"b":{"dtype":"I64","shape":[2],"data_offsets":[8,24]},"a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},)"
      R"("__metadata__":{"format":"pt"}})";
  std::string data;
  const float a[2] = {1.5f, -2.0f};
  const int64_t b[2] = {7, -1};
  data.append(reinterpret_cast<const char*>(a), sizeof a).append(reinterpret_cast<const char*>(b), sizeof b);
  TempDir dir;
  write_raw(dir.file("h.safetensors"), header, data);
  const auto f = read_safetensors(dir.file("h.safetensors"));
  REQUIRE(f.tensors.size() == 2);
  CHECK(f.tensors[0].first == "a");
  CHECK(f.tensors[1].first == "b");
  CHECK(torch::equal(f.get("a"), torch::tensor({1.5f, -2.0f}).view({2, 1})));
  CHECK(torch::equal(f.get("b"), torch::tensor({int64_t{7}, int64_t{-1}})));
  CHECK(f.metadata.at("format") == "pt");
}

TEST_CASE("safetensors reader rejects malformed files with a message naming the problem", "[safetensors]") {
  TempDir dir;
  const auto p = dir.file("bad.safetensors");
  const std::string f32x2(8, '\0');
  auto err = [&](const std::string& header, const std::string& data, int64_t size_field = -1) {
    write_raw(p, header, data, size_field);
    return error_of([&] { read_safetensors(p); });
  };
  {
    std::ofstream(p, std::ios::binary) << "abc";
    const auto e = error_of([&] { read_safetensors(p); });
    CHECK(has(e, "bad header size"));
    CHECK(has(e, p));
  }
  CHECK(has(err("{}", "", 1000), "bad header size 1000"));
  CHECK(has(err("not json", ""), "not valid JSON"));
  CHECK(has(err("[1, 2]", ""), "expected an object"));
  CHECK(has(err(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", f32x2), "tensor 'w': unknown dtype 'Q4'"));
  CHECK(has(err(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", f32x2), "tensor 'w': missing or non-string dtype"));
  CHECK(has(err(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", f32x2), "tensor 'w': missing shape"));
  CHECK(has(err(R"({"w":{"dtype":"F32","shape":[2]}})", f32x2), "tensor 'w': data_offsets missing"));
  CHECK(has(err(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f32x2), "not a list of sizes"));
  CHECK(has(err(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", f32x2),
            "tensor 'w': data_offsets [0, 16] out of range: the data buffer has 8 bytes"));
  CHECK(has(err(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f32x2), "needs 3 x 4"));
  CHECK(has(err(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32x2), "belong to no tensor"));
  CHECK(has(err(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32x2), "tensors cover 4"));
  CHECK(has(
      err(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          f32x2),
      "overlaps"));
  CHECK(has(err(R"({"__metadata__":{"x":1}})", ""), "__metadata__.x is 1, expected a string"));
  CHECK(has(error_of([&] { read_safetensors(dir.file("absent.safetensors")); }), "cannot open"));
}

TEST_CASE("loading weights by name rejects missing, extra and mis-shaped tensors and names them", "[safetensors]") {
  torch::manual_seed(3);
  Qwen35MoeForCausalLM src(tiny()), dst(tiny());
  const auto before = named_parameters_of(*dst);
  std::vector<torch::Tensor> snapshot;
  for (const auto& nt : before) snapshot.push_back(nt.second.detach().clone());

  NamedTensors all;
  for (const auto& nt : named_parameters_of(*src)) all.emplace_back(nt.first, nt.second.detach().clone());

  auto without = [&](const std::string& name) {
    NamedTensors v;
    for (const auto& nt : all)
      if (nt.first != name) v.push_back(nt);
    return v;
  };
  {
    const auto e =
        error_of([&] { load_named_parameters(*dst, without("model.layers.0.linear_attn.A_log"), "test.safetensors"); });
    CHECK(has(e, "test.safetensors"));
    CHECK(has(e, "missing 1: model.layers.0.linear_attn.A_log"));
  }
  {
    auto v = all;
    v.emplace_back("mtp.fc.weight", torch::zeros({2, 2}));
    const auto e = error_of([&] { load_named_parameters(*dst, v, "x"); });
    CHECK(has(e, "not parameters of the model 1: mtp.fc.weight"));
  }
  {
    auto v = without("model.norm.weight");
    v.emplace_back("model.norm.weight", torch::zeros({63}));
    const auto e = error_of([&] { load_named_parameters(*dst, v, "x"); });
    CHECK(has(e, "wrong shape 1: model.norm.weight ([63], parameter [64])"));
  }
  // Nothing was copied by the failed loads.
  for (size_t i = 0; i < before.size(); ++i) CHECK(torch::equal(before[i].second, snapshot[i]));

  // Through a file, in float64: converted to the float32 parameters, values equal after rounding.
  TempDir dir;
  NamedTensors f64;
  for (const auto& nt : all) f64.emplace_back(nt.first, nt.second.to(torch::kDouble));
  write_safetensors(dir.file("w.safetensors"), f64);
  load_named_parameters(*dst, read_safetensors(dir.file("w.safetensors")).tensors, "w.safetensors");
  const auto after = named_parameters_of(*dst);
  for (size_t i = 0; i < after.size(); ++i) {
    INFO(after[i].first);
    CHECK(after[i].second.scalar_type() == torch::kFloat);
    CHECK(torch::equal(after[i].second, all[i].second));
  }
}

namespace {

struct ParityInputs {
  Qwen35MoeForCausalLM model{nullptr};
  torch::Tensor input_ids, loss_mask;
};

/// The committed weights and batch in recipebench's float32 tiny model; FAILs the test when they are absent.
ParityInputs load_inputs() {
  for (const char* f : {"weights.safetensors", "batch.safetensors", "config.json"})
    if (!fs::exists(kDataDir + "/" + f))
      FAIL(kDataDir << "/" << f << " is missing: regenerate with " << kRegenerateInputs);
  ParityInputs in;
  in.model = Qwen35MoeForCausalLM(tiny());
  load_named_parameters(*in.model, read_safetensors(kDataDir + "/weights.safetensors").tensors, "weights.safetensors");
  in.model->eval();
  const auto batch = read_safetensors(kDataDir + "/batch.safetensors");
  in.input_ids = batch.get("input_ids");
  in.loss_mask = batch.get("loss_mask");
  return in;
}

}  // namespace

TEST_CASE("the committed config.json describes recipebench's tiny model", "[hf-parity]") {
  const auto path = kDataDir + "/config.json";
  if (!fs::exists(path)) FAIL(path << " is missing: regenerate with " << kRegenerateInputs);
  const auto hf = recipebench::load_hf_config(path);
  const auto t = tiny();
  CHECK(hf.vocab_size == t.vocab_size);
  CHECK(hf.hidden_size == t.hidden_size);
  CHECK(hf.num_layers == t.num_layers);
  CHECK(hf.full_attention_interval == t.full_attention_interval);
  CHECK(hf.num_attention_heads == t.num_attention_heads);
  CHECK(hf.num_kv_heads == t.num_kv_heads);
  CHECK(hf.head_dim == t.head_dim);
  CHECK(hf.rope_dims == t.rope_dims);
  CHECK(hf.rope_theta == t.rope_theta);
  CHECK(hf.rms_norm_eps == t.rms_norm_eps);
  CHECK(hf.linear_num_key_heads == t.linear_num_key_heads);
  CHECK(hf.linear_num_value_heads == t.linear_num_value_heads);
  CHECK(hf.linear_key_head_dim == t.linear_key_head_dim);
  CHECK(hf.linear_value_head_dim == t.linear_value_head_dim);
  CHECK(hf.linear_conv_kernel == t.linear_conv_kernel);
  CHECK(hf.num_experts == t.num_experts);
  CHECK(hf.top_k == t.top_k);
  CHECK(hf.expert_ffn == t.expert_ffn);
  CHECK(hf.shared_expert_ffn == t.shared_expert_ffn);
  CHECK(hf.mtp_layers == t.mtp_layers);
}

TEST_CASE("recipebench reproduces Hugging Face transformers' logits and loss (tiny model, float32, CPU)",
          "[hf-parity]") {
  auto in = load_inputs();
  const auto ref_st = kDataDir + "/reference.safetensors", ref_json = kDataDir + "/reference.json";
  if (!fs::exists(ref_st) || !fs::exists(ref_json))
    FAIL("the Hugging Face reference " << (fs::exists(ref_st) ? ref_json : ref_st) << " is not there yet: produce it "
                                       << kRegenerateReference);
  nlohmann::json ref;
  {
    std::ifstream f(ref_json);
    ref = nlohmann::json::parse(f);
  }
  // The reference must have been computed from the committed inputs.
  if (ref.contains("inputs_sha256"))
    for (const char* f : {"weights.safetensors", "batch.safetensors", "config.json"}) {
      INFO(f << ": reference.json was computed from other inputs; regenerate the reference " << kRegenerateReference);
      CHECK(ref["inputs_sha256"].value(f, std::string()) == recipebench::sha256_file(kDataDir + "/" + f));
    }
  const auto ref_logits = read_safetensors(ref_st).get("logits");
  const double ref_loss = ref.at("loss").get<double>();

  torch::NoGradGuard no_grad;
  const auto logits = in.model(in.input_ids);
  const double loss = in.model->sft_loss(in.input_ids, in.loss_mask).item<double>();
  REQUIRE(logits.scalar_type() == torch::kFloat);
  REQUIRE(ref_logits.sizes() == logits.sizes());
  const double logits_err = rel_err(logits, ref_logits);
  const double loss_err = std::abs(loss - ref_loss) / std::abs(ref_loss);
  std::printf(
      "HF parity (transformers %s, %s): logits relative L2 error %.3e, loss recipebench %.9f vs HF %.9f "
      "(relative error %.3e); tolerance 1e-4\n",
      ref.value("transformers", std::string("?")).c_str(), ref.value("device", std::string("?")).c_str(), logits_err,
      loss, ref_loss, loss_err);
  INFO("logits relative L2 error " << logits_err << ", loss " << loss << " vs reference " << ref_loss);
  CHECK(logits_err < 1e-4);
  CHECK(loss_err < 1e-4);
}

TEST_CASE("the parity tolerance is meaningful: small weight changes move the logits far beyond it", "[hf-parity]") {
  // Negative controls without the reference: a 1% change of one tensor (a norm, a gate, a GDN decay parameter,
  // the conv, a projection of the attention layer, the router) must change the logits by more than 5x the 1e-4
  // tolerance, so that the parity check would see a mistake of that size in any of them.
  auto in = load_inputs();
  torch::NoGradGuard no_grad;
  const auto base = in.model(in.input_ids);
  auto params = in.model->named_parameters();
  torch::manual_seed(11);
  for (const std::string name :
       {"model.layers.0.linear_attn.A_log", "model.layers.1.linear_attn.dt_bias",
        "model.layers.2.linear_attn.norm.weight", "model.layers.0.linear_attn.conv1d.weight",
        "model.layers.3.self_attn.q_norm.weight", "model.layers.3.self_attn.k_norm.weight",
        "model.layers.1.mlp.shared_expert_gate.weight", "model.layers.2.input_layernorm.weight", "model.norm.weight",
        "model.layers.3.self_attn.o_proj.weight", "model.layers.3.self_attn.v_proj.weight",
        "model.layers.3.self_attn.q_proj.weight", "model.layers.2.linear_attn.out_proj.weight",
        "model.layers.3.mlp.experts.down_proj", "model.layers.3.mlp.gate.weight"}) {
    REQUIRE(params.contains(name));
    auto p = params[name];
    const auto saved = p.clone();
    // 1% of the mean magnitude of the effective weight, with random signs (a constant shift of the router would
    // leave its softmax unchanged); the effective scale of a zero-centred norm is 1 + w.
    const bool zero_centred =
        name.find("norm.weight") != std::string::npos && name.find("linear_attn.norm") == std::string::npos;
    const double scale = (zero_centred ? (p + 1).abs().mean() : p.abs().mean()).item<double>();
    const auto sign = torch::randint(0, 2, p.sizes(), torch::kLong).to(p.scalar_type()) * 2 - 1;
    p.add_(sign * scale * 0.01);
    const double moved = rel_err(in.model(in.input_ids), base);
    p.copy_(saved);
    INFO(name << " shifted by 1% of its mean magnitude: logits moved by " << moved);
    CHECK(moved > 5e-4);
  }
}
