// Backward of the chunked gated delta rule (docs/gdn-kernels.md): recompute prep and the state scan, then
// dv_local = M^T dO (per chunk), the reverse state-gradient scan (sequential over the chunks of a row), and two
// per-chunk gradient kernels. No atomics: every output element is written by one thread in a fixed order.
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

namespace detail {
namespace {

struct BackwardBuffers {
  ForwardBuffers f;
  float* dvl;   // [N, Hv, 128] M^T dO
  bf16* dU;     // [N, Hv, 128] gradient of v_new
  bf16* dh;     // [chunks, Hv, 128, 128] gradient of the state at each chunk end
  float* dq_h;  // [N, Hv, 128] per value head
  float* dk_h;  // [N, Hv, 128] per value head (state and output terms)
  bf16* dW;     // [N, Hv, 128]
  float* dG1;   // [N, Hv] gradient of the cumulative gate (output and state terms)
};

/// The backward's buffers from the workspace `cv`; the forward's intermediates from `saved` when given (U0 null),
/// else from `cv` too (recomputed).
BackwardBuffers carve_backward(Carver& cv, Carver* saved, const Shape& s, int chunks) {
  BackwardBuffers b{};
  if (saved)
    carve_saved(*saved, s, chunks, b.f);
  else
    b.f = carve_forward(cv, cv, s, chunks);
  const size_t n = static_cast<size_t>(s.total_tokens) * s.v_heads;
  b.dvl = cv.take<float>(n * kHeadDim);
  b.dU = cv.take<bf16>(n * kHeadDim);
  b.dh = cv.take<bf16>(static_cast<size_t>(chunks) * s.v_heads * kHeadDim * kHeadDim);
  b.dq_h = cv.take<float>(n * kHeadDim);
  b.dk_h = cv.take<float>(n * kHeadDim);
  b.dW = cv.take<bf16>(n * kHeadDim);
  b.dG1 = cv.take<float>(n);
  return b;
}

/// Shared memory of the reverse scan over BV value columns (bf16 tiles ld BV + 8, fp32 ld BV + 4).
template <int BV>
struct DstateSmem {
  static constexpr int kLdB = BV + 8, kLdF = BV + 4;
  float dSf[kHeadDim * kLdF];
  float F2[kHeadDim * kLdF];
  float F[kChunk * kLdF];
  float dvls[kChunk * kLdF];  // dv_local, this block's value columns
  bf16 dSb[kHeadDim * kLdB];
  bf16 Kh[kChunk * kLd128];
  bf16 QW[2 * kChunk * kLd128];  // rows 0..63: scale e^G Q; rows 64..127: -W
  bf16 DY[2 * kChunk * kLdB];    // rows 0..63: dO; rows 64..127: dU (this block's value columns)
  float G[kChunk];
};

/// One chunk's inputs of the reverse scan, loaded into registers one chunk ahead.
struct DstatePrefetch {
  uint4 k[4], q[4], w[4], d_o;
  float4 dvl[2];  // BV = 32: two float4 per thread; BV = 16: one
  float gk[4], glast, g;
};

__device__ __forceinline__ uint4 ld16(const bf16* p) { return *reinterpret_cast<const uint4*>(p); }

template <int BV>
__device__ __forceinline__ void dstate_fetch(DstatePrefetch& p, const Shape& s, const DeviceChunkTable& ct, int c,
                                             int hv, int hk, int vb, const bf16* q, const bf16* k, const float* Gc,
                                             const bf16* W, const bf16* d_o, const float* dvl) {
  const int tid = threadIdx.x, t0 = ct.chunk_start[c], len = ct.chunk_len[c];
  const long sk = static_cast<long>(s.k_heads) * kHeadDim, sv = static_cast<long>(s.v_heads) * kHeadDim;
  const float* gc = Gc + static_cast<long>(t0) * s.v_heads + hv;
  const uint4 z = make_uint4(0, 0, 0, 0);
  p.glast = gc[static_cast<long>(len - 1) * s.v_heads];
  const int col = (tid % 16) * 8;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const int r = tid / 16 + 16 * m;
    const bool ok = r < len;
    const long tk = static_cast<long>(t0 + r) * sk + hk * kHeadDim + col;
    p.k[m] = ok ? ld16(k + tk) : z;
    p.q[m] = ok ? ld16(q + tk) : z;
    p.w[m] = ok ? ld16(W + static_cast<long>(t0 + r) * sv + hv * kHeadDim + col) : z;
    p.gk[m] = ok ? gc[static_cast<long>(r) * s.v_heads] : 0.f;
  }
  constexpr int kVecs = BV / 8, kVecsF = BV / 4;  // 16-byte vectors per row: bf16, fp32
  const int ru = tid / kVecs;
  p.d_o = ru < len ? ld16(d_o + static_cast<long>(t0 + ru) * sv + hv * kHeadDim + vb + (tid % kVecs) * 8) : z;
#pragma unroll
  for (int m = 0; m < kChunk * kVecsF / kThreads; ++m) {
    const int i = tid + kThreads * m, r = i / kVecsF, cc = (i % kVecsF) * 4;
    p.dvl[m] = r < len
                   ? *reinterpret_cast<const float4*>(dvl + static_cast<long>(t0 + r) * sv + hv * kHeadDim + vb + cc)
                   : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  p.g = tid < kChunk ? gc[static_cast<long>(tid < len ? tid : len - 1) * s.v_heads] : 0.f;
}

__device__ __forceinline__ uint4 scale8(uint4 x, float f) {
  bf16* e = reinterpret_cast<bf16*>(&x);
#pragma unroll
  for (int j = 0; j < 8; ++j) e[j] = __float2bfloat16(__bfloat162float(e[j]) * f);
  return x;
}

template <int BV>
__device__ __forceinline__ void dstate_commit(const DstatePrefetch& p, DstateSmem<BV>& sm, float scale) {
  constexpr int kLdB = DstateSmem<BV>::kLdB, kLdF = DstateSmem<BV>::kLdF, kVecs = BV / 8, kVecsF = BV / 4;
  const int tid = threadIdx.x, col = (tid % 16) * 8;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const int r = tid / 16 + 16 * m;
    *reinterpret_cast<uint4*>(sm.Kh + r * kLd128 + col) = scale8(p.k[m], __expf(p.glast - p.gk[m]));
    *reinterpret_cast<uint4*>(sm.QW + r * kLd128 + col) = scale8(p.q[m], scale * __expf(p.gk[m]));
    *reinterpret_cast<uint4*>(sm.QW + (kChunk + r) * kLd128 + col) = scale8(p.w[m], -1.f);
  }
  if (tid < kChunk * kVecs) *reinterpret_cast<uint4*>(sm.DY + (tid / kVecs) * kLdB + (tid % kVecs) * 8) = p.d_o;
#pragma unroll
  for (int m = 0; m < kChunk * kVecsF / kThreads; ++m) {
    const int i = tid + kThreads * m, r = i / kVecsF, cc = (i % kVecsF) * 4;
    *reinterpret_cast<float4*>(sm.dvls + r * kLdF + cc) = p.dvl[m];
  }
  if (tid < kChunk) sm.G[tid] = p.g;
}

/// Reverse scan over the chunks of a row: dh[c] = gradient of the state at the end of chunk c,
/// dU = dv_local + Khat dS', dS = e^(G_C) dS' + (scale e^G Q)^T dO - W^T dU. Grid (128 / BV, Hv, rows).
template <int BV>
__global__ void __launch_bounds__(kThreads)
    dstate_kernel(Shape s, DeviceChunkTable ct, const bf16* q, const bf16* k, const float* Gc, const bf16* W,
                  const bf16* d_o, const float* dvl, const float* dht, bf16* dh, bf16* dU, float* dh0) {
  using Smem = DstateSmem<BV>;
  constexpr int kLdB = Smem::kLdB, kLdF = Smem::kLdF;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Smem& sm = *reinterpret_cast<Smem*>(smem_raw);
  const int vb = blockIdx.x * BV, hv = blockIdx.y, n = blockIdx.z, tid = threadIdx.x;
  const int hk = hv / (s.v_heads / s.k_heads);
  const long state_off = (static_cast<long>(n) * s.v_heads + hv) * kHeadDim * kHeadDim;
  for (int i = tid; i < kHeadDim * BV; i += kThreads) {
    const int r = i / BV, j = i % BV;
    const float x = dht ? dht[state_off + r * kHeadDim + vb + j] : 0.f;
    sm.dSf[r * kLdF + j] = x;
    sm.dSb[r * kLdB + j] = __float2bfloat16(x);
  }
  const int c0 = ct.row_first_chunk[n], c1 = ct.row_first_chunk[n + 1];
  DstatePrefetch pf;
  if (c0 < c1) dstate_fetch<BV>(pf, s, ct, c1 - 1, hv, hk, vb, q, k, Gc, W, d_o, dvl);
  for (int c = c1 - 1; c >= c0; --c) {
    const int t0 = ct.chunk_start[c], len = ct.chunk_len[c];
    dstate_commit<BV>(pf, sm, s.scale);
    __syncthreads();  // dS' of the last iteration (or d final state) and this chunk's inputs are in place
    store_tile<BV, kLdB>(dh + (static_cast<long>(c) * s.v_heads + hv) * kHeadDim * kHeadDim + vb, sm.dSb);
    if (c - 1 >= c0) dstate_fetch<BV>(pf, s, ct, c - 1, hv, hk, vb, q, k, Gc, W, d_o, dvl);
    mma_block<64, BV, 128, Lay::N, Lay::N>(sm.Kh, kLd128, sm.dSb, kLdB, sm.F, kLdF);  // Khat dS'
    __syncthreads();
    for (int i = tid; i < kChunk * BV; i += kThreads) {
      const int r = i / BV, j = i % BV;
      float d = 0.f;
      if (r < len) {
        d = sm.dvls[r * kLdF + j] + sm.F[r * kLdF + j];
        dU[(static_cast<long>(t0 + r) * s.v_heads + hv) * kHeadDim + vb + j] = __float2bfloat16(d);
      }
      sm.DY[(kChunk + r) * kLdB + j] = __float2bfloat16(d);
    }
    __syncthreads();
    mma_block<128, BV, 128, Lay::T, Lay::N>(sm.QW, kLd128, sm.DY, kLdB, sm.F2, kLdF);
    __syncthreads();
    const float decay = __expf(sm.G[kChunk - 1]);
    for (int i = tid; i < kHeadDim * BV; i += kThreads) {
      const int r = i / BV, j = i % BV;
      const float x = decay * sm.dSf[r * kLdF + j] + sm.F2[r * kLdF + j];
      sm.dSf[r * kLdF + j] = x;
      sm.dSb[r * kLdB + j] = __float2bfloat16(x);
    }
    __syncthreads();
  }
  if (dh0)
    for (int i = tid; i < kHeadDim * BV; i += kThreads) {
      const int r = i / BV, j = i % BV;
      dh0[state_off + r * kHeadDim + vb + j] = sm.dSf[r * kLdF + j];
    }
}

/// Shared memory of the register-resident reverse scan: two stages of one chunk's K, Q, W, and this block's BV
/// value columns of dO and dv_local, and its gates; the key split's partial products.
template <int BV, int KS>
struct DstateRegSmem {
  static constexpr int kCols = BV, kLdB = BV + 8, kLdF = BV + 4;
  bf16 K[2][kChunk * kLd128];
  bf16 Q[2][kChunk * kLd128];
  bf16 W[2][kChunk * kLd128];
  bf16 dO[2][kChunk * kLdB];
  float dvl[2][kChunk * kLdF];
  float G[2][kChunk];
  float4 red[key_slice_slots<BV, KS>()];
};

/// Starts the copies of chunk c's tiles into stage `st` (one cp.async group; `threads`: the block's).
template <class Smem>
__device__ __forceinline__ void dstate_reg_fetch(Smem& sm, int st, const Shape& s, const DeviceChunkTable& ct, int c,
                                                 int hv, int hk, int vb, const bf16* q, const bf16* k, const float* Gc,
                                                 const bf16* W, const bf16* d_o, const float* dvl, int threads) {
  const int t0 = ct.chunk_start[c], len = ct.chunk_len[c];
  const long sk = static_cast<long>(s.k_heads) * kHeadDim, sv = static_cast<long>(s.v_heads) * kHeadDim;
  async_rows<kHeadDim>(sm.K[st], k + static_cast<long>(t0) * sk + hk * kHeadDim, sk, len, threads);
  async_rows<kHeadDim>(sm.Q[st], q + static_cast<long>(t0) * sk + hk * kHeadDim, sk, len, threads);
  async_rows<kHeadDim>(sm.W[st], W + static_cast<long>(t0) * sv + hv * kHeadDim, sv, len, threads);
  async_rows<Smem::kCols>(sm.dO[st], d_o + static_cast<long>(t0) * sv + hv * kHeadDim + vb, sv, len, threads);
  async_rows<Smem::kCols>(sm.dvl[st], dvl + static_cast<long>(t0) * sv + hv * kHeadDim + vb, sv, len, threads);
  async_gates(sm.G[st], Gc + static_cast<long>(t0) * s.v_heads + hv, s.v_heads, len, threads);
  cp_async_commit();
}

/// The reverse scan with the state gradient in registers (ScanKernel::kRegisters; see dstate_kernel for the
/// equations). Grid (128 / BV, Hv, rows), BV / 16 * KS warps, each holding dS^T for its 16 value columns and
/// 128 / KS keys (sum_key_slices). Per chunk, last to first: dh = bf16(dS'); dU^T = dv_local^T +
/// (dS'^T K^T) diag(e^(G_C - G)) (the slices' parts added in slice order; written as bf16);
/// dS^T = e^(G_C) dS'^T + (dO^T diag(scale e^G)) Q - bf16(dU)^T W.
template <int BV, int KS>
__global__ void __launch_bounds__(BV * 2 * KS)
    dstate_reg_kernel(Shape s, DeviceChunkTable ct, const bf16* q, const bf16* k, const float* Gc, const bf16* W,
                      const bf16* d_o, const float* dvl, const float* dht, bf16* dh, bf16* dU, float* dh0) {
  using Smem = DstateRegSmem<BV, KS>;
  constexpr int kThr = BV * 2 * KS, kColWarps = BV / 16, kNT = 16 / KS;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Smem& sm = *reinterpret_cast<Smem*>(smem_raw);
  const int vb = blockIdx.x * BV, hv = blockIdx.y, n = blockIdx.z;
  const int hk = hv / (s.v_heads / s.k_heads), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int colw = warp % kColWarps, slice = warp / kColWarps, key0 = slice * (kHeadDim / KS);
  const int g = lane / 4, t = lane % 4, col0 = vb + 16 * colw, mi = lane / 8;
  const long sv = static_cast<long>(s.v_heads) * kHeadDim;
  const long state_off = (static_cast<long>(n) * s.v_heads + hv) * kHeadDim * kHeadDim;
  float dS[kNT][4];
  load_state(dS, dht ? dht + state_off : nullptr, col0, key0);
  const int c0 = ct.row_first_chunk[n], c1 = ct.row_first_chunk[n + 1];
  if (c0 < c1) dstate_reg_fetch(sm, 0, s, ct, c1 - 1, hv, hk, vb, q, k, Gc, W, d_o, dvl, kThr);
  for (int c = c1 - 1; c >= c0; --c) {
    const int st = (c1 - 1 - c) & 1, t0 = ct.chunk_start[c], len = ct.chunk_len[c];
    cp_async_wait_all();
    __syncthreads();  // chunk c's tiles are in stage st; every warp is done with stage st ^ 1 and with `red`
    if (c - 1 >= c0) dstate_reg_fetch(sm, st ^ 1, s, ct, c - 1, hv, hk, vb, q, k, Gc, W, d_o, dvl, kThr);
    store_state(dh + (static_cast<long>(c) * s.v_heads + hv) * kHeadDim * kHeadDim, dS, col0, key0);
    float D[8][4] = {};
    state_times_rows(D, dS, sm.K[st], key0);  // dS'^T K^T, this slice's keys
    sum_key_slices<BV, KS>(D, sm.red);
    const float* G = sm.G[st];
    const float GC = G[kChunk - 1];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int tok = 8 * nt + 2 * t + (i & 1), j = g + 8 * (i >> 1);
        const float d = sm.dvl[st][tok * Smem::kLdF + 16 * colw + j] + __expf(GC - G[tok]) * D[nt][i];
        D[nt][i] = d;
        if (nt % KS == slice && tok < len)  // the slices share the stores
          dU[static_cast<long>(t0 + tok) * sv + hv * kHeadDim + col0 + j] = __float2bfloat16(d);
      }
    uint32_t AU[4][4], AO[4][4];  // -bf16(dU)^T and dO^T diag(scale e^G), k-steps of 16 tokens
#pragma unroll
    for (int kt = 0; kt < 4; ++kt) {
      AU[kt][0] = pack_bf16(-D[2 * kt][0], -D[2 * kt][1]);
      AU[kt][1] = pack_bf16(-D[2 * kt][2], -D[2 * kt][3]);
      AU[kt][2] = pack_bf16(-D[2 * kt + 1][0], -D[2 * kt + 1][1]);
      AU[kt][3] = pack_bf16(-D[2 * kt + 1][2], -D[2 * kt + 1][3]);
      uint32_t a[4];
      ldmatrix_x4_trans(a, sm.dO[st] + (16 * kt + 8 * (mi / 2) + lane % 8) * Smem::kLdB + 16 * colw + 8 * (mi % 2));
      const int r0 = 16 * kt + 2 * t, r1 = r0 + 8;
      const float f0 = s.scale * __expf(G[r0]), f1 = s.scale * __expf(G[r0 + 1]);
      const float f2 = s.scale * __expf(G[r1]), f3 = s.scale * __expf(G[r1 + 1]);
      const float2 x0 = unpack_bf16(a[0]), x1 = unpack_bf16(a[1]), x2 = unpack_bf16(a[2]), x3 = unpack_bf16(a[3]);
      AO[kt][0] = pack_bf16(f0 * x0.x, f1 * x0.y);
      AO[kt][1] = pack_bf16(f0 * x1.x, f1 * x1.y);
      AO[kt][2] = pack_bf16(f2 * x2.x, f3 * x2.y);
      AO[kt][3] = pack_bf16(f2 * x3.x, f3 * x3.y);
    }
    const float decay = __expf(GC);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) dS[nt][i] *= decay;
    state_add_rows(dS, AO, sm.Q[st], key0);
    state_add_rows(dS, AU, sm.W[st], key0);
  }
  if (dh0) store_state(dh0 + state_off, dS, col0, key0);
}

