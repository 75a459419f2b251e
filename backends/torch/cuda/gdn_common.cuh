// Device helpers shared by the gated delta rule kernels (gdn_forward.cu, gdn_backward.cu): block-wide
// tensor-core products over shared memory (nvcuda::wmma, bf16 in, fp32 out), tile loads, row reductions.
// Internal to backends/torch/cuda; see docs/gdn-kernels.md.
#pragma once

#include <cuda_bf16.h>
#include <mma.h>

#include "gdn_kernels.h"

namespace recipebench::gdn::detail {

using bf16 = __nv_bfloat16;
constexpr int kThreads = 256;  ///< threads per block of every kernel
constexpr int kWarps = kThreads / 32;

// Padded leading dimensions (elements) of shared tiles: rows stay 32-byte aligned, banks are staggered.
constexpr int kLd128 = 136;   // bf16 tile with 128 columns
constexpr int kLd64 = 72;     // bf16 tile with 64 columns
constexpr int kLd32 = 40;     // bf16 tile with 32 columns
constexpr int kLdF128 = 132;  // fp32 tile with 128 columns
constexpr int kLdF64 = 68;    // fp32 tile with 64 columns
constexpr int kLdF32 = 36;    // fp32 tile with 32 columns

/// How an operand of mma_block is stored: N = row-major as the operand itself, T = row-major as its transpose.
enum class Lay { N, T };

/// How the 16 x 16 output tiles of a TM x TN tile product are shared among the kWarps warps: each warp owns a WM x WN
/// block of tiles, so that a fragment of A is loaded once for WN products and one of B once for WM (fewer shared
/// memory loads than one tile per warp). WM = 0: the product has too few tiles, or an uneven count, for whole blocks;
/// each warp then takes single tiles in turn.
template <int TM, int TN>
struct WarpTiles {
  static constexpr int kPer = (TM * TN) % kWarps == 0 ? TM * TN / kWarps : 0;  ///< tiles per warp
  static constexpr int pick() {
    for (int d = kPer; d >= 1; --d)
      if (kPer % d == 0 && d * d <= kPer && TM % d == 0 && TN % (kPer / d) == 0) return d;
    return 0;
  }
  static constexpr int WM = pick();
  static constexpr int WN = WM ? kPer / WM : 0;
};

/// The wmma fragment types of mma_block: A and B as bf16 in the given layouts, C in fp32.
template <Lay LA, Lay LB>
struct MmaFrags {
  using LayA = typename std::conditional<LA == Lay::N, nvcuda::wmma::row_major, nvcuda::wmma::col_major>::type;
  using LayB = typename std::conditional<LB == Lay::N, nvcuda::wmma::row_major, nvcuda::wmma::col_major>::type;
  using A = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, bf16, LayA>;
  using B = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, bf16, LayB>;
  using C = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;
};

/// Loads the 16 x 16 tile (mi, kk) of op(A) (LA::N: A row-major, else A^T stored row-major).
template <Lay LA, class Frag>
__device__ __forceinline__ void load_tile_a(Frag& a, const bf16* A, int lda, int mi, int kk) {
  if constexpr (LA == Lay::N)
    nvcuda::wmma::load_matrix_sync(a, A + mi * 16 * lda + kk, lda);
  else
    nvcuda::wmma::load_matrix_sync(a, A + kk * lda + mi * 16, lda);
}

/// Loads the 16 x 16 tile (kk, ni) of op(B).
template <Lay LB, class Frag>
__device__ __forceinline__ void load_tile_b(Frag& b, const bf16* B, int ldb, int ni, int kk) {
  if constexpr (LB == Lay::N)
    nvcuda::wmma::load_matrix_sync(b, B + kk * ldb + ni * 16, ldb);
  else
    nvcuda::wmma::load_matrix_sync(b, B + ni * 16 * ldb + kk, ldb);
}

/// mma_block's path when the warps own fixed WM x WN blocks of tiles (WarpTiles::WM > 0): each warp keeps its
/// block's accumulators in registers through K.
template <int M, int N, int K, Lay LA, Lay LB>
__device__ __forceinline__ void mma_warp_blocks(const bf16* A, int lda, const bf16* B, int ldb, float* C, int ldc,
                                                bool accumulate) {
  using namespace nvcuda;
  using F = MmaFrags<LA, LB>;
  constexpr int TM = M / 16, TN = N / 16;
  using WT = WarpTiles<TM, TN>;
  constexpr int WM = WT::WM, WN = WT::WN, BN = TN / WN;  // BN: warp blocks across N
  const int warp = threadIdx.x / 32;
  const int m0 = (warp / BN) * WM, n0 = (warp % BN) * WN;
  typename F::C c[WM][WN];
#pragma unroll
  for (int i = 0; i < WM; ++i)
#pragma unroll
    for (int j = 0; j < WN; ++j) {
      if (accumulate)
        wmma::load_matrix_sync(c[i][j], C + (m0 + i) * 16 * ldc + (n0 + j) * 16, ldc, wmma::mem_row_major);
      else
        wmma::fill_fragment(c[i][j], 0.f);
    }
#pragma unroll 2
  for (int kk = 0; kk < K; kk += 16) {
    typename F::A a[WM];
    typename F::B b[WN];
#pragma unroll
    for (int i = 0; i < WM; ++i) load_tile_a<LA>(a[i], A, lda, m0 + i, kk);
#pragma unroll
    for (int j = 0; j < WN; ++j) load_tile_b<LB>(b[j], B, ldb, n0 + j, kk);
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
      for (int j = 0; j < WN; ++j) wmma::mma_sync(c[i][j], a[i], b[j], c[i][j]);
  }
#pragma unroll
  for (int i = 0; i < WM; ++i)
#pragma unroll
    for (int j = 0; j < WN; ++j)
      wmma::store_matrix_sync(C + (m0 + i) * 16 * ldc + (n0 + j) * 16, c[i][j], ldc, wmma::mem_row_major);
}

/// mma_block's path otherwise: the warps take the output tiles in turn, one accumulator each.
template <int M, int N, int K, Lay LA, Lay LB>
__device__ __forceinline__ void mma_tile_loop(const bf16* A, int lda, const bf16* B, int ldb, float* C, int ldc,
                                              bool accumulate) {
  using namespace nvcuda;
  using F = MmaFrags<LA, LB>;
  constexpr int TM = M / 16, TN = N / 16;
  for (int t = threadIdx.x / 32; t < TM * TN; t += kWarps) {
    const int mi = t / TN, ni = t % TN;
    typename F::C c;
    float* cp = C + mi * 16 * ldc + ni * 16;
    if (accumulate)
      wmma::load_matrix_sync(c, cp, ldc, wmma::mem_row_major);
    else
      wmma::fill_fragment(c, 0.f);
#pragma unroll 4
    for (int kk = 0; kk < K; kk += 16) {
      typename F::A a;
      typename F::B b;
      load_tile_a<LA>(a, A, lda, mi, kk);
      load_tile_b<LB>(b, B, ldb, ni, kk);
      wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(cp, c, ldc, wmma::mem_row_major);
  }
}

/// C[M x N] (fp32, row-major, ldc) = op(A)[M x K] * op(B)[K x N] (+ C when accumulate), bf16 operands in shared
/// memory. All threads of the block call it; each warp owns whole 16 x 16 output tiles (WarpTiles: the same tiles on
/// every call with the same M, N). Every output tile sums its K in the same order (16 at a time, ascending) however
/// the tiles are shared, so the result does not depend on WarpTiles. The caller synchronises before reading C.
template <int M, int N, int K, Lay LA, Lay LB>
__device__ __forceinline__ void mma_block(const bf16* A, int lda, const bf16* B, int ldb, float* C, int ldc,
                                          bool accumulate = false) {
  if constexpr (WarpTiles<M / 16, N / 16>::WM > 0)
    mma_warp_blocks<M, N, K, LA, LB>(A, lda, B, ldb, C, ldc, accumulate);
  else
    mma_tile_loop<M, N, K, LA, LB>(A, lda, B, ldb, C, ldc, accumulate);
}

/// Copies a bf16 tile of 128 rows x BV columns (shared, leading dimension LD) to global rows of stride 128 (a
/// chunk state's value columns), 16 bytes per store. Whole block.
template <int BV, int LD>
__device__ __forceinline__ void store_tile(bf16* dst, const bf16* src) {
  constexpr int kVecs = BV / 8;
  for (int i = threadIdx.x; i < kHeadDim * kVecs; i += kThreads) {
    const int r = i / kVecs, j = (i % kVecs) * 8;
    *reinterpret_cast<uint4*>(dst + r * kHeadDim + j) = *reinterpret_cast<const uint4*>(src + r * LD + j);
  }
}

/// Loads `rows` x 128 bf16 from global (row stride `stride` elements) into a shared tile (ld kLd128); rows at or
/// past `valid` are zero. Whole block.
__device__ __forceinline__ void load_rows128(bf16* dst, const bf16* src, long stride, int rows, int valid) {
  for (int i = threadIdx.x; i < rows * 16; i += kThreads) {
    const int r = i / 16, c = (i % 16) * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (r < valid) x = *reinterpret_cast<const uint4*>(src + r * stride + c);
    *reinterpret_cast<uint4*>(dst + r * kLd128 + c) = x;
  }
}

/// As load_rows128, each row multiplied by scale[r] (fp32) before rounding back to bf16.
__device__ __forceinline__ void load_rows128_scaled(bf16* dst, const bf16* src, long stride, int rows, int valid,
                                                    const float* scale) {
  for (int i = threadIdx.x; i < rows * 16; i += kThreads) {
    const int r = i / 16, c = (i % 16) * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (r < valid) x = *reinterpret_cast<const uint4*>(src + r * stride + c);
    bf16* e = reinterpret_cast<bf16*>(&x);
    const float s = r < valid ? scale[r] : 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) e[j] = __float2bfloat16(__bfloat162float(e[j]) * s);
    *reinterpret_cast<uint4*>(dst + r * kLd128 + c) = x;
  }
}

/// Loads `rows` x 32 bf16 (columns col0 .. col0+31 of a row-major global matrix, row stride `stride`) into a
/// shared tile with leading dimension kLd32; rows past `valid` are zero.
__device__ __forceinline__ void load_rows32(bf16* dst, const bf16* src, long stride, int rows, int valid) {
  for (int i = threadIdx.x; i < rows * 4; i += kThreads) {
    const int r = i / 4, c = (i % 4) * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (r < valid) x = *reinterpret_cast<const uint4*>(src + r * stride + c);
    *reinterpret_cast<uint4*>(dst + r * kLd32 + c) = x;
  }
}

/// Loads the chunk's cumulative log decay G[0..63] (global Gc at row stride `stride`); rows past `valid` repeat
/// the last valid value (padded tokens have g = 0). Threads 0..63; caller synchronises.
__device__ __forceinline__ void load_gates(float* G, const float* Gc, long stride, int valid) {
  if (threadIdx.x < kChunk) {
    const int r = threadIdx.x < valid ? threadIdx.x : valid - 1;
    G[threadIdx.x] = Gc[r * stride];
  }
}

/// Sum over the 4 consecutive lanes of a quad (every lane gets it), in a fixed order.
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  x += __shfl_xor_sync(0xffffffffu, x, 2);
  return x;
}

