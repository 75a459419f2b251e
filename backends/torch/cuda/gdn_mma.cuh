// Warp-level tensor-core helpers with known fragment layouts (PTX mma.sync m16n8k16, ldmatrix, cp.async), for the
// register-resident scans (gdn_scan_registers.cuh). Layouts, PTX ISA "Matrix fragments for mma.m16n8k16" with
// g = lane / 4, t = lane % 4:
//   A (16 x 16, row-major, 4 x b32 of two bf16): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
//   B (16 x 8, "col": stored as [n][k]), 2 x b32: b0 (k 2t..2t+1, n g), b1 (k 2t+8..2t+9, n g)
//   C (16 x 8, fp32): c0, c1 (g, 2t..2t+1), c2, c3 (g+8, 2t..2t+1)
// A C fragment pair (n-tiles 2i, 2i+1) rounded to bf16 is the A fragment of k-step i (the same thread owns the
// same elements), as flash attention reuses its score tile.
// Internal to backends/torch/cuda; see docs/gdn-kernels.md.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace recipebench::gdn::detail {

/// Two floats as one b32 of bf16 (round to nearest even); `lo` is the element of the lower column.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

/// The two floats of a b32 of bf16.
__device__ __forceinline__ float2 unpack_bf16(uint32_t x) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&x));
}

/// c += a b (m16n8k16, bf16 inputs, fp32 accumulate).
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Four 8 x 8 bf16 matrices from shared memory: lanes 8i..8i+7 give the 8 row addresses (16 bytes each) of matrix
/// i, which lands in d[i]; each thread gets row g, elements 2t, 2t+1.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&d)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_addr(row)));
}

/// As ldmatrix_x4, transposed: each thread gets elements (2t, g) and (2t + 1, g) of each stored matrix.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&d)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_addr(row)));
}

/// 16 bytes global -> shared, asynchronously; `bytes` 0 writes zeros (nothing is read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
}

/// 4 bytes global -> shared, asynchronously.
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(dst)), "l"(src));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

/// Waits for every cp.async of this thread; the caller's __syncthreads then makes all threads' copies visible.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

}  // namespace recipebench::gdn::detail
