// The optimizer step of MixedPrecisionAdam (optim/adam.h) on the GPU as two multi-tensor kernels (docs/optimizer.md):
// the gradients' sum of squares (one read of each FP32 gradient) and AdamW with the clip scale folded in and the
// BF16 parameter written from the updated master weight (one read and one write of each array). The work is a fixed
// table of chunks built once, because the optimizer's arrays never move. No libtorch here.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace recipebench::adamw {

/// Elements per chunk (one thread block): a chunk never spans two tensors.
constexpr int64_t kChunkElements = 32768;

/// One parameter's arrays, all of `n` elements, contiguous, on one device.
struct TensorSlot {
  float* master = nullptr;           ///< FP32 master weight w (updated); null when held as param + remainder
  const float* grad = nullptr;       ///< FP32 accumulated gradient g (read)
  void* exp_avg = nullptr;           ///< first moment m (updated): float, or __nv_bfloat16 when exp_avg_bf16
  void* exp_avg_sq = nullptr;        ///< second moment v (updated): float, or __nv_bfloat16 when exp_avg_sq_bf16
  /// The BF16 parameter: written from w (round to nearest even); with `remainder` also w's high half (read and
  /// written). Null when the parameter is w itself.
  __nv_bfloat16* param = nullptr;
  /// The master's low 16 bits (docs/optimizer.md, "Precision-aware state"): w = bits ((param - (remainder < 0)) << 16
  /// | remainder); param = w rounded half away from zero. Null: w is `master`.
  int16_t* remainder = nullptr;
  int64_t n = 0;                     ///< elements
  int32_t decay = 0;                 ///< 1: weight decay applies (matrices), 0: not (norms, biases, scalars)
  int32_t vectorized = 0;            ///< 1: FP32 arrays 16-byte aligned, 16-bit arrays 8-byte: 4-element loads
  int32_t exp_avg_bf16 = 0;          ///< 1: exp_avg is BF16 (rounded to nearest even after the update)
  int32_t exp_avg_sq_bf16 = 0;       ///< 1: exp_avg_sq is BF16
};

/// One block's work: elements [begin, begin + count) of slot `slot`. At most 2^31 - 1 chunks (a 1-D grid): 70
/// trillion elements.
struct Chunk {
  int64_t begin = 0;
  int32_t slot = 0;
  int32_t count = 0;
};

/// The step's scalars (host-computed in double, passed as FP32 to the kernel), step count t >= 1:
/// m = b1 m + (1 - b1) g';  v = b2 v + (1 - b2) g'^2;  w *= decay_factor (decayed slots);
/// w -= step_size m / (sqrt(v / bias_correction2) + eps);  g' = grad_scale g.
/// Loshchilov & Hutter, arXiv 1711.05101 (decoupled decay); Kingma & Ba, arXiv 1412.6980 (bias corrections).
struct Hyper {
  float beta1 = 0, beta2 = 0;
  float one_minus_beta1 = 0, one_minus_beta2 = 0;
  float step_size = 0;          ///< lr / (1 - b1^t)
  float bias_correction2 = 0;   ///< 1 - b2^t
  float eps = 0;
  float decay_factor = 1;       ///< 1 - lr wd
  float grad_scale = 1;         ///< the clip scale (optim/adam.h clip_scale), <= 1
};

/// The number of chunks of a tensor of n elements.
inline int64_t chunks_of(int64_t n) { return (n + kChunkElements - 1) / kChunkElements; }

/// partial[c] = sum over chunk c of grad^2 (FP32 per thread over a fixed stride, then FP64 in a fixed tree), then
/// total[0] = sum of partial[0 .. chunks) in a fixed order: deterministic. `partial`: num_chunks doubles; `total`:
/// one double, both on the device. Returns the first launch error.
cudaError_t sum_of_squares(const TensorSlot* slots, const Chunk* chunks, int64_t num_chunks, double* partial,
                           double* total, cudaStream_t stream);

/// One AdamW step (Hyper) over every chunk: w, m, v updated in place (computed in FP32 whatever their storage),
/// param = bf16(w) (round to nearest even), or with a remainder param and remainder = w split (TensorSlot).
/// Elementwise: no reduction, bitwise repeatable. Returns the launch error.
cudaError_t adamw_step(const TensorSlot* slots, const Chunk* chunks, int64_t num_chunks, const Hyper& h,
                       cudaStream_t stream);

}  // namespace recipebench::adamw
