// Gradient accumulation across microbatches on the GPU (docs/optimizer.md): each FP32 accumulator += (or =) the
// microbatch's gradient (BF16 or FP32), many tensors per launch. The same arithmetic as libtorch's add_ / copy_ of
// a BF16 or FP32 tensor into an FP32 one (exact widening, one FP32 add), so the sums are bitwise equal to theirs.
// No libtorch here.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace recipebench::grad_accumulate {

/// Tensors per launch: the batch travels as the kernel's argument (about 3.6 KiB, under CUDA's 4 KiB).
constexpr int kMaxTensors = 96;

/// Elements per block.
constexpr int kBlockElements = 8192;

/// One launch's tensors: accumulator i (FP32, n[i] elements) and its gradient (BF16 when bf16[i], else FP32);
/// overwrite[i]: acc = g (the step's first microbatch), else acc += g; vectorized[i]: acc 16-byte and g 16-byte
/// aligned (8 elements at a time). first_block[i]: the first block of tensor i, first_block[count] the total.
struct Batch {
  float* acc[kMaxTensors];
  const void* grad[kMaxTensors];
  int64_t n[kMaxTensors];
  int32_t first_block[kMaxTensors + 1];
  uint8_t bf16[kMaxTensors];
  uint8_t overwrite[kMaxTensors];
  uint8_t vectorized[kMaxTensors];
  int32_t count = 0;
};

/// Blocks that a tensor of n elements takes.
inline int32_t blocks_of(int64_t n) { return static_cast<int32_t>((n + kBlockElements - 1) / kBlockElements); }

/// Runs one batch (count >= 1, first_block filled) on `stream`. Elementwise: bitwise repeatable. Returns the launch
/// error.
cudaError_t accumulate(const Batch& batch, cudaStream_t stream);

}  // namespace recipebench::grad_accumulate
