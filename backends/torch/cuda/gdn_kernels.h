// Chunked gated delta rule on CUDA (chunk 64, head dims 128): the plain C++ API of gdn_forward.cu and
// gdn_backward.cu. No torch here: the kernels compile with nvcc alone and gdn_check needs no libtorch.
// The algorithm, what is stored and what is recomputed: docs/gdn-kernels.md.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace recipebench::gdn {

inline constexpr int kChunk = 64;     ///< tokens per chunk
inline constexpr int kHeadDim = 128;  ///< key and value head dim (both)

/// Problem shape. Tokens of all rows are packed: row n is tokens cu_seqlens[n] .. cu_seqlens[n+1]-1 of the
/// [total_tokens, heads, 128] tensors; the state starts afresh at each row. Value head h uses key head
/// h / (v_heads / k_heads).
struct Shape {
  int total_tokens = 0;
  int rows = 0;
  int k_heads = 0;
  int v_heads = 0;
  float scale = 0.f;  ///< multiplies q (the caller passes 1/sqrt(128) for the usual scale)
};

/// The chunk table of a packed sequence (host side): for each chunk, its first token, its length (1..64) and its
/// row; and for each row, the index of its first chunk (size rows + 1). Throws std::invalid_argument on offsets
/// that are not non-decreasing from 0.
struct ChunkTable {
  std::vector<int> chunk_start, chunk_len, chunk_row, row_first_chunk;
  int chunks() const { return static_cast<int>(chunk_start.size()); }
};
ChunkTable make_chunk_table(const std::vector<int64_t>& cu_seqlens);

/// Device copy of a ChunkTable: four int arrays laid out back to back (see upload()).
struct DeviceChunkTable {
  const int* chunk_start = nullptr;
  const int* chunk_len = nullptr;
  const int* chunk_row = nullptr;
  const int* row_first_chunk = nullptr;
  int chunks = 0;
};
/// Ints needed to hold `t` on the device (3 * chunks + rows + 1).
size_t chunk_table_ints(const ChunkTable& t);
/// Packs `t` into host ints (layout of DeviceChunkTable over one buffer) for a copy to `device_ints`.
std::vector<int> pack_chunk_table(const ChunkTable& t);
DeviceChunkTable device_view(const ChunkTable& t, const int* device_ints);

/// Which kernels run the two sequential scans (the chunk states forward, their gradients backward).
enum class ScanKernel {
  kShared,     ///< the state in shared memory (fp32, with a bf16 copy), products through nvcuda::wmma
  kRegisters,  ///< each warp's 16 value columns (and 128 / key split keys) of the state in registers, mma.sync
};
/// Sets the scan kernels (default kRegisters since 2026-12-01: docs/gdn-kernels.md). The two give different bits
/// (other rounding points, same tolerance against the float64 reference: gdn_check checks each). Process-wide, not
/// thread-safe.
void set_scan_kernel(ScanKernel kernel);
ScanKernel scan_kernel();

/// Value columns per block of the two sequential scans (the chunk states forward, their gradients backward): 16,
/// 32, 64 or 128 (64 and 128 with ScanKernel::kRegisters only: the shared-memory scans then fail their launch
/// with cudaErrorInvalidValue), or 0 for the automatic choice (detail::scan_columns: 32, or 64 for the register
/// scans when blocks of 32 would outnumber the multiprocessors). The results are the same bits for
/// every choice; gdn_check times each. Process-wide, not thread-safe. Throws std::invalid_argument on another value.
void set_scan_columns(int columns);

/// Key slices of ScanKernel::kRegisters: each block's BV value columns are held by BV / 16 * `slices` warps, each
/// with 128 / `slices` keys of the state, whose products over keys are added through shared memory in slice order
/// (deterministic; each split gives other bits, within the same tolerance). 1, 2 or 4 (with at most 16 warps a
/// block: columns * slices <= 128, else the launch fails with cudaErrorInvalidValue), or 0 for the default (2;
/// detail::scan_key_split). Process-wide, not thread-safe. Throws std::invalid_argument on another value.
void set_scan_key_split(int slices);
/// The key slices the register scans use now (set_scan_key_split()'s value, or the default).
int scan_key_split();

/// Bytes of the forward's intermediates that backward() can read instead of recomputing them: the cumulative gates
/// (fp32), T (64 bf16), W and v_new (128 bf16 each) per token and value head, and the bf16 chunk states (128 x 128
/// per chunk and value head): 644 bytes per token and value head + 32 KiB per chunk and value head (about 1,156
/// bytes per token and value head; 303 MB at 8,192 tokens x 32 value heads). docs/gdn-kernels.md.
size_t saved_bytes(const Shape& s, int chunks);

/// Transient workspace bytes (chunks = ChunkTable::chunks()). forward: `keep` when it is given a saved buffer
/// (else the intermediates are carved from the workspace too). backward: `from_saved` when it is given the saved
/// buffer of the forward (else it recomputes the intermediates in its workspace).
size_t forward_workspace_bytes(const Shape& s, int chunks, bool keep);
size_t backward_workspace_bytes(const Shape& s, int chunks, bool from_saved);

/// Forward. q, k: [N, Hk, 128] bf16; v: [N, Hv, 128] bf16; g (log decay, <= 0), beta: [N, Hv] fp32;
/// initial_state: [rows, Hv, 128, 128] fp32 or null (zeros). Writes o: [N, Hv, 128] bf16 and, unless null,
/// final_state: [rows, Hv, 128, 128] fp32. saved: saved_bytes, 256-byte aligned, or null: the intermediates the
/// backward reads are written there (keep it, unchanged, for backward()). workspace: forward_workspace_bytes(keep =
/// saved != null), 256-byte aligned. Returns the first launch error (cudaSuccess when all launched).
cudaError_t forward(const Shape& s, const DeviceChunkTable& ct, const __nv_bfloat16* q, const __nv_bfloat16* k,
                    const __nv_bfloat16* v, const float* g, const float* beta, const float* initial_state,
                    __nv_bfloat16* o, float* final_state, void* saved, void* workspace, cudaStream_t stream);

/// Backward of forward(): reads the forward's `saved` buffer, or with null recomputes the intermediates from the
/// inputs (the same kernels: the same bits either way). d_o: [N, Hv, 128] bf16;
/// d_final_state: [rows, Hv, 128, 128] fp32 or null (zero). Writes dq, dk [N, Hk, 128] bf16 (summed over the value
/// heads of each key head), dv [N, Hv, 128] bf16, dg, dbeta [N, Hv] fp32 and, unless null, d_initial_state
/// [rows, Hv, 128, 128] fp32. Deterministic (no atomics). workspace: backward_workspace_bytes(from_saved = saved !=
/// null).
cudaError_t backward(const Shape& s, const DeviceChunkTable& ct, const __nv_bfloat16* q, const __nv_bfloat16* k,
                     const __nv_bfloat16* v, const float* g, const float* beta, const float* initial_state,
                     const __nv_bfloat16* d_o, const float* d_final_state, __nv_bfloat16* dq, __nv_bfloat16* dk,
                     __nv_bfloat16* dv, float* dg, float* dbeta, float* d_initial_state, const void* saved,
                     void* workspace, cudaStream_t stream);

}  // namespace recipebench::gdn
