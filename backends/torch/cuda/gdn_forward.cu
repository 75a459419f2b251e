// Forward of the chunked gated delta rule (docs/gdn-kernels.md): prep (per chunk: gates, (I + A)^-1, W, U0),
// state (sequential over the chunks of a row), output (per chunk). Also the chunk table.
#include <stdexcept>
#include <string>

#include "gdn_common.cuh"
#include "gdn_scan_registers.cuh"

namespace recipebench::gdn {

using detail::bf16;
using detail::kLd128;
using detail::kLd64;
using detail::kLdF128;
using detail::kLdF64;
using detail::kThreads;
using detail::Lay;
using detail::mma_block;

ChunkTable make_chunk_table(const std::vector<int64_t>& cu) {
  if (cu.size() < 2 || cu[0] != 0) throw std::invalid_argument("gdn: cu_seqlens must start with 0 and name a row");
  ChunkTable t;
  for (size_t n = 0; n + 1 < cu.size(); ++n) {
    if (cu[n + 1] < cu[n]) throw std::invalid_argument("gdn: cu_seqlens decreases at row " + std::to_string(n));
    t.row_first_chunk.push_back(t.chunks());
    for (int64_t s = cu[n]; s < cu[n + 1]; s += kChunk) {
      t.chunk_start.push_back(static_cast<int>(s));
      t.chunk_len.push_back(static_cast<int>(std::min<int64_t>(kChunk, cu[n + 1] - s)));
      t.chunk_row.push_back(static_cast<int>(n));
    }
  }
  t.row_first_chunk.push_back(t.chunks());
  return t;
}

size_t chunk_table_ints(const ChunkTable& t) { return 3 * t.chunk_start.size() + t.row_first_chunk.size(); }

std::vector<int> pack_chunk_table(const ChunkTable& t) {
  std::vector<int> out;
  out.reserve(chunk_table_ints(t));
  for (const auto* v : {&t.chunk_start, &t.chunk_len, &t.chunk_row, &t.row_first_chunk})
    out.insert(out.end(), v->begin(), v->end());
  return out;
}

DeviceChunkTable device_view(const ChunkTable& t, const int* d) {
  const int c = t.chunks();
  return DeviceChunkTable{d, d + c, d + 2 * c, d + 3 * c, c};
}

size_t saved_bytes(const Shape& s, int chunks) {
  detail::Carver cv{nullptr};
  detail::ForwardBuffers b{};
  detail::carve_saved(cv, s, chunks, b);
  return cv.used;
}

size_t forward_workspace_bytes(const Shape& s, int chunks, bool keep) {
  detail::Carver ws{nullptr}, sv{nullptr};
  detail::carve_forward(keep ? sv : ws, ws, s, chunks);
  return ws.used;
}

namespace detail {
namespace {

/// Tf = (I + A)^-1 for A strictly lower triangular 64 x 64 (fp32, ld kLdF64): the four 16 x 16 diagonal blocks by
/// forward substitution, then the blocks below by block forward substitution, one block diagonal at a time.
/// `tmp`: 3 * 256 floats. Whole block; ends synchronised.
__device__ void invert_unit_lower(const float* A, float* Tf, float* tmp) {
  const int tid = threadIdx.x;
  for (int i = tid; i < kChunk * kChunk; i += kThreads) {  // zero the blocks above the diagonal ones
    const int r = i / kChunk, c = i % kChunk;
    if (r / 16 < c / 16) Tf[r * kLdF64 + c] = 0.f;
  }
  if (tid < kChunk) {
    const int b = tid / 16, c = tid % 16, o = b * 16;
    float col[16];
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      float acc = 0.f;
#pragma unroll
      for (int x = 0; x < r; ++x) acc += A[(o + r) * kLdF64 + o + x] * col[x];
      col[r] = r == c ? 1.f : -acc;
    }
#pragma unroll
    for (int r = 0; r < 16; ++r) Tf[(o + r) * kLdF64 + o + c] = col[r];
  }
  __syncthreads();
  for (int d = 1; d < 4; ++d) {
    const int nb = 4 - d;
    for (int e = tid; e < nb * 256; e += kThreads) {  // tmp_b = sum_{m=j}^{i-1} A_im T_mj
      const int blk = e / 256, r = (e % 256) / 16, c = e % 16, i = blk + d, j = blk;
      float acc = 0.f;
      for (int kk = j * 16; kk < i * 16; ++kk) acc += A[(i * 16 + r) * kLdF64 + kk] * Tf[kk * kLdF64 + j * 16 + c];
      tmp[e] = acc;
    }
    __syncthreads();
    for (int e = tid; e < nb * 256; e += kThreads) {  // T_ij = -T_ii tmp_b
      const int blk = e / 256, r = (e % 256) / 16, c = e % 16, i = blk + d, j = blk;
      float acc = 0.f;
#pragma unroll
      for (int x = 0; x < 16; ++x) acc += Tf[(i * 16 + r) * kLdF64 + i * 16 + x] * tmp[blk * 256 + x * 16 + c];
      Tf[(i * 16 + r) * kLdF64 + j * 16 + c] = -acc;
    }
    __syncthreads();
  }
}

/// Inclusive cumulative sum of g over the chunk into G (fp32; pads g = 0). Warp 0; caller synchronises.
__device__ void chunk_cumsum(const float* g, long stride, int valid, float* G) {
  if (threadIdx.x >= 32) return;
  const int l = threadIdx.x;
  float a = 2 * l < valid ? g[(2 * l) * stride] : 0.f;
  float b = 2 * l + 1 < valid ? g[(2 * l + 1) * stride] : 0.f;
  float s = a + b;
#pragma unroll
  for (int o = 1; o < 32; o *= 2) {
    const float y = __shfl_up_sync(0xffffffffu, s, o);
    if (l >= o) s += y;
  }
  G[2 * l] = s - b;
  G[2 * l + 1] = s;
}

struct PrepSmem {
  bf16 K[kChunk * kLd128];  // K, then diag(beta e^G) K, then diag(beta) V
  bf16 Tb[kChunk * kLd64];
  float F1[kChunk * kLdF64];
  float Tf[kChunk * kLdF64];
  float F3[kChunk * kLdF128];
  float tmp[3 * 256];
  float G[kChunk], B[kChunk], sk[kChunk], sv[kChunk];
};

__global__ void __launch_bounds__(kThreads)
    prep_kernel(Shape s, DeviceChunkTable ct, const bf16* k, const bf16* v, const float* g, const float* beta,
                float* Gc, bf16* T, bf16* W, bf16* U0) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  PrepSmem& sm = *reinterpret_cast<PrepSmem*>(smem_raw);
  const int c = blockIdx.x, hv = blockIdx.y, hk = hv / (s.v_heads / s.k_heads), tid = threadIdx.x;
  const int t0 = ct.chunk_start[c], len = ct.chunk_len[c];
  const long sk = static_cast<long>(s.k_heads) * kHeadDim, sv = static_cast<long>(s.v_heads) * kHeadDim;
  chunk_cumsum(g + static_cast<long>(t0) * s.v_heads + hv, s.v_heads, len, sm.G);
  if (tid < kChunk) sm.B[tid] = tid < len ? beta[static_cast<long>(t0 + tid) * s.v_heads + hv] : 0.f;
  load_rows128(sm.K, k + static_cast<long>(t0) * sk + hk * kHeadDim, sk, kChunk, len);
  __syncthreads();
  mma_block<64, 64, 128, Lay::N, Lay::T>(sm.K, kLd128, sm.K, kLd128, sm.F1, kLdF64);  // K K^T
  if (tid < kChunk) {
    sm.sk[tid] = sm.B[tid] * __expf(sm.G[tid]);
    sm.sv[tid] = sm.B[tid];
    if (tid < len) Gc[static_cast<long>(t0 + tid) * s.v_heads + hv] = sm.G[tid];
  }
  __syncthreads();
  for (int i = tid; i < kChunk * kChunk; i += kThreads) {  // A = diag(beta) (K K^T * e^(G_r - G_s)), s < r
    const int r = i / kChunk, q = i % kChunk;
    float& a = sm.F1[r * kLdF64 + q];
    a = q < r ? sm.B[r] * __expf(sm.G[r] - sm.G[q]) * a : 0.f;
  }
  __syncthreads();
  invert_unit_lower(sm.F1, sm.Tf, sm.tmp);
  for (int i = tid; i < kChunk * kChunk; i += kThreads) {
    const int r = i / kChunk, q = i % kChunk;
    const bf16 x = __float2bfloat16(sm.Tf[r * kLdF64 + q]);
    sm.Tb[r * kLd64 + q] = x;
    if (T && r < len) T[(static_cast<long>(t0 + r) * s.v_heads + hv) * kChunk + q] = x;
  }
  load_rows128_scaled(sm.K, k + static_cast<long>(t0) * sk + hk * kHeadDim, sk, kChunk, len, sm.sk);
  __syncthreads();
  mma_block<64, 128, 64, Lay::N, Lay::N>(sm.Tb, kLd64, sm.K, kLd128, sm.F3, kLdF128);  // W
  __syncthreads();
  for (int i = tid; i < len * kHeadDim; i += kThreads) {
    const int r = i / kHeadDim, q = i % kHeadDim;
    W[(static_cast<long>(t0 + r) * s.v_heads + hv) * kHeadDim + q] = __float2bfloat16(sm.F3[r * kLdF128 + q]);
  }
  load_rows128_scaled(sm.K, v + static_cast<long>(t0) * sv + hv * kHeadDim, sv, kChunk, len, sm.sv);
  __syncthreads();
  mma_block<64, 128, 64, Lay::N, Lay::N>(sm.Tb, kLd64, sm.K, kLd128, sm.F3, kLdF128);  // U0
  __syncthreads();
  for (int i = tid; i < len * kHeadDim; i += kThreads) {
    const int r = i / kHeadDim, q = i % kHeadDim;
    U0[(static_cast<long>(t0 + r) * s.v_heads + hv) * kHeadDim + q] = __float2bfloat16(sm.F3[r * kLdF128 + q]);
  }
}

/// Shared memory of the forward state scan over BV value columns (bf16 tiles ld BV + 8, fp32 ld BV + 4).
template <int BV>
struct StateSmem {
  static constexpr int kLdB = BV + 8, kLdF = BV + 4;
  float Sf[kHeadDim * kLdF];
  float F2[kHeadDim * kLdF];
  float F[kChunk * kLdF];
  bf16 Sb[kHeadDim * kLdB];
  bf16 Ws[kChunk * kLd128];
  bf16 Ks[kChunk * kLd128];  // Khat = diag(e^(G_C - G)) K
  bf16 Ub[kChunk * kLdB];
  bf16 U0s[kChunk * kLdB];
  float G[kChunk];
};

/// One chunk's inputs of the state scan, loaded into registers one chunk ahead (hides the global latency).
struct StatePrefetch {
  uint4 w[4], k[4], u0;
  float gk[4], glast, g;
};

__device__ __forceinline__ uint4 ld16(const bf16* p) { return *reinterpret_cast<const uint4*>(p); }

template <int BV>
__device__ __forceinline__ void state_fetch(StatePrefetch& p, const Shape& s, const DeviceChunkTable& ct, int c, int hv,
                                            int hk, int vb, const bf16* k, const float* Gc, const bf16* W,
                                            const bf16* U0) {
  const int tid = threadIdx.x, t0 = ct.chunk_start[c], len = ct.chunk_len[c];
  const long sk = static_cast<long>(s.k_heads) * kHeadDim, sv = static_cast<long>(s.v_heads) * kHeadDim;
  const float* gc = Gc + static_cast<long>(t0) * s.v_heads + hv;
  p.glast = gc[static_cast<long>(len - 1) * s.v_heads];
  const int col = (tid % 16) * 8;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const int r = tid / 16 + 16 * m;
    const bool ok = r < len;
    p.w[m] = ok ? ld16(W + (static_cast<long>(t0 + r)) * sv + hv * kHeadDim + col) : make_uint4(0, 0, 0, 0);
    p.k[m] = ok ? ld16(k + (static_cast<long>(t0 + r)) * sk + hk * kHeadDim + col) : make_uint4(0, 0, 0, 0);
    p.gk[m] = ok ? gc[static_cast<long>(r) * s.v_heads] : 0.f;
  }
  constexpr int kVecs = BV / 8;  // 16-byte vectors per row of U0's BV columns
  const int ru = tid / kVecs;
  p.u0 = ru < len ? ld16(U0 + static_cast<long>(t0 + ru) * sv + hv * kHeadDim + vb + (tid % kVecs) * 8)
                  : make_uint4(0, 0, 0, 0);
  p.g = tid < kChunk ? gc[static_cast<long>(tid < len ? tid : len - 1) * s.v_heads] : 0.f;
}