/// Row r of a [64 x cols] fp32 tile: 4 threads per row (quad), fixed order. Returns sum_j f(r, j) to all 4.
template <class F>
__device__ __forceinline__ float quad_row_sum(int cols, F f) {
  const int r = threadIdx.x / 4, p = threadIdx.x % 4;
  float acc = 0.f;
  for (int j = p; j < cols; j += 4) acc += f(r, j);
  return quad_sum(acc);
}

/// Two 64 x 64 fp32 tiles, or P (bf16) in the first one's place.
union Pair64 {
  struct {
    float F1[kChunk * kLdF64];
    float F2[kChunk * kLdF64];
  } f;
  bf16 Pb[kChunk * kLd64];
};

/// Shared memory of the two per-chunk gradient kernels of the state and output terms (104.6 KiB each: two blocks per
/// multiprocessor). Slot names are grad1_output's; grad1_state keeps dU in dO and U in U.
struct Grad1Smem {
  bf16 Q[kChunk * kLd128];
  bf16 K[kChunk * kLd128];
  bf16 dO[kChunk * kLd128];
  bf16 U[kChunk * kLd128];  // U, then S (output kernel) or S / dS' (state kernel), 64 state rows at a time
  Pair64 R;
  float G[kChunk], dG[kChunk], red[kWarps];
};