/// Deterministic block sum of one value per thread; every thread gets it. `red`: kWarps floats of shared memory.
__device__ __forceinline__ float block_sum(float x, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = x;
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) s += red[w];
  return s;
}

// Launchers shared by forward and backward (defined in gdn_forward.cu).
/// Per chunk and value head: cumulative gates Gc, T = (I + A)^-1 (bf16), W = T diag(beta e^G) K, U0 = T diag(beta) V.
cudaError_t launch_prep(const Shape& s, const DeviceChunkTable& ct, const bf16* k, const bf16* v, const float* g,
                        const float* beta, float* Gc, bf16* T, bf16* W, bf16* U0, cudaStream_t stream);
/// Value columns per block of the two sequential scans (state, dstate): set_scan_columns()'s value, else chosen by
/// the kernel and the grid (32, or 64 for the register scans past one block per multiprocessor). The scans'
/// arithmetic per column does not depend on it (the same bits).
int scan_columns(const Shape& s);
/// Key slices of the register scans (sum_key_slices): set_scan_key_split()'s value, else 2. The slices' partial
/// products are added in a fixed order (deterministic), but each split rounds differently (other bits).
int scan_key_split(const Shape& s);
/// The chunk-to-chunk state scan: h[c] (state at each chunk start, bf16; null = not stored), v_new = U0 - W S and
/// the final state (null = not stored).
cudaError_t launch_state(const Shape& s, const DeviceChunkTable& ct, const bf16* k, const float* Gc, const bf16* W,
                         const bf16* U0, const float* h0, bf16* h, bf16* vnew, float* ht, cudaStream_t stream);

