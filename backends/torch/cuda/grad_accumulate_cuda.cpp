#include "cuda/grad_accumulate_cuda.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "cuda/glue_util.h"
#include "cuda/grad_accumulate_kernels.h"

namespace recipebench::torch_model {

namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void launch(grad_accumulate::Batch& batch) {
  if (batch.count == 0) return;
  check_launch(grad_accumulate::accumulate(batch, c10::cuda::getCurrentCUDAStream()), "CUDA gradient accumulation");
  batch = grad_accumulate::Batch{};
}

}  // namespace

bool cuda_accumulate_supports(const at::Tensor& acc, const at::Tensor& grad) {
  return acc.defined() && grad.defined() && acc.is_cuda() && acc.scalar_type() == at::kFloat && acc.is_contiguous() &&
         grad.device() == acc.device() && grad.is_contiguous() && grad.numel() == acc.numel() &&
         (grad.scalar_type() == at::kBFloat16 || grad.scalar_type() == at::kFloat);
}

void cuda_accumulate_grads(const std::vector<at::Tensor>& acc, const std::vector<at::Tensor>& grads,
                           const std::vector<bool>& overwrite) {
  TORCH_CHECK(acc.size() == grads.size() && acc.size() == overwrite.size(), "CUDA gradient accumulation: ", acc.size(),
              " accumulators, ", grads.size(), " gradients, ", overwrite.size(), " overwrite flags");
  if (acc.empty()) return;
  const c10::cuda::CUDAGuard guard(acc[0].device());
  grad_accumulate::Batch batch;
  int64_t blocks = 0;
  for (size_t i = 0; i < acc.size(); ++i) {
    TORCH_CHECK(cuda_accumulate_supports(acc[i], grads[i]), "CUDA gradient accumulation: tensor ", i,
                ": an FP32 contiguous CUDA accumulator and a contiguous BF16 or FP32 gradient of as many elements "
                "on its device expected");
    TORCH_CHECK(acc[i].device() == acc[0].device(), "CUDA gradient accumulation: tensors on two devices");
    const int32_t need = grad_accumulate::blocks_of(acc[i].numel());
    if (batch.count == grad_accumulate::kMaxTensors || blocks + need > INT32_MAX) {
      launch(batch);
      blocks = 0;
    }
    if (need == 0) continue;
    const int k = batch.count++;
    batch.acc[k] = acc[i].data_ptr<float>();
    batch.grad[k] = grads[i].data_ptr();
    batch.n[k] = acc[i].numel();
    batch.bf16[k] = grads[i].scalar_type() == at::kBFloat16;
    batch.overwrite[k] = overwrite[i];
    batch.vectorized[k] = aligned16(batch.acc[k]) && aligned16(batch.grad[k]);
    batch.first_block[k] = static_cast<int32_t>(blocks);
    blocks += need;
    batch.first_block[k + 1] = static_cast<int32_t>(blocks);
  }
  launch(batch);
}

}  // namespace recipebench::torch_model