template <int BV>
__device__ __forceinline__ void state_commit(const StatePrefetch& p, StateSmem<BV>& sm) {
  const int tid = threadIdx.x, col = (tid % 16) * 8;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const int r = tid / 16 + 16 * m;
    *reinterpret_cast<uint4*>(sm.Ws + r * kLd128 + col) = p.w[m];
    uint4 x = p.k[m];
    bf16* e = reinterpret_cast<bf16*>(&x);
    const float f = __expf(p.glast - p.gk[m]);
#pragma unroll
    for (int j = 0; j < 8; ++j) e[j] = __float2bfloat16(__bfloat162float(e[j]) * f);
    *reinterpret_cast<uint4*>(sm.Ks + r * kLd128 + col) = x;
  }
  constexpr int kVecs = BV / 8;
  if (tid < kChunk * kVecs)
    *reinterpret_cast<uint4*>(sm.U0s + (tid / kVecs) * StateSmem<BV>::kLdB + (tid % kVecs) * 8) = p.u0;
  if (tid < kChunk) sm.G[tid] = p.g;
}

/// The forward state scan (see launch_state). Grid (128 / BV, Hv, rows): one block per BV value columns of a value
/// head of a row, walking its chunks in order.
template <int BV>
__global__ void __launch_bounds__(kThreads)
    state_kernel(Shape s, DeviceChunkTable ct, const bf16* k, const float* Gc, const bf16* W, const bf16* U0,
                 const float* h0, bf16* h, bf16* vnew, float* ht) {
  using Smem = StateSmem<BV>;
  constexpr int kLdB = Smem::kLdB, kLdF = Smem::kLdF;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Smem& sm = *reinterpret_cast<Smem*>(smem_raw);
  const int vb = blockIdx.x * BV, hv = blockIdx.y, n = blockIdx.z, tid = threadIdx.x;
  const int hk = hv / (s.v_heads / s.k_heads);
  const long state_off = (static_cast<long>(n) * s.v_heads + hv) * kHeadDim * kHeadDim;
  for (int i = tid; i < kHeadDim * BV; i += kThreads) {
    const int r = i / BV, j = i % BV;
    const float x = h0 ? h0[state_off + r * kHeadDim + vb + j] : 0.f;
    sm.Sf[r * kLdF + j] = x;
    sm.Sb[r * kLdB + j] = __float2bfloat16(x);
  }
  const int c0 = ct.row_first_chunk[n], c1 = ct.row_first_chunk[n + 1];
  StatePrefetch pf;
  if (c0 < c1) state_fetch<BV>(pf, s, ct, c0, hv, hk, vb, k, Gc, W, U0);
  for (int c = c0; c < c1; ++c) {
    const int t0 = ct.chunk_start[c], len = ct.chunk_len[c];
    state_commit<BV>(pf, sm);
    __syncthreads();  // the state of the last iteration (or the initial one) and this chunk's inputs are in place
    if (h) store_tile<BV, kLdB>(h + (static_cast<long>(c) * s.v_heads + hv) * kHeadDim * kHeadDim + vb, sm.Sb);
    if (c + 1 < c1) state_fetch<BV>(pf, s, ct, c + 1, hv, hk, vb, k, Gc, W, U0);
    mma_block<64, BV, 128, Lay::N, Lay::N>(sm.Ws, kLd128, sm.Sb, kLdB, sm.F, kLdF);  // W S
    __syncthreads();
    for (int i = tid; i < kChunk * BV; i += kThreads) {
      const int r = i / BV, j = i % BV;
      float u = 0.f;
      if (r < len) {
        u = __bfloat162float(sm.U0s[r * kLdB + j]) - sm.F[r * kLdF + j];
        vnew[(static_cast<long>(t0 + r) * s.v_heads + hv) * kHeadDim + vb + j] = __float2bfloat16(u);
      }
      sm.Ub[r * kLdB + j] = __float2bfloat16(u);
    }
    __syncthreads();
    mma_block<128, BV, 64, Lay::T, Lay::N>(sm.Ks, kLd128, sm.Ub, kLdB, sm.F2, kLdF);  // Khat^T U
    __syncthreads();
    const float decay = __expf(sm.G[kChunk - 1]);
    for (int i = tid; i < kHeadDim * BV; i += kThreads) {
      const int r = i / BV, j = i % BV;
      const float x = decay * sm.Sf[r * kLdF + j] + sm.F2[r * kLdF + j];
      sm.Sf[r * kLdF + j] = x;
      sm.Sb[r * kLdB + j] = __float2bfloat16(x);
    }
    __syncthreads();
  }
  if (ht)
    for (int i = tid; i < kHeadDim * BV; i += kThreads) {
      const int r = i / BV, j = i % BV;
      ht[state_off + r * kHeadDim + vb + j] = sm.Sf[r * kLdF + j];
    }
}

