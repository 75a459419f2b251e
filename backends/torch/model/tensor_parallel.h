// Tensor parallelism with sequence parallelism of the Qwen3.5 MoE model (Megatron-LM: Shoeybi et al. 2019,
// "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism", arXiv 1909.08053, for the
// column- / row-parallel projections and the vocab-parallel output layer; Korthikanti et al. 2022, "Reducing
// Activation Recomputation in Large Transformer Models", arXiv 2205.05198, for sequence parallelism).
//
// With TP = T ranks and sequence parallelism the hidden states between the mixers and the MoE blocks are sharded
// along the sequence: [batch, seq / T, hidden] on every TP rank (rank r holds positions [r seq / T, (r + 1) seq / T)).
// A mixer (or the shared expert, or the output layer) all-gathers its input along the sequence, runs its
// column-parallel projections on the full sequence with its share of the heads (or of the FFN / vocabulary), and its
// row-parallel output projection gives a partial sum that is reduce-scattered along the sequence. In the backward
// pass the all-gather becomes a reduce-scatter and the reduce-scatter an all-gather. The collectives are reached only
// through TensorParallel (implemented outside the model over a c10d group). The all-gather and the column-parallel
// projections it feeds are one autograd function (column_parallel_projections), so that in the backward pass the
// input gradient's reduce-scatter can run while the weight gradients are computed (bench.overlap_tp_comm;
// docs/distributed.md, "Overlap").
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace recipebench::torch_model {

struct Qwen35MoeForCausalLMImpl;

/// A collective in flight (TensorParallel::start_reduce_scatter_sum). wait() returns once the caller's next
/// operations see its result (on CUDA: they are ordered after it on the current stream; the host does not wait for
/// the device). Throws std::exception when the collective failed.
struct PendingCollective {
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
};

/// The tensor-parallel group of the model. All calls are collectives: every rank of the group makes them in the
/// same order with tensors of the same shapes. Implementations throw std::exception on a failed collective.
struct TensorParallel {
  virtual ~TensorParallel() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t size() const = 0;
  /// In place: t = sum over ranks of t (contiguous).
  virtual void all_reduce_sum(at::Tensor& t) = 0;
  /// In place: t = element-wise maximum over ranks of t (contiguous).
  virtual void all_reduce_max(at::Tensor& t) = 0;
  /// full = the ranks' shards one after the other (both 1-D, contiguous, full.numel() == size() * shard.numel()).
  virtual void all_gather(const at::Tensor& shard, at::Tensor& full) = 0;
  /// shard = this rank's (rank()-th) slice of the sum over ranks of `full` (both 1-D, contiguous,
  /// full.numel() == size() * shard.numel()); `full` may be overwritten.
  virtual void reduce_scatter_sum(at::Tensor& full, at::Tensor& shard) = 0;
  /// Starts reduce_scatter_sum(full, shard) and returns without waiting for it; `full` may not be touched nor
  /// `shard` read until the returned collective's wait() returned (the caller keeps both alive until then).
  virtual std::unique_ptr<PendingCollective> start_reduce_scatter_sum(const at::Tensor& full,
                                                                      const at::Tensor& shard) = 0;
  /// bench.overlap_tp_comm: column_parallel_projections starts its input gradient's reduce-scatter before computing
  /// the weight gradients (true) or reduce-scatters after them (false); the MoE block starts the shared expert's
  /// reduce-scatter before the routed experts and waits after them (true) or waits at once (false).
  virtual bool overlap_comm() const = 0;
};

/// How a TP-sharded parameter maps onto the one-rank parameter: along `dim` the full tensor is made of blocks of
/// sizes `parts` (in order); each block is split into size() equal chunks and rank r holds chunk r of every block,
/// concatenated in block order. A plain split is one block (parts = {full size}); the fused [q | k | v] projection
/// of Gated DeltaNet is three (parts = {key_dim, key_dim, value_dim}).
struct TpShardSpec {
  int64_t dim = 0;
  std::vector<int64_t> parts;
};

/// A parameter sharded over TP and its layout.
struct TpParam {
  at::Tensor param;
  TpShardSpec spec;
};

/// The part of `full` that rank `rank` of `size` holds under `spec` (a new contiguous tensor). Throws c10::Error
/// when a block is not divisible by `size` or the blocks do not add up to full.size(spec.dim).
at::Tensor tp_local_slice(const at::Tensor& full, const TpShardSpec& spec, int64_t rank, int64_t size);

/// The one-rank tensor from every rank's `local` part (a collective over `tp`; the inverse of tp_local_slice).
at::Tensor tp_gather_param(const at::Tensor& local, const TpShardSpec& spec, TensorParallel& tp);

/// Entry of a column-parallel region under sequence parallelism (Korthikanti et al. 2022, the "g" operator):
/// x [batch, seq / T, ...] (this rank's sequence shard) -> [batch, seq, ...] (all-gather along dim 1).
/// Backward: reduce-scatter of the gradient along the sequence (the sum of the TP ranks' partial gradients).
at::Tensor gather_sequence(const at::Tensor& x, TensorParallel& tp);

/// Column-parallel projections of one sequence-parallel input (the "g" operator and the projections it feeds, as one
/// autograd function; Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication, megatron/core/tensor_parallel/layers.py):
/// x [batch, seq / T, in] (this rank's sequence shard) is all-gathered along the sequence into x_full
/// [batch, seq, in]; returns y_i = x_full W_i^T [batch, seq, out_i] for each weight W_i [out_i, in] (this rank's rows;
/// the dtype of x). Backward: dx_full = sum over i in order of dy_i W_i, reduce-scattered along the sequence into
/// x's gradient, and dW_i = dy_i^T x_full (an output without a gradient adds nothing). With tp.overlap_comm() the
/// reduce-scatter is started before the dW_i are computed and waited for after them, so it runs while they are
/// computed; without, it runs after them. The same operations either way: the same values bit for bit. Throws
/// c10::Error when a weight's input size is not x's last size, or no weight is given.
std::vector<at::Tensor> column_parallel_projections(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                                    TensorParallel& tp);

/// The projections x W_i^T of a layer's input on the whole sequence (a mixer's input projections, the shared
/// expert's gate and up projections): column_parallel_projections(x, weights, *tp) under tensor parallelism (x is
/// this rank's sequence shard [batch, seq / T, in]), else torch::linear(x, W_i) for each (x [..., in]).
std::vector<at::Tensor> project_whole_sequence(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                               TensorParallel* tp);

/// Exit of a row-parallel region under sequence parallelism (the "g-bar" operator): x [batch, seq, ...] is this
/// rank's partial sum; returns this rank's sequence shard [batch, seq / T, ...] of the sum over TP ranks.
/// Backward: all-gather of the gradient along the sequence. Throws c10::Error when seq is not divisible by T.
at::Tensor reduce_scatter_sequence(const at::Tensor& x, TensorParallel& tp);

/// A reduce_scatter_sequence whose collective is in flight (start_reduce_scatter_sequence): the caller computes
/// something independent, then wait() gives the result.
struct StartedSequenceShard {
  at::Tensor flat;                             ///< the shard, flat in [seq / T, batch, ...] order (autograd)
  std::vector<int64_t> shape;                  ///< [batch, seq / T, ...]
  at::Tensor sent;                             ///< this rank's partial sums as sent (kept until the wait)
  std::unique_ptr<PendingCollective> pending;  ///< the reduce-scatter
  /// Waits for the reduce-scatter; returns this rank's sequence shard [batch, seq / T, ...] of the sum, as
  /// reduce_scatter_sequence would have. Call once.
  at::Tensor wait();
  StartedSequenceShard() = default;
  StartedSequenceShard(StartedSequenceShard&&) = default;
  StartedSequenceShard& operator=(StartedSequenceShard&&) = default;
  /// Left without wait() (the work in between threw): waits for the collective, so that it does not outlive its
  /// buffers and the peers are not left waiting for this rank's part; a failure of it is swallowed (the first
  /// error is the one being reported).
  ~StartedSequenceShard();
};

/// reduce_scatter_sequence(x, tp) started and not waited for (bench.overlap_tp_comm: the shared expert's exit runs
/// while the routed experts compute). Backward: the same all-gather of the gradient along the sequence. Throws
/// c10::Error when seq is not divisible by T.
StartedSequenceShard start_reduce_scatter_sequence(const at::Tensor& x, TensorParallel& tp);

/// Vocab-parallel embedding (Megatron-LM's VocabParallelEmbedding) with sequence parallelism: this rank holds
/// rows [vocab_start, vocab_start + weight.size(0)) of the table. ids: int64 [batch, seq] (the same on every TP
/// rank); weight: [vocab / T, hidden]. Each rank looks up the ids of its vocabulary range (zero rows for the
/// others) and the partial embeddings are reduce-scattered along the sequence: returns [batch, seq / T, hidden].
at::Tensor vocab_parallel_embedding(const at::Tensor& ids, const at::Tensor& weight, int64_t vocab_start,
                                    TensorParallel& tp);

/// Vocab-parallel cross-entropy (Shoeybi et al. 2019, section 3): the logits of this rank's vocabulary slice
/// [vocab_start, vocab_start + logits.size(-1)) only; the full logits are never gathered. Per token: the maximum
/// logit is all-reduced (max) over TP, the sum of exp(logit - max) and the target's logit (held by one rank)
/// all-reduced (sum), nll = log(sum) - (target logit - max). Computed in fp32 (fp64 for fp64 logits).
/// logits: [N, vocab / T]; targets: int64 [N], full-vocabulary ids in [0, vocab) (give any valid id, e.g. 0, for
/// tokens that are masked out afterwards). Returns nll [N] in the compute dtype. Backward: softmax - one-hot(target)
/// on this rank's slice, times the incoming gradient (no collective).
at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits, const at::Tensor& targets, int64_t vocab_start,
                                        TensorParallel& tp);

/// Shards the one-rank model in place over `tp` (T = tp->size() ranks, sequence parallel): every rank keeps its part
/// of the initial values (so the TP run starts from the one-rank model). Column-parallel (rows split): attention
/// q_proj (query + gate, by heads), k_proj, v_proj (by KV heads); Gated DeltaNet in_proj_qkv and conv1d (the q, k,
/// v blocks each by key / value heads), in_proj_z, in_proj_b, in_proj_a, A_log, dt_bias (by value heads); shared
/// expert gate_proj, up_proj; the embedding and lm_head by vocabulary rows. Row-parallel (columns split): o_proj,
/// out_proj, shared expert down_proj. Replicated: every RMSNorm (also q_norm, k_norm and the gated norm), the
/// router, shared_expert_gate and the routed experts (those go through expert parallelism). Returns the sharded
/// parameters with their layouts. Throws c10::Error when heads, KV heads, GDN key / value heads, the shared
/// expert's FFN or the vocabulary is not divisible by T.
std::vector<TpParam> shard_tensor_parallel(Qwen35MoeForCausalLMImpl& model, std::shared_ptr<TensorParallel> tp);

}  // namespace recipebench::torch_model