/// grad1_output_kernel's dq and dk for the value head's state rows (dq's columns) `half` x 64 .. + 63, with P in
/// sm.R.Pb, Q, K, dO in place and U dead: X = dO S^T (S the chunk's state, `state`), dq = scale e^G X + P K (to
/// `dq_tok`, the chunk's first token, row stride sv), dk = P^T Q (to `dk_tok`). `eg` is this thread's row's
/// scale e^G. Returns this row's part of the gate gradient's state-read term (the rows of scale e^G X dotted with Q).
__device__ __forceinline__ float grad1_dq_dk_half(Grad1Smem& sm, int half, const bf16* state, float eg, int len,
                                                  float* dq_tok, float* dk_tok, long sv) {
  const int tid = threadIdx.x;
  __syncthreads();
  load_rows128(sm.U, state + half * kChunk * kHeadDim, kHeadDim, kChunk, kChunk);  // U is dead: S rows
  __syncthreads();
  mma_block<64, 64, 128, Lay::N, Lay::T>(sm.dO, kLd128, sm.U, kLd128, sm.R.f.F2, kLdF64);  // X = dO S^T
  __syncthreads();
  const float dg = quad_row_sum(kChunk, [&](int rr, int j) {  // rows of scale e^G X dotted with Q
    const float x = eg * sm.R.f.F2[rr * kLdF64 + j];
    sm.R.f.F2[rr * kLdF64 + j] = x;
    return x * __bfloat162float(sm.Q[rr * kLd128 + half * kChunk + j]);
  });
  __syncthreads();
  mma_block<64, 64, 64, Lay::N, Lay::N>(sm.R.Pb, kLd64, sm.K + half * kChunk, kLd128, sm.R.f.F2, kLdF64, true);
  __syncthreads();  // dq (this half) = scale e^G X + P K
  for (int i = tid; i < len * kChunk; i += kThreads) {
    const int r = i / kChunk, j = i % kChunk;
    dq_tok[r * sv + half * kChunk + j] = sm.R.f.F2[r * kLdF64 + j];
  }
  __syncthreads();
  mma_block<64, 64, 64, Lay::T, Lay::N>(sm.R.Pb, kLd64, sm.Q + half * kChunk, kLd128, sm.R.f.F2, kLdF64);
  __syncthreads();  // dk (this half) = P^T Q
  for (int i = tid; i < len * kChunk; i += kThreads) {
    const int r = i / kChunk, j = i % kChunk;
    dk_tok[r * sv + half * kChunk + j] = sm.R.f.F2[r * kLdF64 + j];
  }
  return dg;
}

