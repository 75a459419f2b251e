// Manual checks of the torch model beyond the CPU unit tests (built with -DRECIPEBENCH_TORCH_TOOLS=ON):
//   --dump DIR   writes the float64 tiny model (random weights), a batch, its logits and SFT loss to DIR
//                (index.json + data.bin) for tools/hf_compare.py, which runs Hugging Face's
//                Qwen3_5MoeForCausalLM on the same weights;
//   --cuda       on a CUDA build: kernel paths against each other (grouped vs loop experts, SDPA vs math
//                attention, GDN on the GPU vs the fp64 recurrence) and forward+backward timings at
//                Qwen3.5-35B-A3B widths.
#include "catalog/models.h"
#include "model/compat.h"
#include "model/gated_attention.h"
#include "model/gated_delta_rule.h"
#include "model/gated_deltanet.h"
#include "model/moe.h"
#include "model/qwen35_moe.h"

#include <torch/autograd.h>
#include <torch/cuda.h>

#if TORCH_VERSION_MAJOR >= 2 && __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#define MODEL_CHECK_CUDA_STATS 1
#endif

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace recipebench::torch_model;
using recipebench::ModelConfig;

namespace {

double rel(const torch::Tensor& a, const torch::Tensor& b) {
  const auto ad = a.detach().to(torch::kCPU, torch::kDouble), bd = b.detach().to(torch::kCPU, torch::kDouble);
  return (ad - bd).norm().item<double>() / bd.norm().item<double>();
}

void randomize(torch::nn::Module& m, double std) {
  torch::NoGradGuard no_grad;
  for (auto& kv : m.named_parameters()) {
    const std::string& n = kv.key();
    auto p = kv.value();
    if (n.size() >= 5 && n.compare(n.size() - 5, 5, "A_log") == 0)
      p.uniform_(0.5, 4.0).log_();
    else if (n.find("dt_bias") != std::string::npos)
      p.normal_(1.0, 0.3);
    else if (n.find("linear_attn.norm.weight") != std::string::npos)
      p.normal_(1.0, 0.3);
    else if (n.find("norm") != std::string::npos)
      p.normal_(0.0, 0.3);
    else
      p.normal_(0.0, std);
  }
}

std::string shape_json(const torch::Tensor& t) {
  std::ostringstream os;
  os << "[";
  for (int64_t i = 0; i < t.dim(); ++i) os << (i ? ", " : "") << t.size(i);
  return os.str() + "]";
}

/// Appends t (as float64) to `data` and returns its JSON entry.
std::string put(std::ofstream& data, int64_t& offset, const std::string& name, const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  data.write(reinterpret_cast<const char*>(c.data_ptr<double>()), c.numel() * sizeof(double));
  std::ostringstream os;
  os << "{\"name\": \"" << name << "\", \"shape\": " << shape_json(c) << ", \"offset\": " << offset
     << ", \"numel\": " << c.numel() << "}";
  offset += c.numel();
  return os.str();
}

int dump(const std::string& dir) {
  torch::manual_seed(42);
  const ModelConfig cfg = *recipebench::find_model("Qwen3.5-tiny");
  Qwen35MoeForCausalLM lm(cfg);
  randomize(*lm, 0.1);
  lm->to(torch::kDouble);
  const int64_t b = 2, s = 40;  // 40 tokens: two whole GDN chunks of 16 and a part
  const auto ids = torch::randint(0, cfg.vocab_size, {b, s}, torch::kLong);
  auto mask = torch::ones({b, s}, torch::kLong);
  mask.narrow(1, 0, 7).zero_();
  const auto logits = lm(ids);
  const auto loss = lm->sft_loss(ids, mask);

  std::ofstream data(dir + "/data.bin", std::ios::binary);
  std::ofstream index(dir + "/index.json");
  int64_t offset = 0;
  index << "{\n\"config\": {\"vocab_size\": " << cfg.vocab_size << ", \"hidden_size\": " << cfg.hidden_size
        << ", \"num_hidden_layers\": " << cfg.num_layers << ", \"num_attention_heads\": " << cfg.num_attention_heads
        << ", \"num_key_value_heads\": " << cfg.num_kv_heads << ", \"head_dim\": " << cfg.head_dim
        << ", \"rope_dims\": " << cfg.rope_dims << ", \"rope_theta\": " << cfg.rope_theta
        << ", \"rms_norm_eps\": " << cfg.rms_norm_eps << ", \"linear_num_key_heads\": " << cfg.linear_num_key_heads
        << ", \"linear_num_value_heads\": " << cfg.linear_num_value_heads
        << ", \"linear_key_head_dim\": " << cfg.linear_key_head_dim
        << ", \"linear_value_head_dim\": " << cfg.linear_value_head_dim
        << ", \"linear_conv_kernel_dim\": " << cfg.linear_conv_kernel << ", \"num_experts\": " << cfg.num_experts
        << ", \"num_experts_per_tok\": " << cfg.top_k << ", \"moe_intermediate_size\": " << cfg.expert_ffn
        << ", \"shared_expert_intermediate_size\": " << cfg.shared_expert_ffn << "},\n";
  index << "\"params\": [\n";
  bool first = true;
  for (const auto& kv : lm->named_parameters()) {
    index << (first ? "" : ",\n") << put(data, offset, kv.key(), kv.value());
    first = false;
  }
  index << "],\n\"input_ids\": " << put(data, offset, "input_ids", ids) << ",\n";
  index << "\"loss_mask\": " << put(data, offset, "loss_mask", mask) << ",\n";
  index << "\"logits\": " << put(data, offset, "logits", logits) << ",\n";
  index << "\"loss\": " << put(data, offset, "loss", loss) << "\n}\n";
  std::printf("dumped tiny model (%zu tensors), loss %.12f, to %s\n", lm->named_parameters().size(),
              loss.item<double>(), dir.c_str());
  return 0;
}

/// Mean seconds of fn over `iters` runs after `warmup` runs, device synchronised.
double time_it(const std::function<void()>& fn, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) fn();
  torch::cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) fn();
  torch::cuda::synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
}