/// Shared memory of the register-resident forward scan: two stages of one chunk's W, K, U0 (this block's BV value
/// columns) and gates, and the key split's partial products.
template <int BV, int KS>
struct StateRegSmem {
  static constexpr int kCols = BV, kLdU = BV + 8;
  bf16 W[2][kChunk * kLd128];
  bf16 K[2][kChunk * kLd128];
  bf16 U0[2][kChunk * kLdU];
  float G[2][kChunk];
  float4 red[key_slice_slots<BV, KS>()];
};

/// Starts the copies of chunk c's tiles into stage `st` (one cp.async group; `threads`: the block's).
template <class Smem>
__device__ __forceinline__ void state_reg_fetch(Smem& sm, int st, const Shape& s, const DeviceChunkTable& ct, int c,
                                                int hv, int hk, int vb, const bf16* k, const float* Gc, const bf16* W,
                                                const bf16* U0, int threads) {
  const int t0 = ct.chunk_start[c], len = ct.chunk_len[c];
  const long sk = static_cast<long>(s.k_heads) * kHeadDim, sv = static_cast<long>(s.v_heads) * kHeadDim;
  async_rows<kHeadDim>(sm.W[st], W + static_cast<long>(t0) * sv + hv * kHeadDim, sv, len, threads);
  async_rows<kHeadDim>(sm.K[st], k + static_cast<long>(t0) * sk + hk * kHeadDim, sk, len, threads);
  async_rows<Smem::kCols>(sm.U0[st], U0 + static_cast<long>(t0) * sv + hv * kHeadDim + vb, sv, len, threads);
  async_gates(sm.G[st], Gc + static_cast<long>(t0) * s.v_heads + hv, s.v_heads, len, threads);
  cp_async_commit();
}