/// The output terms, per chunk and value head, before the reverse scan (which reads dv_local): with
/// M = scale (Q K^T) * D (D_rs = e^(G_r - G_s), s <= r), dv_local = M^T dO (written to dvl); dM = dO U^T and
/// P = scale (dM * D) give dq = scale e^G (dO S^T) + P K (this value head's, written to dq_h) and dk = P^T Q
/// (written to dk_h; grad1_state adds to it), and the gate gradient's output and state-read terms (written to dG1).
/// Grid (chunks, Hv).
__global__ void __launch_bounds__(kThreads, 2)
    grad1_output_kernel(Shape s, DeviceChunkTable ct, const bf16* q, const bf16* k, const float* Gc, const bf16* d_o,
                        const bf16* vnew, const bf16* h, float* dvl, float* dq_h, float* dk_h, float* dG1) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Grad1Smem& sm = *reinterpret_cast<Grad1Smem*>(smem_raw);
  const int c = blockIdx.x, hv = blockIdx.y, hk = hv / (s.v_heads / s.k_heads), tid = threadIdx.x;
  const int t0 = ct.chunk_start[c], len = ct.chunk_len[c], r4 = tid / 4;
  const long sk = static_cast<long>(s.k_heads) * kHeadDim, sv = static_cast<long>(s.v_heads) * kHeadDim;
  const long tok_v = static_cast<long>(t0) * sv + hv * kHeadDim;
  const long st = (static_cast<long>(c) * s.v_heads + hv) * kHeadDim * kHeadDim;
  load_gates(sm.G, Gc + static_cast<long>(t0) * s.v_heads + hv, s.v_heads, len);
  load_rows128(sm.Q, q + static_cast<long>(t0) * sk + hk * kHeadDim, sk, kChunk, len);
  load_rows128(sm.K, k + static_cast<long>(t0) * sk + hk * kHeadDim, sk, kChunk, len);
  load_rows128(sm.dO, d_o + tok_v, sv, kChunk, len);
  load_rows128(sm.U, vnew + tok_v, sv, kChunk, len);
  __syncthreads();
  mma_block<64, 64, 128, Lay::N, Lay::T>(sm.dO, kLd128, sm.U, kLd128, sm.R.f.F1, kLdF64);  // dM = dO U^T
  mma_block<64, 64, 128, Lay::N, Lay::T>(sm.Q, kLd128, sm.K, kLd128, sm.R.f.F2, kLdF64);   // Q K^T
  __syncthreads();
  constexpr int kPer = kChunk * kChunk / kThreads;
  bf16 p[kPer], mb[kPer];
