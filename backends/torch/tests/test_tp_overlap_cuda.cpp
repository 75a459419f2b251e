// bench.overlap_tp_comm's collectives in flight on a GPU (docs/distributed.md, "Overlap"): the column-parallel
// projections and the started sequence reduce-scatter over a one-rank NCCL group (the only NCCL group one GPU can
// form: its all-gather and reduce-scatter are copies on the group's stream), BF16 at 35B-A3B widths. The collective
// runs on NCCL's stream while the weight-gradient products (or the work between start and wait) run on the compute
// stream: every result must equal the run that waits at once, bit for bit, on every repetition (a missing stream
// order would read a buffer before the collective filled it), and nothing in between may make the host wait for the
// GPU (libtorch's synchronisation-debug mode at error, as bench.fail_on_sync). Without a GPU the binary exits 77
// (skipped).
// Built everywhere (test_torch_cuda is, so that a CPU run lists it as skipped); its cases only where libtorch has CUDA
// (the c10 CUDA headers need the CUDA toolkit's).
#ifdef RECIPEBENCH_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/autograd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <vector>

#include "dist/parallel_groups.h"
#include "dist/process_group.h"
#include "launch/launch.h"
#include "model/tensor_parallel.h"

using namespace recipebench;

namespace {

/// Sets libtorch's CUDA synchronisation-debug mode to error while it lives (the previous mode restored).
class NoHostSync {
 public:
  NoHostSync() : previous_(c10::cuda::warning_state().get_sync_debug_mode()) {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
  }
  ~NoHostSync() { c10::cuda::warning_state().set_sync_debug_mode(previous_); }
  NoHostSync(const NoHostSync&) = delete;
  NoHostSync& operator=(const NoHostSync&) = delete;

 private:
  c10::cuda::SyncDebugMode previous_;
};

/// The outputs and gradients of one forward and backward pass through column_parallel_projections.
struct Pass {
  std::vector<torch::Tensor> outputs, weight_grads;
  torch::Tensor x_grad;
};

Pass column_parallel_pass(torch_model::TensorParallel& tp, const torch::Tensor& x,
                          const std::vector<torch::Tensor>& weights, const std::vector<torch::Tensor>& out_grads) {
  auto xr = x.clone().requires_grad_(true);
  std::vector<torch::Tensor> w;
  for (const auto& t : weights) w.push_back(t.clone().requires_grad_(true));
  std::vector<torch::Tensor> y;
  {
    const NoHostSync no_sync;
    y = torch_model::column_parallel_projections(xr, w, tp);
    torch::autograd::backward(y, out_grads);
  }
  Pass p;
  for (size_t i = 0; i < y.size(); ++i) {
    p.outputs.push_back(y[i].detach());
    p.weight_grads.push_back(w[i].grad());
  }
  p.x_grad = xr.grad();
  return p;
}

/// A one-rank NCCL group on GPU 0 with its communicator made and cuBLAS initialised, so that the checked regions
/// see only the collectives and products under test (creating either may synchronise).
std::unique_ptr<dist::ProcessGroup> warm_nccl_group() {
  auto pg = std::make_unique<dist::ProcessGroup>(0, 1, "127.0.0.1", free_loopback_port(), std::chrono::seconds(60),
                                                 dist::Transport::kNccl, 0);
  const auto opts = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  auto t = torch::ones({1024}, opts);
  auto shard = torch::empty({1024}, opts);
  pg->all_reduce_sum(t);
  pg->reduce_scatter_sum(t, shard);
  pg->all_gather(shard, t);
  pg->ireduce_scatter_sum(t, shard)->wait();
  static_cast<void>(torch::mm(t.view({32, 32}), t.view({32, 32})));
  torch::cuda::synchronize();
  return pg;
}

double rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  const auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  return ((ad - bd).norm() / bd.norm()).item<double>();
}

}  // namespace