/// The forward state scan with the state in registers (ScanKernel::kRegisters; see launch_state). Grid (128 / BV,
/// Hv, rows), BV / 16 * KS warps: each warp holds S^T for its 16 value columns and 128 / KS keys (C fragments,
/// sum_key_slices) across the row's chunks. Per chunk: h = bf16(S); v^T = U0^T - S^T W^T (tensor cores, S^T as the
/// A operand, the KS slices' parts added in slice order); v_new = bf16(v); S^T = e^(G_C) S^T +
/// (v^T diag(e^(G_C - G))) K, the product's A operand being v's accumulator (scaled, rounded to bf16). Two block
/// barriers per chunk with a key split (the shared tiles, the partial products), one without.
template <int BV, int KS>
__global__ void __launch_bounds__(BV * 2 * KS)
    state_reg_kernel(Shape s, DeviceChunkTable ct, const bf16* k, const float* Gc, const bf16* W, const bf16* U0,
                     const float* h0, bf16* h, bf16* vnew, float* ht) {
  using Smem = StateRegSmem<BV, KS>;
  constexpr int kThr = BV * 2 * KS, kColWarps = BV / 16, kNT = 16 / KS;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Smem& sm = *reinterpret_cast<Smem*>(smem_raw);
  const int vb = blockIdx.x * BV, hv = blockIdx.y, n = blockIdx.z;
  const int hk = hv / (s.v_heads / s.k_heads), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int colw = warp % kColWarps, slice = warp / kColWarps, key0 = slice * (kHeadDim / KS);
  const int g = lane / 4, t = lane % 4, col0 = vb + 16 * colw;
  const long sv = static_cast<long>(s.v_heads) * kHeadDim;
  const long state_off = (static_cast<long>(n) * s.v_heads + hv) * kHeadDim * kHeadDim;
  float S[kNT][4];
  load_state(S, h0 ? h0 + state_off : nullptr, col0, key0);
  const int c0 = ct.row_first_chunk[n], c1 = ct.row_first_chunk[n + 1];
  if (c0 < c1) state_reg_fetch(sm, 0, s, ct, c0, hv, hk, vb, k, Gc, W, U0, kThr);
  for (int c = c0; c < c1; ++c) {
    const int st = (c - c0) & 1, t0 = ct.chunk_start[c], len = ct.chunk_len[c];
    cp_async_wait_all();
    __syncthreads();  // chunk c's tiles are in stage st; every warp is done with stage st ^ 1 and with `red`
    if (c + 1 < c1) state_reg_fetch(sm, st ^ 1, s, ct, c + 1, hv, hk, vb, k, Gc, W, U0, kThr);
    if (h) store_state(h + (static_cast<long>(c) * s.v_heads + hv) * kHeadDim * kHeadDim, S, col0, key0);
    float V[8][4] = {};
    state_times_rows(V, S, sm.W[st], key0);  // S^T W^T, this slice's keys
    sum_key_slices<BV, KS>(V, sm.red);
    const float* G = sm.G[st];
    const float GC = G[kChunk - 1];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int tok = 8 * nt + 2 * t + (i & 1), j = g + 8 * (i >> 1);
        const float u = __bfloat162float(sm.U0[st][tok * Smem::kLdU + 16 * colw + j]) - V[nt][i];
        V[nt][i] = u;
        if (nt % KS == slice && tok < len)  // the slices share the stores
          vnew[static_cast<long>(t0 + tok) * sv + hv * kHeadDim + col0 + j] = __float2bfloat16(u);
      }
    uint32_t A[4][4];  // v^T diag(e^(G_C - G)), k-steps of 16 tokens
#pragma unroll
    for (int kt = 0; kt < 4; ++kt) {
      const int r0 = 16 * kt + 2 * t, r1 = r0 + 8;
      const float f0 = __expf(GC - G[r0]), f1 = __expf(GC - G[r0 + 1]);
      const float f2 = __expf(GC - G[r1]), f3 = __expf(GC - G[r1 + 1]);
      A[kt][0] = pack_bf16(f0 * V[2 * kt][0], f1 * V[2 * kt][1]);
      A[kt][1] = pack_bf16(f0 * V[2 * kt][2], f1 * V[2 * kt][3]);
      A[kt][2] = pack_bf16(f2 * V[2 * kt + 1][0], f3 * V[2 * kt + 1][1]);
      A[kt][3] = pack_bf16(f2 * V[2 * kt + 1][2], f3 * V[2 * kt + 1][3]);
    }
    const float decay = __expf(GC);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) S[nt][i] *= decay;
    state_add_rows(S, A, sm.K[st], key0);
  }
  if (ht) store_state(ht + state_off, S, col0, key0);
}