#pragma unroll
  for (int m = 0; m < kPer; ++m) {
    const int i = tid + m * kThreads, r = i / kChunk, j = i % kChunk;
    const float e = j <= r ? s.scale * __expf(sm.G[r] - sm.G[j]) : 0.f;
    const float dm = sm.R.f.F1[r * kLdF64 + j], qk = sm.R.f.F2[r * kLdF64 + j];
    sm.R.f.F2[r * kLdF64 + j] = dm * e * qk;  // dM * M
    p[m] = __float2bfloat16(dm * e);          // P = scale (dM * D)
    mb[m] = __float2bfloat16(e * qk);         // M
  }
  __syncthreads();
  bf16* Mb = sm.U;  // U is dead (dM is made): M in its place, ld kLd64
#pragma unroll
  for (int m = 0; m < kPer; ++m) {
    const int i = tid + m * kThreads, o = (i / kChunk) * kLd64 + i % kChunk;
    sm.R.Pb[o] = p[m];  // dM is dead: P in its place
    Mb[o] = mb[m];
  }
  float dg = quad_row_sum(kChunk, [&](int rr, int j) { return sm.R.f.F2[rr * kLdF64 + j]; }) -
             quad_row_sum(kChunk, [&](int rr, int j) { return sm.R.f.F2[j * kLdF64 + rr]; });  // row - column
  for (int half = 0; half < 2; ++half) {  // dv_local = M^T dO, 64 value columns at a time
    __syncthreads();
    mma_block<64, 64, 64, Lay::T, Lay::N>(Mb, kLd64, sm.dO + half * kChunk, kLd128, sm.R.f.F2, kLdF64);
    __syncthreads();
    for (int i = tid; i < len * kChunk; i += kThreads) {
      const int r = i / kChunk, j = i % kChunk;
      dvl[tok_v + r * sv + half * kChunk + j] = sm.R.f.F2[r * kLdF64 + j];
    }
  }
  for (int half = 0; half < 2; ++half)  // state rows (dq's columns) 64 at a time
    dg += grad1_dq_dk_half(sm, half, h + st, s.scale * __expf(sm.G[r4]), len, dq_h + tok_v, dk_h + tok_v, sv);
  if (tid % 4 == 0 && r4 < len) dG1[static_cast<long>(t0 + r4) * s.v_heads + hv] = dg;
}

/// The state terms, per chunk and value head, after the reverse scan: dW = -dU S^T, dk += e^(G_C - G) (U dS'^T)
/// (added to dk_h), and the gate gradient's state terms (added to dG1). Grid (chunks, Hv).
__global__ void __launch_bounds__(kThreads, 2)
    grad1_state_kernel(Shape s, DeviceChunkTable ct, const bf16* k, const float* Gc, const bf16* vnew, const bf16* h,
                       const bf16* dh, const bf16* dU, float* dk_h, bf16* dW, float* dG1) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Grad1Smem& sm = *reinterpret_cast<Grad1Smem*>(smem_raw);
  const int c = blockIdx.x, hv = blockIdx.y, hk = hv / (s.v_heads / s.k_heads), tid = threadIdx.x;
  const int t0 = ct.chunk_start[c], len = ct.chunk_len[c], r4 = tid / 4;
  const long sk = static_cast<long>(s.k_heads) * kHeadDim, sv = static_cast<long>(s.v_heads) * kHeadDim;
  const long tok_v = static_cast<long>(t0) * sv + hv * kHeadDim;
  const long st = (static_cast<long>(c) * s.v_heads + hv) * kHeadDim * kHeadDim;
  load_gates(sm.G, Gc + static_cast<long>(t0) * s.v_heads + hv, s.v_heads, len);
  if (tid < kChunk) sm.dG[tid] = tid < len ? dG1[static_cast<long>(t0 + tid) * s.v_heads + hv] : 0.f;
  load_rows128(sm.K, k + static_cast<long>(t0) * sk + hk * kHeadDim, sk, kChunk, len);
  load_rows128(sm.dO, dU + tok_v, sv, kChunk, len);
  load_rows128(sm.Q, vnew + tok_v, sv, kChunk, len);  // U in Q's place
  __syncthreads();
  const float f = __expf(sm.G[kChunk - 1] - sm.G[r4]);
  float sds = 0.f, t = 0.f;               // sum S * dS'; this row's dKhat . Khat
  for (int half = 0; half < 2; ++half) {  // state rows 64 at a time
    const long sh = st + half * kChunk * kHeadDim;
    load_rows128(sm.U, h + sh, kHeadDim, kChunk, kChunk);
    __syncthreads();
    mma_block<64, 64, 128, Lay::N, Lay::T>(sm.dO, kLd128, sm.U, kLd128, sm.R.f.F1, kLdF64);  // dU S^T
    for (int i = tid; i < kChunk * kHeadDim; i += kThreads)
      sds += __bfloat162float(sm.U[(i / kHeadDim) * kLd128 + i % kHeadDim]) * __bfloat162float(dh[sh + i]);
    __syncthreads();
    for (int i = tid; i < len * kChunk; i += kThreads) {
      const int r = i / kChunk, j = i % kChunk;
      dW[tok_v + r * sv + half * kChunk + j] = __float2bfloat16(-sm.R.f.F1[r * kLdF64 + j]);
    }
    load_rows128(sm.U, dh + sh, kHeadDim, kChunk, kChunk);  // dS' rows in place of S's
    __syncthreads();
    mma_block<64, 64, 128, Lay::N, Lay::T>(sm.Q, kLd128, sm.U, kLd128, sm.R.f.F2, kLdF64);  // dKhat = U dS'^T
    __syncthreads();
    t += quad_row_sum(kChunk, [&](int rr, int j) {
      const float d = f * sm.R.f.F2[rr * kLdF64 + j];
      if (rr < len) dk_h[tok_v + rr * sv + half * kChunk + j] += d;
      return d * __bfloat162float(sm.K[rr * kLd128 + half * kChunk + j]);
    });
    __syncthreads();
  }
  if (tid % 4 == 0) sm.dG[r4] -= t;
  if (tid % 4 != 0) t = 0.f;
  const float tsum = block_sum(t, sm.red);  // sum_r dKhat_r . Khat_r; synchronises
  const float ssum = block_sum(sds, sm.red);
  if (tid == 0) sm.dG[len - 1] += tsum + __expf(sm.G[kChunk - 1]) * ssum;
  __syncthreads();
  if (tid < len) dG1[static_cast<long>(t0 + tid) * s.v_heads + hv] = sm.dG[tid];
}

