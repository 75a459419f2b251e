// Parts of the register-resident scans (the forward `state_reg` and backward `dstate_reg` kernels): chunk loaders
// (one chunk's tiles copied to shared memory with cp.async while the previous chunk computes, two stages; rows at or
// past the chunk's length are zero, gates past it repeat the last valid one as load_gates does), a warp's slice of
// the state as mma fragments and its products, and the key split (sum_key_slices). Internal to backends/torch/cuda;
// see docs/gdn-kernels.md.
#pragma once

#include <type_traits>

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

/// A warp's slice of a state: 16 value columns (g, g + 8) x 8 * NT keys from `key0` (keys key0 + 8 nt + 2t, + 1),
/// fp32 C fragments; NT = 16 holds all 128 keys, NT = 8 or 4 a half or a quarter (the key split, see
/// sum_key_slices). Stored to a [128 keys][128 values] matrix at value column `col0` (bf16 or fp32).
template <int NT, class T>
__device__ __forceinline__ void store_state(T* dst, const float (&S)[NT][4], int col0, int key0) {
  const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int key = key0 + 8 * nt + 2 * t + (i & 1), j = g + 8 * (i >> 1);
      if constexpr (sizeof(T) == 2)
        dst[key * kHeadDim + col0 + j] = __float2bfloat16(S[nt][i]);
      else
        dst[key * kHeadDim + col0 + j] = S[nt][i];
    }
}

/// The inverse of store_state for an fp32 matrix (null: zeros).
template <int NT>
__device__ __forceinline__ void load_state(float (&S)[NT][4], const float* src, int col0, int key0) {
  const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int key = key0 + 8 * nt + 2 * t + (i & 1), j = g + 8 * (i >> 1);
      S[nt][i] = src ? src[key * kHeadDim + col0 + j] : 0.f;
    }
}

/// The A fragment of the slice's k-step ks (its keys 16 ks .. 16 ks + 15) from C fragments, rounded to bf16.
template <int NT>
__device__ __forceinline__ void state_as_a(uint32_t (&a)[4], const float (&S)[NT][4], int ks) {
  a[0] = pack_bf16(S[2 * ks][0], S[2 * ks][1]);
  a[1] = pack_bf16(S[2 * ks][2], S[2 * ks][3]);
  a[2] = pack_bf16(S[2 * ks + 1][0], S[2 * ks + 1][1]);
  a[3] = pack_bf16(S[2 * ks + 1][2], S[2 * ks + 1][3]);
}

/// acc[8 tokens x 8 n-tiles] += S^T X^T over the slice's keys, for a [64 tokens][128 keys] bf16 tile X (ld
/// kLd128): the state's value columns against every token's key row (W S or K dS' transposed), this slice's part.
template <int NT>
__device__ __forceinline__ void state_times_rows(float (&acc)[8][4], const float (&S)[NT][4], const bf16* X,
                                                 int key0) {
  const int lane = threadIdx.x % 32, mi = lane / 8;
#pragma unroll
  for (int ks = 0; ks < NT / 2; ++ks) {
    uint32_t a[4];
    state_as_a(a, S, ks);
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, X + (16 * np + 8 * (mi / 2) + lane % 8) * kLd128 + key0 + 16 * ks + 8 * (mi % 2));
      mma_bf16(acc[2 * np], a, b[0], b[1]);
      mma_bf16(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

/// S += A (16 values x 64 tokens, as 4 k-steps of A fragments) X over the slice's keys, for a [64 tokens][128 keys]
/// bf16 tile X (ld kLd128).
template <int NT>
__device__ __forceinline__ void state_add_rows(float (&S)[NT][4], const uint32_t (&A)[4][4], const bf16* X,
                                               int key0) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kt = 0; kt < 4; ++kt)
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, X + (16 * kt + 8 * ((lane / 8) % 2) + lane % 8) * kLd128 + key0 + 16 * np + 8 * (lane / 16));
      mma_bf16(S[2 * np], A[kt], b[0], b[1]);
      mma_bf16(S[2 * np + 1], A[kt], b[2], b[3]);
    }
}

/// The key split of the register scans: a block of BV value columns has BV / 16 * KS warps; warp w holds columns
/// 16 (w % (BV / 16)) .. + 15 of the block and keys 128 / KS * (w / (BV / 16)) onwards. A product over keys
/// (S^T X^T) is then KS partial tiles; sum_key_slices adds them in slice order (slice 0 first, the same bits in every
/// warp of a column group) through `red` (shared, BV / 16 * KS * 8 * 32 float4), with one block barrier. KS = 1:
/// nothing to add. Whole block.
template <int BV, int KS>
__device__ __forceinline__ void sum_key_slices(float (&acc)[8][4], float4* red) {
  if constexpr (KS > 1) {
    constexpr int kColWarps = BV / 16;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, colw = warp % kColWarps;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) red[(warp * 8 + nt) * 32 + lane] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
    __syncthreads();
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      float4 sum = red[(colw * 8 + nt) * 32 + lane];
#pragma unroll
      for (int kh = 1; kh < KS; ++kh) {
        const float4 x = red[((colw + kh * kColWarps) * 8 + nt) * 32 + lane];
        sum.x += x.x;
        sum.y += x.y;
        sum.z += x.z;
        sum.w += x.w;
      }
      acc[nt][0] = sum.x;
      acc[nt][1] = sum.y;
      acc[nt][2] = sum.z;
      acc[nt][3] = sum.w;
    }
  }
}

/// float4 slots sum_key_slices needs (at least 1, so that a shared array of them has a size).
template <int BV, int KS>
constexpr int key_slice_slots() {
  return KS > 1 ? BV / 16 * KS * 8 * 32 : 1;
}

/// Calls f(std::integral_constant<int, BV>{}, std::integral_constant<int, KS>{}) for the register scans' value
/// columns per block `bv` (16, 32, 64, 128) and key split `ks` (1, 2, 4), at most 16 warps (bv * ks <= 128: the
/// shared tiles then fit); cudaErrorInvalidValue for another pair.
template <class F>
cudaError_t with_register_scan_shape(int bv, int ks, F&& f) {
  using std::integral_constant;
  switch (bv * 8 + ks) {
    case 16 * 8 + 1: return f(integral_constant<int, 16>{}, integral_constant<int, 1>{});
    case 16 * 8 + 2: return f(integral_constant<int, 16>{}, integral_constant<int, 2>{});
    case 16 * 8 + 4: return f(integral_constant<int, 16>{}, integral_constant<int, 4>{});
    case 32 * 8 + 1: return f(integral_constant<int, 32>{}, integral_constant<int, 1>{});
    case 32 * 8 + 2: return f(integral_constant<int, 32>{}, integral_constant<int, 2>{});
    case 32 * 8 + 4: return f(integral_constant<int, 32>{}, integral_constant<int, 4>{});
    case 64 * 8 + 1: return f(integral_constant<int, 64>{}, integral_constant<int, 1>{});
    case 64 * 8 + 2: return f(integral_constant<int, 64>{}, integral_constant<int, 2>{});
    case 128 * 8 + 1: return f(integral_constant<int, 128>{}, integral_constant<int, 1>{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace recipebench::gdn::detail