struct OutSmem {
  bf16 Q[kChunk * kLd128];
  bf16 KU[kChunk * kLd128];  // K, then U
  bf16 S[kHeadDim * kLd128];
  bf16 Mb[kChunk * kLd64];
  float F3[kChunk * kLdF128];  // Q K^T (ld kLdF64), then the output
  float G[kChunk];
};

__global__ void __launch_bounds__(kThreads) output_kernel(Shape s, DeviceChunkTable ct, const bf16* q, const bf16* k,
                                                          const float* Gc, const bf16* vnew, const bf16* h, bf16* o) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  OutSmem& sm = *reinterpret_cast<OutSmem*>(smem_raw);
  const int c = blockIdx.x, hv = blockIdx.y, hk = hv / (s.v_heads / s.k_heads), tid = threadIdx.x;
  const int t0 = ct.chunk_start[c], len = ct.chunk_len[c];
  const long sk = static_cast<long>(s.k_heads) * kHeadDim, sv = static_cast<long>(s.v_heads) * kHeadDim;
  load_gates(sm.G, Gc + static_cast<long>(t0) * s.v_heads + hv, s.v_heads, len);
  load_rows128(sm.Q, q + static_cast<long>(t0) * sk + hk * kHeadDim, sk, kChunk, len);
  load_rows128(sm.KU, k + static_cast<long>(t0) * sk + hk * kHeadDim, sk, kChunk, len);
  load_rows128(sm.S, h + (static_cast<long>(c) * s.v_heads + hv) * kHeadDim * kHeadDim, kHeadDim, kHeadDim, kHeadDim);
  __syncthreads();
  mma_block<64, 64, 128, Lay::N, Lay::T>(sm.Q, kLd128, sm.KU, kLd128, sm.F3, kLdF64);  // Q K^T
  __syncthreads();
  for (int i = tid; i < kChunk * kChunk; i += kThreads) {
    const int r = i / kChunk, j = i % kChunk;
    const float m = j <= r ? s.scale * __expf(sm.G[r] - sm.G[j]) * sm.F3[r * kLdF64 + j] : 0.f;
    sm.Mb[r * kLd64 + j] = __float2bfloat16(m);
  }
  __syncthreads();
  load_rows128(sm.KU, vnew + static_cast<long>(t0) * sv + hv * kHeadDim, sv, kChunk, len);
  mma_block<64, 128, 128, Lay::N, Lay::N>(sm.Q, kLd128, sm.S, kLd128, sm.F3, kLdF128);  // Q S
  __syncthreads();
  for (int i = tid; i < kChunk * kHeadDim; i += kThreads) {
    const int r = i / kHeadDim;
    sm.F3[r * kLdF128 + i % kHeadDim] *= s.scale * __expf(sm.G[r]);
  }
  __syncthreads();
  mma_block<64, 128, 64, Lay::N, Lay::N>(sm.Mb, kLd64, sm.KU, kLd128, sm.F3, kLdF128, true);  // + M U
  __syncthreads();
  for (int i = tid; i < len * kHeadDim; i += kThreads) {
    const int r = i / kHeadDim, j = i % kHeadDim;
    o[(static_cast<long>(t0 + r) * s.v_heads + hv) * kHeadDim + j] = __float2bfloat16(sm.F3[r * kLdF128 + j]);
  }
}