/// grad2_kernel's shared memory: 104.5 KiB, so two blocks share a multiprocessor. K stays for the whole key head;
/// the two other 64 x 128 slots hold V and dU, then dW and Z; R holds one 64 x 128 fp32 product or two 64 x 64.
struct Grad2Smem {
  bf16 K[kChunk * kLd128];
  bf16 S1[kChunk * kLd128];  // V, then dW
  bf16 S2[kChunk * kLd128];  // dU, then Z = T^T dT (ld kLd64), then Tc = T diag(cb) (ld kLd64)
  bf16 Tb[kChunk * kLd64];
  bf16 X1[kChunk * kLd64];  // dT, then D = dX + dX^T
  union {
    float F128[kChunk * kLdF128];
    struct {
      float F1[kChunk * kLdF64];
      float F2[kChunk * kLdF64];
    } f;
  } R;
  float G[kChunk], B[kChunk], dG[kChunk], dB[kChunk], cb[kChunk];
};

/// grad2_head's first part, with V in S1 and dU in S2: dv = diag(beta) T^T dU (written), its beta term
/// rowdot(T^T dU, V) (into sm.dB), and P1 = dU V^T (into R.f.F1). Whole block; ends synchronised.
__device__ void grad2_dv(const Shape& s, Grad2Smem& sm, int len, long tok_v, bf16* dv) {
  const int tid = threadIdx.x;
  const long sv = static_cast<long>(s.v_heads) * kHeadDim;
  mma_block<64, 128, 64, Lay::T, Lay::N>(sm.Tb, kLd64, sm.S2, kLd128, sm.R.F128, kLdF128);  // T^T dU
  __syncthreads();
  {
    const int r = tid / 4;
    const float a = quad_row_sum(kHeadDim, [&](int rr, int j) {
      return sm.R.F128[rr * kLdF128 + j] * __bfloat162float(sm.S1[rr * kLd128 + j]);
    });
    if (tid % 4 == 0) sm.dB[r] += a;
  }
  for (int i = tid; i < len * kHeadDim; i += kThreads) {
    const int r = i / kHeadDim, j = i % kHeadDim;
    dv[tok_v + r * sv + j] = __float2bfloat16(sm.B[r] * sm.R.F128[r * kLdF128 + j]);
  }
  __syncthreads();
  mma_block<64, 64, 128, Lay::N, Lay::T>(sm.S2, kLd128, sm.S1, kLd128, sm.R.f.F1, kLdF64);  // P1 = dU V^T
  __syncthreads();
}

/// With dW in S1 (P1 in R.f.F1): P2 = dW K^T, T^T dW's beta and gate terms (column dots of T with P2: the rows of
/// T^T dW dotted with K), dT = (P1 + P2 diag(e^G)) diag(beta) into X1, then Z = T^T dT into S2. Whole block.
__device__ void grad2_dT(Grad2Smem& sm) {
  const int tid = threadIdx.x;
  mma_block<64, 64, 128, Lay::N, Lay::T>(sm.S1, kLd128, sm.K, kLd128, sm.R.f.F2, kLdF64);  // P2 = dW K^T
  __syncthreads();
  {
    const int r = tid / 4;
    const float a = quad_row_sum(
        kChunk, [&](int rr, int i) { return __bfloat162float(sm.Tb[i * kLd64 + rr]) * sm.R.f.F2[i * kLdF64 + rr]; });
    if (tid % 4 == 0) {
      sm.dB[r] += __expf(sm.G[r]) * a;
      sm.dG[r] += sm.cb[r] * a;
    }
  }
  for (int i = tid; i < kChunk * kChunk; i += kThreads) {
    const int r = i / kChunk, j = i % kChunk;
    const float d = sm.B[j] * (sm.R.f.F1[r * kLdF64 + j] + __expf(sm.G[j]) * sm.R.f.F2[r * kLdF64 + j]);
    sm.X1[r * kLd64 + j] = __float2bfloat16(d);
  }
  __syncthreads();
  mma_block<64, 64, 64, Lay::T, Lay::N>(sm.Tb, kLd64, sm.X1, kLd64, sm.R.f.F1, kLdF64);  // Z = T^T dT
  __syncthreads();
  for (int i = tid; i < kChunk * kChunk; i += kThreads)
    sm.S2[(i / kChunk) * kLd64 + i % kChunk] = __float2bfloat16(sm.R.f.F1[(i / kChunk) * kLdF64 + i % kChunk]);
  __syncthreads();
}