double peak_gb() {
#ifdef MODEL_CHECK_CUDA_STATS
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return stats.allocated_bytes[0].peak / 1e9;  // index 0: StatType::AGGREGATE
#else
  return -1;
#endif
}

void reset_peak() {
#ifdef MODEL_CHECK_CUDA_STATS
  c10::cuda::CUDACachingAllocator::resetPeakStats(0);
#endif
}

/// Copies the parameters of `src` into `dst` (same structure).
void copy_params(torch::nn::Module& dst, const torch::nn::Module& src) {
  torch::NoGradGuard no_grad;
  auto d = dst.named_parameters();
  for (const auto& kv : src.named_parameters()) d[kv.key()].copy_(kv.value());
}

/// Outputs of two bf16 implementations of one layer and of an fp32 reference on one random input.
struct Bf16Pair {
  torch::Tensor xb;          ///< the input [1, 8192, hidden] in bf16
  torch::Tensor ya, yb, yr;  ///< outputs of a, b (bf16) and ref (fp32, on the fp32 input)
  torch::Tensor r;           ///< random weights of a backward's loss, sum(y * r), shaped like ya
};

/// Gives `b` and `ref` the parameters of `a`, puts `ref` in fp32 and `a`, `b` in bf16 on `dev`, runs the three on
/// one random input x [1, 8192, hidden] (bf16 for a and b) and prints their relative errors.
template <class Module>
Bf16Pair run_bf16_pair(const char* layer, Module& a, const char* a_name, Module& b, const char* b_name, Module& ref,
                       int64_t hidden, const torch::Device& dev) {
  copy_params(*b, *a);
  copy_params(*ref, *a);
  ref->to(dev, torch::kFloat);
  a->to(dev, torch::kBFloat16);
  b->to(dev, torch::kBFloat16);
  const auto x = torch::randn({1, 8192, hidden}, torch::TensorOptions().device(dev));
  Bf16Pair p;
  p.xb = x.to(torch::kBFloat16);
  p.ya = a(p.xb);
  p.yb = b(p.xb);
  p.yr = ref(x);
  std::printf("%s bf16: %s vs %s %.3e, %s vs fp32 %.3e, %s vs fp32 %.3e\n", layer, b_name, a_name, rel(p.yb, p.ya),
              a_name, rel(p.ya, p.yr), b_name, rel(p.yb, p.yr));
  p.r = torch::randn_like(p.ya);
  return p;
}

/// Prints the forward + backward time of `a` and `b` on `xb` (loss: sum of the output times `r`).
template <class Module>
void time_bf16_pair(const char* layer, Module& a, const char* a_name, Module& b, const char* b_name,
                    const Bf16Pair& p) {
  for (auto* m : {&a, &b}) {
    const double t = time_it([&] { ((*m)(p.xb) * p.r).sum().backward(); }, 2, 5);
    std::printf("%s %s fwd+bwd 8192 tokens: %.2f ms\n", layer, m == &a ? a_name : b_name, t * 1e3);
  }
}

/// MoE: grouped vs loop (bf16), and both vs an fp32 loop.
void check_moe(const ModelConfig& c, const torch::Device& dev) {
  SparseMoeBlock loop(c, ExpertsImpl::Loop), grouped(c, ExpertsImpl::Grouped), ref(c, ExpertsImpl::Loop);
  const Bf16Pair p = run_bf16_pair("moe", loop, "loop", grouped, "grouped", ref, c.hidden_size, dev);
  (p.ya * p.r).sum().backward();
  (p.yb * p.r).sum().backward();
  std::printf("moe bf16 grads: gate_up grouped vs loop %.3e, router %.3e\n",
              rel(grouped->experts->gate_up_proj.grad(), loop->experts->gate_up_proj.grad()),
              rel(grouped->gate->weight.grad(), loop->gate->weight.grad()));
  time_bf16_pair("moe", loop, "loop", grouped, "grouped", p);
}