template <class Smem, class Kernel>
cudaError_t set_smem(Kernel kernel) {
  static_assert(sizeof(Smem) <= 227 * 1024, "shared memory over the 227 KiB a Hopper block may use");
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(sizeof(Smem)));
}

}  // namespace

int g_scan_columns = 0;                             // set_scan_columns(); 0: scan_columns() chooses
int g_scan_key_split = 0;                           // set_scan_key_split(); 0: the default (scan_key_split)
ScanKernel g_scan_kernel = ScanKernel::kRegisters;  // set_scan_kernel()

/// Multiprocessors of the current device (read once per process; 132 if the query fails).
int multiprocessors() {
  static const int n = [] {
    int device = 0, count = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || count <= 0)
      return 132;
    return count;
  }();
  return n;
}

int scan_columns(const Shape& s) {
  if (g_scan_columns != 0) return g_scan_columns;
  // The shared-memory scans: 32 (2026-12-01 on an H200, reports/bench/h200-2026-12-01-accumulate: 2.0 to 2.6% faster
  // than 16 at 1 x 8,192 tokens, 6% at 2 x 8,192). The register scans with 2 key slices
  // (reports/bench/h200-2026-12-01-keysplit): 32 while blocks of 32 columns fit one per multiprocessor (1 x 8,192,
  // 32 value heads: 128 blocks, 3.219 ms forward + backward against 3.498 at 64), 64 beyond (2 x 8,192: 5.931 ms
  // against 6.325). The width changes no bits.
  if (g_scan_kernel != ScanKernel::kRegisters) return 32;
  const long blocks32 = static_cast<long>(kHeadDim / 32) * s.v_heads * s.rows;
  return blocks32 > multiprocessors() && 64 * scan_key_split(s) <= 128 ? 64 : 32;
}