/// From Z (S2): -dA = Z T^T and K K^T give dX (strictly lower) and its beta and gate terms; D = dX + dX^T into X1
/// (dX's entries, each once, mirrored), then the key head's dk share of this value head, Tc^T dW + D K with
/// Tc = T diag(cb) (cb = beta e^G), into R.F128. Whole block; ends synchronised.
__device__ void grad2_dA(Grad2Smem& sm) {
  const int tid = threadIdx.x;
  mma_block<64, 64, 64, Lay::N, Lay::T>(sm.S2, kLd64, sm.Tb, kLd64, sm.R.f.F1, kLdF64);   // Z T^T = -dA
  mma_block<64, 64, 128, Lay::N, Lay::T>(sm.K, kLd128, sm.K, kLd128, sm.R.f.F2, kLdF64);  // K K^T
  __syncthreads();
  for (int i = tid; i < kChunk * kChunk; i += kThreads) {
    const int r = i / kChunk, j = i % kChunk;
    float daa = 0.f, dbt = 0.f;
    if (j < r) {
      const float da = -sm.R.f.F1[r * kLdF64 + j], e = __expf(sm.G[r] - sm.G[j]), kk = sm.R.f.F2[r * kLdF64 + j];
      dbt = da * e * kk;    // dbeta term (row sums)
      daa = dbt * sm.B[r];  // dA * A
      const bf16 dx = __float2bfloat16(da * sm.B[r] * e);
      sm.X1[r * kLd64 + j] = dx;
      sm.X1[j * kLd64 + r] = dx;
    } else if (j == r) {
      sm.X1[r * kLd64 + r] = __float2bfloat16(0.f);
    }
    sm.R.f.F1[r * kLdF64 + j] = dbt;
    sm.R.f.F2[r * kLdF64 + j] = daa;
  }
  for (int i = tid; i < kChunk * kChunk; i += kThreads) {  // Tc = T diag(cb) (Z is dead)
    const int r = i / kChunk, j = i % kChunk;
    sm.S2[r * kLd64 + j] = __float2bfloat16(__bfloat162float(sm.Tb[r * kLd64 + j]) * sm.cb[j]);
  }
  __syncthreads();
  {
    const int r = tid / 4;
    const float b = quad_row_sum(kChunk, [&](int rr, int j) { return sm.R.f.F1[rr * kLdF64 + j]; });
    const float a = quad_row_sum(kChunk, [&](int rr, int j) { return sm.R.f.F2[rr * kLdF64 + j]; });
    const float cs = quad_row_sum(kChunk, [&](int rr, int j) { return sm.R.f.F2[j * kLdF64 + rr]; });
    if (tid % 4 == 0) {
      sm.dB[r] += b;
      sm.dG[r] += a - cs;
    }
  }
  __syncthreads();
  mma_block<64, 128, 64, Lay::T, Lay::N>(sm.S2, kLd64, sm.S1, kLd128, sm.R.F128, kLdF128);       // Tc^T dW
  mma_block<64, 128, 64, Lay::N, Lay::N>(sm.X1, kLd64, sm.K, kLd128, sm.R.F128, kLdF128, true);  // + D K
  __syncthreads();
}

/// Loads a chunk's T rows (64 bf16 each, global row stride `stride` elements) into a shared tile of ld kLd64.
__device__ __forceinline__ void load_rows64(bf16* dst, const bf16* src, long stride, int valid) {
  for (int i = threadIdx.x; i < kChunk * 8; i += kThreads) {
    const int r = i / 8, q = (i % 8) * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (r < valid) x = *reinterpret_cast<const uint4*>(src + r * stride + q);
    *reinterpret_cast<uint4*>(dst + r * kLd64 + q) = x;
  }
}

/// Per chunk and key head, over the value heads of the group in order: dv, dbeta, dg (reverse cumulative sum of
/// dG), and dq, dk summed over the group (each value head's WY share of dk is first added to its dk_h row, which
/// this block owns). Grid (chunks, Hk); two blocks per multiprocessor.
__global__ void __launch_bounds__(kThreads, 2)
    grad2_kernel(Shape s, DeviceChunkTable ct, const bf16* k, const bf16* v, const float* beta, const float* Gc,
                 const bf16* T, const bf16* dU, const bf16* dW, const float* dq_h, float* dk_h, const float* dG1,
                 bf16* dq, bf16* dk, bf16* dv, float* dg, float* dbeta) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Grad2Smem& sm = *reinterpret_cast<Grad2Smem*>(smem_raw);
  const int c = blockIdx.x, hk = blockIdx.y, ratio = s.v_heads / s.k_heads, tid = threadIdx.x;
  const int t0 = ct.chunk_start[c], len = ct.chunk_len[c];
  const long sk = static_cast<long>(s.k_heads) * kHeadDim, sv = static_cast<long>(s.v_heads) * kHeadDim;
  load_rows128(sm.K, k + static_cast<long>(t0) * sk + hk * kHeadDim, sk, kChunk, len);
  for (int hv = hk * ratio; hv < (hk + 1) * ratio; ++hv) {
    const long tok_v = static_cast<long>(t0) * sv + hv * kHeadDim;
    const long tok_g = static_cast<long>(t0) * s.v_heads + hv;
    load_gates(sm.G, Gc + tok_g, s.v_heads, len);
    if (tid < kChunk) {
      sm.B[tid] = tid < len ? beta[tok_g + static_cast<long>(tid) * s.v_heads] : 0.f;
      sm.dG[tid] = tid < len ? dG1[tok_g + static_cast<long>(tid) * s.v_heads] : 0.f;
      sm.dB[tid] = 0.f;
    }
    load_rows128(sm.S1, v + tok_v, sv, kChunk, len);
    load_rows128(sm.S2, dU + tok_v, sv, kChunk, len);
    load_rows64(sm.Tb, T + tok_g * kChunk, static_cast<long>(s.v_heads) * kChunk, len);
    __syncthreads();
    if (tid < kChunk) sm.cb[tid] = sm.B[tid] * __expf(sm.G[tid]);
    grad2_dv(s, sm, len, tok_v, dv);
    load_rows128(sm.S1, dW + tok_v, sv, kChunk, len);  // V is dead: dW in its place
    __syncthreads();
    grad2_dT(sm);
    grad2_dA(sm);
    for (int i = tid; i < len * kHeadDim; i += kThreads) {
      const int r = i / kHeadDim, j = i % kHeadDim;
      dk_h[tok_v + r * sv + j] += sm.R.F128[r * kLdF128 + j];
    }
    if (tid == 0) {  // dg_i = sum_{t >= i} dG_t over the chunk's tokens
      float acc = 0.f;
      for (int r = len - 1; r >= 0; --r) {
        acc += sm.dG[r];
        dg[tok_g + static_cast<long>(r) * s.v_heads] = acc;
      }
    }
    if (tid < len) dbeta[tok_g + static_cast<long>(tid) * s.v_heads] = sm.dB[tid];
    __syncthreads();  // this block's dk_h writes are visible to the sum below; the tiles may be reloaded
  }
  const long tok_k = static_cast<long>(t0) * sk + hk * kHeadDim;
  for (int i = tid; i < len * kHeadDim; i += kThreads) {
    const int r = i / kHeadDim, j = i % kHeadDim;
    float aq = 0.f, ak = 0.f;
    for (int hv = hk * ratio; hv < (hk + 1) * ratio; ++hv) {
      const long o = static_cast<long>(t0 + r) * sv + hv * kHeadDim + j;
      aq += dq_h[o];
      ak += dk_h[o];
    }
    dq[tok_k + r * sk + j] = __float2bfloat16(aq);
    dk[tok_k + r * sk + j] = __float2bfloat16(ak);
  }
}