/// Attention: SDPA vs math (bf16), vs fp32 math.
void check_attention(const ModelConfig& c, const torch::Device& dev) {
  GatedAttention math(c, AttentionImpl::Math), sdpa(c, AttentionImpl::Sdpa), ref(c, AttentionImpl::Math);
  const Bf16Pair p = run_bf16_pair("attention", math, "math", sdpa, "sdpa", ref, c.hidden_size, dev);
  time_bf16_pair("attention", math, "math", sdpa, "sdpa", p);
}

/// Gated delta rule on the GPU (fp32 and bf16 inputs) vs the fp64 recurrence on the CPU.
void check_gated_delta_rule(const ModelConfig& c, const torch::Device& dev) {
  const int64_t t = 300;
  auto opt = torch::TensorOptions().dtype(torch::kDouble);
  const auto q = l2_normalize(torch::randn({1, t, 4, 128}, opt)), k = l2_normalize(torch::randn({1, t, 4, 128}, opt));
  const auto v = torch::randn({1, t, 8, 128}, opt);
  const auto g = -torch::rand({8}, opt).mul(3) * torch::softplus(torch::randn({1, t, 8}, opt));
  const auto beta = torch::sigmoid(torch::randn({1, t, 8}, opt));
  const auto ref = recurrent_gated_delta_rule(q, k, v, g, beta).output;
  auto on = [&](const torch::Tensor& x, torch::ScalarType st) { return x.to(dev, st); };
  for (auto st : {torch::kFloat, torch::kBFloat16}) {
    const auto out = chunk_gated_delta_rule(on(q, st), on(k, st), on(v, st), on(g, torch::kFloat), on(beta, st), 64);
    std::printf("gated delta rule on CUDA (%s inputs) vs fp64 recurrence: %.3e\n",
                st == torch::kFloat ? "fp32" : "bf16", rel(out.output, ref));
  }
  GatedDeltaNet gdn(c);
  gdn->to(dev, torch::kBFloat16);
  const auto x = torch::randn({1, 8192, c.hidden_size}, torch::TensorOptions().device(dev).dtype(torch::kBFloat16));
  const auto r = torch::randn_like(x);
  const double tt = time_it([&] { (gdn(x) * r).sum().backward(); }, 2, 5);
  std::printf("gated deltanet (chunked, pure torch) fwd+bwd 8192 tokens: %.2f ms\n", tt * 1e3);
}

/// Whole model: Qwen3.5-35B-A3B widths, 4 layers (3 GDN + 1 attention), one 8192-token row, bf16.
void check_whole_model(const ModelConfig& c, const torch::Device& dev) {
  const ModelConfig m4 = c.with_layers(4);
  Qwen35MoeForCausalLM lm(m4);
  lm->to(dev, torch::kBFloat16);
  const auto ids = torch::randint(0, m4.vocab_size, {1, 8192}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  const auto mask = torch::ones({1, 8192}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  reset_peak();
  double loss = 0;
  const double t = time_it(
      [&] {
        lm->zero_grad();
        auto l = lm->sft_loss(ids, mask);
        l.backward();
        loss = l.item<double>();
      },
      2, 5);
  const auto pc = recipebench::count_params(m4);
  std::printf(
      "35B-A3B widths x 4 layers, 8192 tokens, bf16 fwd+bwd (no optimizer): %.1f ms/step, %.0f tokens/s, "
      "6*N_active*tok/s = %.1f TFLOP/s, loss %.4f, peak %.1f GB\n",
      t * 1e3, 8192 / t, 6.0 * pc.active * 8192 / t / 1e12, loss, peak_gb());
}

int cuda_checks() {
  if (!torch::cuda::is_available()) {
    std::printf("no CUDA device: skipped\n");
    return 0;
  }
  std::printf("libtorch %s, SDPA %d, grouped_mm %d\n", TORCH_VERSION, int(compat::kHasSdpa),
              int(compat::kHasGroupedMm));
  const torch::Device dev(torch::kCUDA);
  ModelConfig c = *recipebench::find_model("Qwen3.5-35B-A3B");
  torch::manual_seed(1);

  check_moe(c, dev);
  check_attention(c, dev);
  check_gated_delta_rule(c, dev);
  check_whole_model(c, dev);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dump" && i + 1 < argc)
      rc |= dump(argv[++i]);
    else if (a == "--cuda")
      rc |= cuda_checks();
    else {
      std::fprintf(stderr, "usage: %s [--dump DIR] [--cuda]\n", argv[0]);
      return 2;
    }
  }
  return rc;
}