int scan_key_split(const Shape&) { return gdn::scan_key_split(); }

cudaError_t launch_prep(const Shape& s, const DeviceChunkTable& ct, const bf16* k, const bf16* v, const float* g,
                        const float* beta, float* Gc, bf16* T, bf16* W, bf16* U0, cudaStream_t stream) {
  if (ct.chunks == 0) return cudaSuccess;
  if (auto e = set_smem<PrepSmem>(prep_kernel)) return e;
  prep_kernel<<<dim3(ct.chunks, s.v_heads), kThreads, sizeof(PrepSmem), stream>>>(s, ct, k, v, g, beta, Gc, T, W, U0);
  return cudaGetLastError();
}

template <int BV, int KS>
cudaError_t launch_state_reg(const Shape& s, const DeviceChunkTable& ct, const bf16* k, const float* Gc, const bf16* W,
                             const bf16* U0, const float* h0, bf16* h, bf16* vnew, float* ht, cudaStream_t stream) {
  using Smem = StateRegSmem<BV, KS>;
  if (auto e = set_smem<Smem>(state_reg_kernel<BV, KS>)) return e;
  state_reg_kernel<BV, KS><<<dim3(kHeadDim / BV, s.v_heads, s.rows), BV * 2 * KS, sizeof(Smem), stream>>>(
      s, ct, k, Gc, W, U0, h0, h, vnew, ht);
  return cudaGetLastError();
}