/// Workspace carving: consecutive 256-byte-aligned pieces.
struct Carver {
  char* base;
  size_t used = 0;
  template <class T>
  T* take(size_t count) {
    T* p = reinterpret_cast<T*>(base ? base + used : nullptr);
    used += (count * sizeof(T) + 255) / 256 * 256;
    return p;
  }
};

/// The forward's intermediates. All but U0 are what the backward reads ("saved": carved from the caller's saved
/// buffer when the forward keeps them for the backward, else from the workspace); U0 is transient.
struct ForwardBuffers {
  float* Gc;   // [N, Hv]                     saved
  bf16* T;     // [N, Hv, 64]                 saved
  bf16* W;     // [N, Hv, 128]                saved
  bf16* U0;    // [N, Hv, 128]                transient (null when the backward reads saved buffers)
  bf16* vnew;  // [N, Hv, 128]                saved
  bf16* h;     // [chunks, Hv, 128, 128]      saved
};
/// Carves the saved part of `b` (Gc, T, W, vnew, h) from `cv`.
inline void carve_saved(Carver& cv, const Shape& s, int chunks, ForwardBuffers& b) {
  const size_t n = static_cast<size_t>(s.total_tokens) * s.v_heads;
  b.Gc = cv.take<float>(n);
  b.T = cv.take<bf16>(n * kChunk);
  b.W = cv.take<bf16>(n * kHeadDim);
  b.vnew = cv.take<bf16>(n * kHeadDim);
  b.h = cv.take<bf16>(static_cast<size_t>(chunks) * s.v_heads * kHeadDim * kHeadDim);
}
/// The saved part from `saved`, U0 from `scratch` (the same Carver when nothing is kept for the backward).
inline ForwardBuffers carve_forward(Carver& saved, Carver& scratch, const Shape& s, int chunks) {
  ForwardBuffers b{};
  carve_saved(saved, s, chunks, b);
  b.U0 = scratch.take<bf16>(static_cast<size_t>(s.total_tokens) * s.v_heads * kHeadDim);
  return b;
}

}  // namespace recipebench::gdn::detail
