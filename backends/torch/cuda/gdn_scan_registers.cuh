// Chunk loaders of the register-resident scans (the forward `state_reg` and backward `dstate_reg` kernels): one
// chunk's tiles copied to shared memory with cp.async while the previous chunk computes (two stages). Rows at or
// past the chunk's length are zero; gates past it repeat the last valid one (as load_gates). Whole block (`threads`
// threads). Internal to backends/torch/cuda; see docs/gdn-kernels.md.
#pragma once

#include "gdn_common.cuh"
#include "gdn_mma.cuh"

namespace recipebench::gdn::detail {

/// 64 rows x Cols elements of T (bf16 or fp32; global row stride `stride` elements) into a tile whose rows are
/// padded by 16 bytes (ld Cols + 16 / sizeof(T): kLd128 for 128 bf16 columns), 16 bytes per copy.
template <int Cols, class T>
__device__ __forceinline__ void async_rows(T* dst, const T* src, long stride, int valid, int threads) {
  constexpr int kPerVec = 16 / sizeof(T), kVecs = Cols / kPerVec, kLd = Cols + kPerVec;
  for (int i = threadIdx.x; i < kChunk * kVecs; i += threads) {
    const int r = i / kVecs, c = (i % kVecs) * kPerVec;
    const bool ok = r < valid;
    cp_async16(dst + r * kLd + c, src + (ok ? r : 0) * stride + c, ok ? 16 : 0);
  }
}

/// The chunk's 64 cumulative gates (global stride `stride`), past `valid` the last valid one.
__device__ __forceinline__ void async_gates(float* G, const float* gc, long stride, int valid, int threads) {
  for (int i = threadIdx.x; i < kChunk; i += threads) cp_async4(G + i, gc + (i < valid ? i : valid - 1) * stride);
}

/// A 16 x 128 fp32 state tile held as 16 C fragments (value columns g, g + 8 of the warp's 16; keys 8 nt + 2t,
/// + 1), stored to a [128 keys][128 values] matrix at value column `col0` (bf16 or fp32).
template <class T>
__device__ __forceinline__ void store_state(T* dst, const float (&S)[16][4], int col0) {
  const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int key = 8 * nt + 2 * t + (i & 1), j = g + 8 * (i >> 1);
      if constexpr (sizeof(T) == 2)
        dst[key * kHeadDim + col0 + j] = __float2bfloat16(S[nt][i]);
      else
        dst[key * kHeadDim + col0 + j] = S[nt][i];
    }
}

/// The inverse of store_state for an fp32 matrix (null: zeros).
__device__ __forceinline__ void load_state(float (&S)[16][4], const float* src, int col0) {
  const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int key = 8 * nt + 2 * t + (i & 1), j = g + 8 * (i >> 1);
      S[nt][i] = src ? src[key * kHeadDim + col0 + j] : 0.f;
    }
}

/// The A fragment of k-step ks (keys 16 ks .. 16 ks + 15) from a state held as C fragments, rounded to bf16.
__device__ __forceinline__ void state_as_a(uint32_t (&a)[4], const float (&S)[16][4], int ks) {
  a[0] = pack_bf16(S[2 * ks][0], S[2 * ks][1]);
  a[1] = pack_bf16(S[2 * ks][2], S[2 * ks][3]);
  a[2] = pack_bf16(S[2 * ks + 1][0], S[2 * ks + 1][1]);
  a[3] = pack_bf16(S[2 * ks + 1][2], S[2 * ks + 1][3]);
}

/// acc[8 tokens x 8 n-tiles] += S^T(16 x 128) X^T for a [64 tokens][128 keys] bf16 tile X (ld kLd128): the state's
/// value columns against every token's key row (W S or K dS' transposed).
__device__ __forceinline__ void state_times_rows(float (&acc)[8][4], const float (&S)[16][4], const bf16* X) {
  const int lane = threadIdx.x % 32, mi = lane / 8;
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) {
    uint32_t a[4];
    state_as_a(a, S, ks);
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, X + (16 * np + 8 * (mi / 2) + lane % 8) * kLd128 + 16 * ks + 8 * (mi % 2));
      mma_bf16(acc[2 * np], a, b[0], b[1]);
      mma_bf16(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

/// S(16 x 128) += A (16 values x 64 tokens, as 4 k-steps of A fragments) X for a [64 tokens][128 keys] bf16 tile X
/// (ld kLd128).
__device__ __forceinline__ void state_add_rows(float (&S)[16][4], const uint32_t (&A)[4][4], const bf16* X) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kt = 0; kt < 4; ++kt)
#pragma unroll
    for (int np = 0; np < 8; ++np) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, X + (16 * kt + 8 * ((lane / 8) % 2) + lane % 8) * kLd128 + 16 * np + 8 * (lane / 16));
      mma_bf16(S[2 * np], A[kt], b[0], b[1]);
      mma_bf16(S[2 * np + 1], A[kt], b[2], b[3]);
    }
}

}  // namespace recipebench::gdn::detail