template <class Smem, class Kernel>
cudaError_t set_smem(Kernel kernel) {
  static_assert(sizeof(Smem) <= 227 * 1024, "shared memory over the 227 KiB a Hopper block may use");
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(sizeof(Smem)));
}

template <int BV>
cudaError_t launch_dstate_bv(const Shape& s, const DeviceChunkTable& ct, const bf16* q, const bf16* k, const float* Gc,
                             const bf16* W, const bf16* d_o, const float* dvl, const float* dht, bf16* dh, bf16* dU,
                             float* dh0, cudaStream_t stream) {
  if (auto e = set_smem<DstateSmem<BV>>(dstate_kernel<BV>)) return e;
  dstate_kernel<BV><<<dim3(kHeadDim / BV, s.v_heads, s.rows), kThreads, sizeof(DstateSmem<BV>), stream>>>(
      s, ct, q, k, Gc, W, d_o, dvl, dht, dh, dU, dh0);
  return cudaGetLastError();
}

template <int BV, int KS>
cudaError_t launch_dstate_reg(const Shape& s, const DeviceChunkTable& ct, const bf16* q, const bf16* k, const float* Gc,
                              const bf16* W, const bf16* d_o, const float* dvl, const float* dht, bf16* dh, bf16* dU,
                              float* dh0, cudaStream_t stream) {
  using Smem = DstateRegSmem<BV, KS>;
  if (auto e = set_smem<Smem>(dstate_reg_kernel<BV, KS>)) return e;
  dstate_reg_kernel<BV, KS><<<dim3(kHeadDim / BV, s.v_heads, s.rows), BV * 2 * KS, sizeof(Smem), stream>>>(
      s, ct, q, k, Gc, W, d_o, dvl, dht, dh, dU, dh0);
  return cudaGetLastError();
}

/// The reverse scan (dstate_kernel, or dstate_reg_kernel with ScanKernel::kRegisters) with scan_columns(s) value
/// columns per block.
cudaError_t launch_dstate(const Shape& s, const DeviceChunkTable& ct, const bf16* q, const bf16* k, const float* Gc,
                          const bf16* W, const bf16* d_o, const float* dvl, const float* dht, bf16* dh, bf16* dU,
                          float* dh0, cudaStream_t stream) {
  if (scan_kernel() == ScanKernel::kRegisters)
    return with_register_scan_shape(scan_columns(s), scan_key_split(s), [&](auto bv, auto ks) {
      return launch_dstate_reg<decltype(bv)::value, decltype(ks)::value>(s, ct, q, k, Gc, W, d_o, dvl, dht, dh, dU,
                                                                          dh0, stream);
    });
  if (scan_columns(s) > 32) return cudaErrorInvalidValue;  // 64 and 128: the register scans only
  return scan_columns(s) == 16 ? launch_dstate_bv<16>(s, ct, q, k, Gc, W, d_o, dvl, dht, dh, dU, dh0, stream)
                               : launch_dstate_bv<32>(s, ct, q, k, Gc, W, d_o, dvl, dht, dh, dU, dh0, stream);
}

}  // namespace
}  // namespace detail

size_t backward_workspace_bytes(const Shape& s, int chunks, bool from_saved) {
  detail::Carver cv{nullptr}, sv{nullptr};
  detail::carve_backward(cv, from_saved ? &sv : nullptr, s, chunks);
  return cv.used;
}

cudaError_t backward(const Shape& s, const DeviceChunkTable& ct, const bf16* q, const bf16* k, const bf16* v,
                     const float* g, const float* beta, const float* initial_state, const bf16* d_o,
                     const float* d_final_state, bf16* dq, bf16* dk, bf16* dv, float* dg, float* dbeta,
                     float* d_initial_state, const void* saved, void* workspace, cudaStream_t stream) {
  using namespace detail;
  Carver cv{static_cast<char*>(workspace)}, sv{static_cast<char*>(const_cast<void*>(saved))};
  const BackwardBuffers b = carve_backward(cv, saved ? &sv : nullptr, s, ct.chunks);
  const ForwardBuffers& f = b.f;
  if (!saved) {  // recompute the forward's intermediates (the same kernels: the same bits as the forward's)
    if (auto e = launch_prep(s, ct, k, v, g, beta, f.Gc, f.T, f.W, f.U0, stream)) return e;
    if (auto e = launch_state(s, ct, k, f.Gc, f.W, f.U0, initial_state, f.h, f.vnew, nullptr, stream)) return e;
  }
  const dim3 per_chunk(ct.chunks, s.v_heads);
  if (ct.chunks > 0) {
    if (auto e = set_smem<Grad1Smem>(grad1_output_kernel)) return e;
    grad1_output_kernel<<<per_chunk, kThreads, sizeof(Grad1Smem), stream>>>(s, ct, q, k, f.Gc, d_o, f.vnew, f.h, b.dvl,
                                                                            b.dq_h, b.dk_h, b.dG1);
  }
  if (auto e = launch_dstate(s, ct, q, k, f.Gc, f.W, d_o, b.dvl, d_final_state, b.dh, b.dU, d_initial_state, stream))
    return e;
  if (ct.chunks == 0) return cudaGetLastError();
  if (auto e = set_smem<Grad1Smem>(grad1_state_kernel)) return e;
  grad1_state_kernel<<<per_chunk, kThreads, sizeof(Grad1Smem), stream>>>(s, ct, k, f.Gc, f.vnew, f.h, b.dh, b.dU,
                                                                         b.dk_h, b.dW, b.dG1);
  if (auto e = set_smem<Grad2Smem>(grad2_kernel)) return e;
  grad2_kernel<<<dim3(ct.chunks, s.k_heads), kThreads, sizeof(Grad2Smem), stream>>>(
      s, ct, k, v, beta, f.Gc, f.T, b.dU, b.dW, b.dq_h, b.dk_h, b.dG1, dq, dk, dv, dg, dbeta);
  return cudaGetLastError();
}

}  // namespace recipebench::gdn