cudaError_t launch_state(const Shape& s, const DeviceChunkTable& ct, const bf16* k, const float* Gc, const bf16* W,
                         const bf16* U0, const float* h0, bf16* h, bf16* vnew, float* ht, cudaStream_t stream) {
  if (g_scan_kernel == ScanKernel::kRegisters)
    return with_register_scan_shape(scan_columns(s), scan_key_split(s), [&](auto bv, auto ks) {
      return launch_state_reg<decltype(bv)::value, decltype(ks)::value>(s, ct, k, Gc, W, U0, h0, h, vnew, ht, stream);
    });
  if (scan_columns(s) > 32) return cudaErrorInvalidValue;  // 64 and 128: the register scans only
  if (scan_columns(s) == 16) {
    if (auto e = set_smem<StateSmem<16>>(state_kernel<16>)) return e;
    state_kernel<16><<<dim3(kHeadDim / 16, s.v_heads, s.rows), kThreads, sizeof(StateSmem<16>), stream>>>(
        s, ct, k, Gc, W, U0, h0, h, vnew, ht);
  } else {
    if (auto e = set_smem<StateSmem<32>>(state_kernel<32>)) return e;
    state_kernel<32><<<dim3(kHeadDim / 32, s.v_heads, s.rows), kThreads, sizeof(StateSmem<32>), stream>>>(
        s, ct, k, Gc, W, U0, h0, h, vnew, ht);
  }
  return cudaGetLastError();
}

}  // namespace detail

void set_scan_kernel(ScanKernel kernel) { detail::g_scan_kernel = kernel; }
ScanKernel scan_kernel() { return detail::g_scan_kernel; }

void set_scan_columns(int columns) {
  if (columns != 0 && columns != 16 && columns != 32 && columns != 64 && columns != 128)
    throw std::invalid_argument("gdn::set_scan_columns: " + std::to_string(columns) +
                                ", expected 0, 16, 32, 64 or 128");
  detail::g_scan_columns = columns;
}

void set_scan_key_split(int slices) {
  if (slices != 0 && slices != 1 && slices != 2 && slices != 4)
    throw std::invalid_argument("gdn::set_scan_key_split: " + std::to_string(slices) + ", expected 0, 1, 2 or 4");
  detail::g_scan_key_split = slices;
}

int scan_key_split() {
  // 2026-12-01 on an H200 (reports/bench/h200-2026-12-01-keysplit), 1 x 8,192 tokens, 35B widths, 32 columns:
  // forward + backward 3.219 ms with 2 slices, 3.333 with 1, 3.328 with 4 (docs/gdn-kernels.md).
  return detail::g_scan_key_split != 0 ? detail::g_scan_key_split : 2;
}

cudaError_t forward(const Shape& s, const DeviceChunkTable& ct, const bf16* q, const bf16* k, const bf16* v,
                    const float* g, const float* beta, const float* initial_state, bf16* o, float* final_state,
                    void* saved, void* workspace, cudaStream_t stream) {
  using namespace detail;
  Carver ws{static_cast<char*>(workspace)}, sv{static_cast<char*>(saved)};
  const ForwardBuffers b = carve_forward(saved ? sv : ws, ws, s, ct.chunks);
  // T is read by the backward only: written when kept for it.
  if (auto e = launch_prep(s, ct, k, v, g, beta, b.Gc, saved ? b.T : nullptr, b.W, b.U0, stream)) return e;
  if (auto e = launch_state(s, ct, k, b.Gc, b.W, b.U0, initial_state, b.h, b.vnew, final_state, stream)) return e;
  if (ct.chunks == 0) return cudaSuccess;
  if (auto e = set_smem<OutSmem>(output_kernel)) return e;
  output_kernel<<<dim3(ct.chunks, s.v_heads), kThreads, sizeof(OutSmem), stream>>>(s, ct, q, k, b.Gc, b.vnew, b.h, o);
  return cudaGetLastError();
}

}  // namespace recipebench::gdn
