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

/// Activation recompute of the decoder stack (a recipe's layout.recompute with granularity full; Megatron-LM's
/// --recompute-method / --recompute-num-layers). A recomputed unit keeps only its input during the forward pass
/// and runs its forward again, with gradients, in the backward pass (model/recompute.h).
struct RecomputeOptions {
  enum class Method {
    None,     ///< no recompute: every layer keeps its activations
    Uniform,  ///< the layers in groups of num_layers consecutive layers, each group recomputed as one unit
    Block,    ///< the first num_layers layers recomputed, each on its own; the rest keep their activations
  };
  Method method = Method::None;
  int num_layers = 1;  ///< >= 1
};

/// How the routed experts exchange token rows over the expert-parallel group (a recipe's bench.ep_dispatch;
/// docs/distributed.md, "Expert parallelism"). No effect without expert parallelism.
enum class EpDispatch {
  HostSplits,     ///< variable-size all-to-all whose split sizes are read on the host (synchronises, once per layer)
  FixedCapacity,  ///< every rank sends each EP peer exactly `capacity` rows (real rows, then zero padding rows); the
                  ///< split sizes are known without reading data, everything else is computed on the device
};

/// The EP dispatcher of the MoE layers.
struct EpDispatchOptions {
  EpDispatch mode = EpDispatch::HostSplits;
  /// FixedCapacity: the most tokens one rank's MoE layer takes in one microbatch (layout.max_tokens_per_gpu, divided
  /// by TP under sequence parallelism); the capacity per peer is max_tokens x top_k rows. Must be > 0 then.
  int64_t max_tokens = 0;
};

/// Kernel choices of one model; every layer takes the field it needs.
struct KernelOptions {
  AttentionImpl attention = AttentionImpl::Auto;
  ExpertsImpl experts = ExpertsImpl::Auto;
  GdnKernel gdn = GdnKernel::Chunked;
  /// bench.kernels: true (fused) runs the fused CUDA kernels where they apply (BF16 on CUDA, when built: the gated
  /// delta rule, conv1d + SiLU, the gated RMSNorm, the cross-entropy of the LM loss, the MoE combine); false (ops)
  /// libtorch operations everywhere, the reference path the kernels are tested against.
  bool fused_kernels = true;
  RecomputeOptions recompute;  ///< read by TextModel (its `recompute` member starts from it)
};

}  // namespace recipebench::torch_model