TEST_CASE(
    "GPU: column-parallel projections over a one-rank NCCL group, the reduce-scatter in flight during the weight "
    "gradients: the same bits as waiting at once, no host synchronisation",
    "[cuda][tp][overlap_tp]") {
  if (!dist::transport_available(dist::Transport::kNccl)) {
    WARN("this build has no NCCL group: nothing to check");
    return;
  }
  const auto pg = warm_nccl_group();
  dist::GroupTensorParallel waiting(*pg, false), overlapped(*pg, true);
  torch::manual_seed(3);
  // One 8,192-token row at 35B-A3B widths: the Gated DeltaNet input projections' shapes (qkv 8,192 rows, b and a 32,
  // z 4,096), BF16.
  const auto opts = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  const int64_t S = 8192, H = 2048;
  const auto x = torch::randn({1, S, H}, opts);
  std::vector<torch::Tensor> weights, out_grads;
  for (const int64_t out : {8192, 32, 32, 4096}) {
    weights.push_back(torch::randn({out, H}, opts) * 0.02);
    out_grads.push_back(torch::randn({1, S, out}, opts));
  }
  const Pass ref = column_parallel_pass(waiting, x, weights, out_grads);
  // Against libtorch's own products (float64 on the same BF16 values): the gathered input's projections and the
  // gradients, to BF16 rounding.
  const auto x64 = x.to(torch::kDouble).reshape({S, H});
  torch::Tensor dx64 = torch::zeros({S, H}, x64.options());
  for (size_t i = 0; i < weights.size(); ++i) {
    const auto w64 = weights[i].to(torch::kDouble), g64 = out_grads[i].to(torch::kDouble).reshape({S, -1});
    CHECK(rel_diff(ref.outputs[i].reshape({S, -1}), x64.mm(w64.t())) < 1e-2);
    CHECK(rel_diff(ref.weight_grads[i], g64.t().mm(x64)) < 1e-2);
    dx64 += g64.mm(w64);
  }
  CHECK(rel_diff(ref.x_grad.reshape({S, H}), dx64) < 1e-2);
  for (int repeat = 0; repeat < 5; ++repeat) {
    INFO("repetition " << repeat);
    const Pass p = column_parallel_pass(overlapped, x, weights, out_grads);
    CHECK(torch::equal(p.x_grad, ref.x_grad));
    for (size_t i = 0; i < weights.size(); ++i) {
      CHECK(torch::equal(p.outputs[i], ref.outputs[i]));
      CHECK(torch::equal(p.weight_grads[i], ref.weight_grads[i]));
    }
  }
  pg->finish();
}

TEST_CASE(
    "GPU: a sequence reduce-scatter started over a one-rank NCCL group and waited for after a large product gives "
    "reduce_scatter_sequence's shard and gradient bit for bit, no host synchronisation",
    "[cuda][tp][overlap_tp]") {
  if (!dist::transport_available(dist::Transport::kNccl)) {
    WARN("this build has no NCCL group: nothing to check");
    return;
  }
  const auto pg = warm_nccl_group();
  dist::GroupTensorParallel tp(*pg, true);
  torch::manual_seed(4);
  const auto opts = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  const auto partial = torch::randn({2, 8192, 2048}, opts);
  const auto grad = torch::randn({2, 8192, 2048}, opts);
  const auto a = torch::randn({8192, 8192}, opts), b = torch::randn({8192, 8192}, opts);
  auto x_now = partial.clone().requires_grad_(true);
  const auto y_now = torch_model::reduce_scatter_sequence(x_now, tp);
  (y_now * grad).sum().backward();
  for (int repeat = 0; repeat < 5; ++repeat) {
    INFO("repetition " << repeat);
    auto x = partial.clone().requires_grad_(true);
    torch::Tensor y, meanwhile;
    {
      const NoHostSync no_sync;
      auto started = torch_model::start_reduce_scatter_sequence(x, tp);
      meanwhile = a.mm(b);  // the routed experts' stand-in, on the compute stream while the collective runs
      y = started.wait();
      (y * grad).sum().backward();
    }
    static_cast<void>(meanwhile);
    CHECK(torch::equal(y, y_now));
    CHECK(torch::equal(x.grad(), x_now.grad()));
  }
  CHECK(torch::equal(y_now, partial));  // one rank: the sum is its own partial sums
  pg->finish();
}

#endif  // RECIPEBENCH_TORCH_CUDA
