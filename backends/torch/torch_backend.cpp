// The torch backend: trains the recipe's Qwen3.5 MoE model with libtorch on one rank and reports every step.
#include <sys/resource.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <memory>

#include "model/qwen35_moe.h"
#include "run/backend.h"
#include "torch_backend_registration.h"
#include "train/adam.h"
#include "train/lr_schedule.h"
#include "train/rows.h"

// RECIPEBENCH_TORCH_CUDA is set by CMake when libtorch was built with CUDA (libc10_cuda present).
#ifdef RECIPEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#if __has_include(<nccl.h>)
#include <nccl.h>
#define RECIPEBENCH_HAVE_NCCL_H 1
#endif
#endif

namespace recipebench {

namespace {

using Clock = std::chrono::steady_clock;

void synchronize(const torch::Device& device) {
#ifdef RECIPEBENCH_TORCH_CUDA
  if (device.is_cuda()) cudaDeviceSynchronize();
#else
  (void)device;
#endif
}

void reset_peak_memory(const torch::Device& device) {
#ifdef RECIPEBENCH_TORCH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
#else
  (void)device;
#endif
}

/// Peak device memory allocated by the caching allocator since the last reset (bytes); on CPU the process's
/// peak resident set size (getrusage, bytes).
int64_t peak_memory(const torch::Device& device) {
#ifdef RECIPEBENCH_TORCH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  }
#endif
  (void)device;
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

class TorchBackend : public Backend {
 public:
  std::string name() const override { return "torch"; }

  BackendEnvironment environment(const Recipe& recipe, const RunOptions& o) override {
    BackendEnvironment env;
    env.libtorch = TORCH_VERSION;
    const int64_t world = recipe.layout.world();
    if (world != 1 || recipe.layout.ep != 1)
      throw RunError("this torch backend runs one rank (TP = PP = CP = DP = EP = 1); the recipe's layout " +
                     recipe.layout.label + " needs " + std::to_string(world) + " ranks");
    if (o.device == "cuda") {
      const auto count = torch::cuda::device_count();
      if (count < 1) throw RunError("--device cuda but no CUDA device is visible (torch::cuda::device_count() = 0)");
      env.device_count = 1;
#ifdef RECIPEBENCH_TORCH_CUDA
      const cudaDeviceProp* p = at::cuda::getCurrentDeviceProperties();
      env.device_name = p->name;
      env.device_memory_bytes = static_cast<double>(p->totalGlobalMem);
      int driver = 0, runtime = 0;
      cudaDriverGetVersion(&driver);
      cudaRuntimeGetVersion(&runtime);
      env.driver = "CUDA driver API " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
      env.cuda = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
#ifdef RECIPEBENCH_HAVE_NCCL_H
      env.nccl = std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
#endif
#endif
    } else {
      env.device_count = 1;
      env.device_name = "CPU (" + std::to_string(torch::get_num_threads()) + " threads)";
    }
    return env;
  }

  void run(const Recipe& recipe, const ModelConfig& cfg, const RunOptions& o,
           const std::function<void(const StepSample&)>& on_step) override {
    const torch::Device device(o.device == "cuda" ? torch::kCUDA : torch::kCPU);
    // BF16 compute on GPU; FP32 on CPU (DESIGN.md section 8 machines have no fast bf16 CPU path).
    const auto dtype = (device.is_cuda() && recipe.workload.precision == "bf16") ? torch::kBFloat16 : torch::kFloat32;
    torch::manual_seed(o.seed);

    const int64_t row_tokens = recipe.workload.row_tokens;
    const int64_t rows_per_mb = std::max<int64_t>(1, recipe.layout.max_tokens_per_gpu / row_tokens);
    const int64_t microbatches = recipe.workload.global_batch / rows_per_mb;

    std::unique_ptr<train::RowSource> source;
    try {
      if (o.data_source == "file")
        source = std::make_unique<train::FileRows>(o.data_path, row_tokens, cfg.vocab_size);
      else
        source = std::make_unique<train::SyntheticRows>(cfg.vocab_size, row_tokens, o.supervised_token_ratio, o.seed);
    } catch (const std::exception& e) {
      throw RunError(std::string("data: ") + e.what());
    }

    torch_model::Qwen35MoeForCausalLM model(cfg);
    model->to(device, dtype);
    model->train();
    train::MixedPrecisionAdam adam(model->parameters(), recipe.optimizer);

    auto tail_start = Clock::now();  // end of the previous step's timing
    double pending_overhead = 0;
    for (int step = 0; step < o.steps; ++step) {
      const auto data_start = Clock::now();
      if (step > 0) pending_overhead = std::chrono::duration<double>(data_start - tail_start).count();
      // Rows of the step, copied to the device before the clock starts (data loading is not timed).
      std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
      int64_t supervised = 0;
      for (int64_t mb = 0; mb < microbatches; ++mb) {
        train::Rows rows = source->next(rows_per_mb);
        auto ids = torch::from_blob(rows.tokens.data(), {rows.rows, row_tokens}, torch::kInt64).clone().to(device);
        auto mask = torch::from_blob(rows.mask.data(), {rows.rows, row_tokens}, torch::kUInt8).clone().to(device);
        for (int64_t i = 0; i < rows.rows; ++i)
          for (int64_t t = 1; t < row_tokens; ++t) supervised += rows.mask[i * row_tokens + t];
        batches.emplace_back(ids, mask);
      }
      synchronize(device);
      reset_peak_memory(device);
      const auto t0 = Clock::now();
      const double data_seconds = std::chrono::duration<double>(t0 - data_start).count();
      double fwd = 0, bwd = 0;
      auto lap = [&](double& acc, Clock::time_point& since) {
        if (!o.profile) return;
        synchronize(device);
        const auto now = Clock::now();
        acc += std::chrono::duration<double>(now - since).count();
        since = now;
      };
      auto since = t0;

      adam.zero_grad();
      torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
      const double denom = static_cast<double>(std::max<int64_t>(1, supervised));
      for (auto& [ids, mask] : batches) {
        const auto s = model->sft_loss_sum(ids, mask);
        lap(fwd, since);
        // Per-token normalisation over the whole step: each microbatch's sum is divided by the step's count.
        (s.sum / denom).backward();
        adam.accumulate_grads();
        lap(bwd, since);
        loss_sum += s.sum.detach().to(torch::kFloat64);
      }
      const double norm = adam.grad_norm();
      const double loss = loss_sum.item<double>() / denom;
      if (!std::isfinite(loss) || !std::isfinite(norm))
        throw RunError("step " + std::to_string(step) + ": the loss is " + std::to_string(loss) +
                           " and the gradient norm " + std::to_string(norm) + "; the run stops here",
                       step);
      adam.clip(norm);
      const double lr = train::learning_rate(recipe.optimizer, step, o.steps);
      adam.step(lr);
      synchronize(device);
      const auto t1 = Clock::now();
      const double seconds = std::chrono::duration<double>(t1 - t0).count();

      StepSample sample;
      sample.step = step;
      sample.seconds = seconds;
      sample.tokens = recipe.workload.global_batch * row_tokens;
      sample.supervised_tokens = supervised;
      sample.loss = loss;
      sample.grad_norm = norm;
      sample.learning_rate = lr;
      sample.peak_memory_bytes = peak_memory(device);
      sample.data_seconds = data_seconds;
      sample.overhead_seconds = pending_overhead;
      if (o.profile) {
        sample.forward_seconds = fwd;
        sample.backward_seconds = bwd;
        sample.optimizer_seconds = std::chrono::duration<double>(t1 - since).count();
      }
      tail_start = t1;
      on_step(sample);
    }
  }
};

}  // namespace

void register_torch_backend() {
  register_backend("torch", [] { return std::make_unique<TorchBackend>(); });
}

}  // namespace recipebench
