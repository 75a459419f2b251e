// Choice of kernel for the layers that have more than one implementation. No libtorch here.
#pragma once

namespace recipebench::torch_model {

/// Softmax attention of GatedAttention.
enum class AttentionImpl {
  Auto,  ///< Sdpa when compiled against libtorch 2.x and the tensor is on CUDA, else Math
  Math,  ///< explicit QK^T, causal mask, softmax in fp32 (fp64 for fp64 inputs), PV; any device and dtype
  Sdpa,  ///< at::scaled_dot_product_attention (libtorch 2.x only; an error on 1.13)
};

/// Routed experts of SparseMoeBlock.
enum class ExpertsImpl {
  Auto,     ///< Grouped when at::_grouped_mm can run (libtorch >= 2.8, CUDA, bf16), else Loop
  Loop,     ///< one pair of matmuls per expert that received tokens (syncs to read the token counts)
  Grouped,  ///< at::_grouped_mm over the tokens sorted by expert (an error where it cannot run)
};

/// Gated delta rule of GatedDeltaNet.
enum class GdnKernel {
  Chunked,    ///< chunked (WY / UT transform) form, chunk size ModelConfig::gdn_chunk_size
  Recurrent,  ///< plain per-token recurrence (the reference; slow)
};

/// Kernel choices of one model; every layer takes the field it needs.
struct KernelOptions {
  AttentionImpl attention = AttentionImpl::Auto;
  ExpertsImpl experts = ExpertsImpl::Auto;
  GdnKernel gdn = GdnKernel::Chunked;
};

}  // namespace recipebench::torch_model
