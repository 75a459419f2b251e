// Sparse MoE block of Qwen3.5 (docs/model.md): softmax top-k router, routed SwiGLU experts stored as
// stacked weights, one sigmoid-gated shared SwiGLU expert.
#pragma once

#include "catalog/models.h"
#include "model/basic_modules.h"
#include "model/options.h"

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace recipebench::torch_model {

struct TensorParallel;  // model/tensor_parallel.h

/// SwiGLU feed-forward (Shazeer, "GLU Variants Improve Transformer", arXiv 2002.05202):
///   down_proj(silu(gate_proj(x)) * up_proj(x)). Parameters gate_proj.weight, up_proj.weight [ffn, hidden],
///   down_proj.weight [hidden, ffn]; no biases (Hugging Face Qwen3_5MoeMLP).
struct SwiGLUImpl : torch::nn::Module {
  SwiGLUImpl(int64_t hidden, int64_t ffn);
  /// x: [..., hidden] -> [..., hidden].
  torch::Tensor forward(const torch::Tensor& x);
  /// The rest of forward from the gate and up projections of x (both [..., ffn]): down_proj(silu(gate) * up)
  /// [..., hidden] (the tensor-parallel shared expert computes its projections as column-parallel ones).
  torch::Tensor from_projections(const torch::Tensor& gate, const torch::Tensor& up);

  Projection gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(SwiGLU);

/// Routing decision of the router for N tokens.
struct Routing {
  torch::Tensor logits;   ///< [N, experts], dtype of x (router_logits, e.g. for a load-balancing loss)
  torch::Tensor weights;  ///< [N, top_k], dtype of x: top-k softmax probabilities renormalised to sum 1
  torch::Tensor indices;  ///< [N, top_k], int64 expert ids, by descending probability
};

/// Router: softmax over all experts in fp32 (fp64 for fp64 x), top-k, weights renormalised to sum to 1
/// (Hugging Face Qwen3_5MoeTopKRouter). x: [N, hidden]; router_weight: [experts, hidden].
Routing route_topk(const torch::Tensor& x, const torch::Tensor& router_weight, int64_t top_k);

/// The expert-parallel group of the MoE layers (ETP 1), implemented outside the model over a c10d group.
struct ExpertParallel {
  virtual ~ExpertParallel() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t size() const = 0;
  /// Variable-size all-to-all along dim 0: the first send_counts[0] rows of x go to rank 0, the next
  /// send_counts[1] to rank 1, ...; returns the rows received, recv_counts[r] from rank r, in rank order.
  /// Not differentiable (the MoE dispatch wraps it in an autograd function).
  virtual torch::Tensor all_to_all(const torch::Tensor& x, const std::vector<int64_t>& send_counts,
                                   const std::vector<int64_t>& recv_counts) = 0;
};

/// Where each row goes in the fixed-capacity dispatch (EpDispatch::FixedCapacity; docs/distributed.md, "Expert
/// parallelism"), on the sending side. The send buffer has P blocks of `capacity` rows, block r for EP rank r: its
/// first send[r] rows are the rows of xs (sorted by global expert) owned by rank r's experts, in their order, the
/// rest padding. All int64 / bool tensors on counts' device, computed without reading a value on the host.
struct CapacitySendPlan {
  torch::Tensor src;    ///< int64 [P * capacity]: the row of xs each slot takes (0 for a padding slot)
  torch::Tensor valid;  ///< bool [P * capacity]: the slot holds a real row
  torch::Tensor pos;    ///< int64 [rows]: the slot of each row of xs (the inverse of src on the real slots)
};

/// The send plan of `counts` (int64 [P * L], rows of xs per global expert, L experts per rank) for `rows` =
/// sum(counts) rows of xs (known on the host from xs's shape). Throws c10::Error when P or capacity < 1 or counts'
/// length is not a multiple of P. The caller guarantees sum over any rank's experts <= capacity (rows <= capacity).
CapacitySendPlan capacity_send_plan(const torch::Tensor& counts, int64_t P, int64_t capacity, int64_t rows);

/// The receiving side of the fixed-capacity dispatch: the received buffer holds P blocks of `capacity` rows, block
/// s from EP rank s, its rows sorted by local expert, got[s * L + l] of them for local expert l, then padding.
struct CapacityRecvPlan {
  torch::Tensor perm;          ///< int64 [P * capacity]: local-expert order position -> slot of the received buffer;
                               ///< the real rows by (local expert, source rank, position), the padding rows last
  torch::Tensor inv;           ///< int64 [P * capacity]: the inverse permutation of perm
  torch::Tensor local_counts;  ///< int64 [L]: real rows per local expert (sum over the source ranks)
};

/// The receive plan of `got` (int64 [P * L], on the device) for blocks of `capacity` rows. Computed on got's device
/// without reading a value on the host. Throws c10::Error when got's length is not a multiple of P.
CapacityRecvPlan capacity_recv_plan(const torch::Tensor& got, int64_t P, int64_t capacity);

/// How the routed experts' output rows are combined into their tokens (combine_slots).
enum class CombineImpl {
  Auto,  ///< the fused CUDA kernels (cuda/moe_combine_cuda.h) where they apply (BF16 on CUDA, when built), else Ops
  Ops,   ///< libtorch operations: the rows gathered into [tokens, k, hidden], weighted, summed over the slots
};

/// The combine of the routed experts: out[n] = sum_j weights[n, j] ys[inv[n k + j]], the k slots summed in slot
/// order (deterministic). ys: [tokens k, hidden], the expert outputs in sorted order; inv: int64 [tokens k], the
/// sorted position of each (token, slot); order: its inverse permutation (the ops path's backward gathers through
/// it); weights: [tokens, k] (ys's dtype). Returns [tokens, hidden], differentiable in ys and weights. Ops: BF16
/// products, summed in FP32 and rounded (at::sum); Auto on the fused kernels: FP32 products, one rounding, and the
/// same ys gradient bits as Ops. Throws c10::Error on mismatched shapes.
torch::Tensor combine_slots(const torch::Tensor& ys, const torch::Tensor& inv, const torch::Tensor& order,
                            const torch::Tensor& weights, CombineImpl impl = CombineImpl::Auto);

/// Routed SwiGLU experts with stacked weights (Hugging Face Qwen3_5MoeExperts):
///   gate_up_proj [experts, 2 * ffn, hidden] (rows 0..ffn-1: gate, ffn..2ffn-1: up), down_proj [experts, hidden, ffn].
/// Expert e maps a token x to down_proj[e] (silu(gate[e] x) * (up[e] x)).
struct RoutedExpertsImpl : torch::nn::Module {
  RoutedExpertsImpl(int64_t num_experts, int64_t hidden, int64_t ffn, ExpertsImpl impl = ExpertsImpl::Auto);

  /// out[n] = sum_j weights[n, j] * expert_{indices[n, j]}(x[n]).
  /// x: [N, hidden]; indices: int64 [N, top_k]; weights: [N, top_k] (dtype of x). Returns [N, hidden].
  /// With expert parallelism (shard()): tokens are permuted by expert, the per-expert counts exchanged with an
  /// all-to-all, the token rows sent to the ranks owning their experts, the local experts run, the results returned
  /// by the reverse all-to-all (backward: the reverse all-to-all with swapped counts) and unpermuted. Host splits:
  /// a variable-size all-to-all whose split sizes are read on the host. Fixed capacity: blocks of exactly
  /// max_tokens x top_k rows per peer (zero padding rows that contribute nothing to outputs or gradients), the counts
  /// exchanged as a device tensor; throws c10::Error when N > dispatch.max_tokens (a token would not fit).
  /// Deterministic: the permutations' backward passes gather through the inverse permutation and the combine sums
  /// the k slots of a token in slot order (no index_add / atomics). The single-rank path reads nothing on the host
  /// with ExpertsImpl::Grouped; Loop reads the per-expert row counts once (it sizes one matmul per expert), and
  /// expert parallelism with host splits reads them once for the all-to-all's split sizes (with fixed capacity it
  /// reads nothing on the host, Grouped path).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& indices, const torch::Tensor& weights);

  /// Keeps experts [rank * E / EP, (rank + 1) * E / EP) of the EP group (ETP 1): the stacked weights become the
  /// local slice (the same values as the one-rank model's); E must be divisible by EP.
  /// `dispatch`: the EP dispatcher (FixedCapacity needs dispatch.max_tokens > 0, else c10::Error).
  void shard(std::shared_ptr<ExpertParallel> group, EpDispatchOptions dispatch = {});

  torch::Tensor gate_up_proj, down_proj;
  int64_t num_experts, hidden, ffn;
  ExpertsImpl impl;
  CombineImpl combine = CombineImpl::Auto;  ///< the combine of forward (SparseMoeBlock sets it from bench.kernels)
  int64_t local_experts;  ///< experts held by this rank (num_experts without expert parallelism)
  int64_t first_expert = 0;
  std::shared_ptr<ExpertParallel> ep;  ///< null: every expert is local
  EpDispatchOptions dispatch;          ///< the EP dispatcher (set by shard)

  /// Runs the local experts on xs [rows, hidden], its rows sorted by local expert (counts: int64 [local experts],
  /// counts[l] rows for local expert l). Returns [rows, hidden]. `padded`: rows past sum(counts) are padding, their
  /// outputs and input gradients exactly zero (grouped GEMM leaves such rows unset: they are masked on the device);
  /// without it sum(counts) must equal rows.
  torch::Tensor local_ffn(const torch::Tensor& xs, const torch::Tensor& counts, bool padded = false);
};
TORCH_MODULE(RoutedExperts);

/// Sparse MoE block (Hugging Face Qwen3_5MoeSparseMoeBlock):
///   out = experts(x, route_topk(x)) + sigmoid(shared_expert_gate(x)) * shared_expert(x)
/// Parameters (Hugging Face names under "mlp."): gate.weight [experts, hidden] (the router),
/// experts.gate_up_proj, experts.down_proj (see RoutedExperts), shared_expert.{gate,up,down}_proj.weight,
/// shared_expert_gate.weight [1, hidden].
struct SparseMoeBlockImpl : torch::nn::Module {
  /// `fused_kernels` (bench.kernels): the routed experts' combine on the fused kernels where they apply
  /// (CombineImpl::Auto), else CombineImpl::Ops.
  explicit SparseMoeBlockImpl(const ModelConfig& cfg, ExpertsImpl impl = ExpertsImpl::Auto, bool fused_kernels = true);

  /// x: [batch, seq, hidden] -> [batch, seq, hidden].
  torch::Tensor forward(const torch::Tensor& x);
  /// The router's decision for x: [N, hidden] (see route_topk).
  Routing route(const torch::Tensor& x);

  Projection gate{nullptr};
  RoutedExperts experts{nullptr};
  SwiGLU shared_expert{nullptr};
  Projection shared_expert_gate{nullptr};
  int64_t top_k;
  /// Tensor parallelism with sequence parallelism (model/tensor_parallel.h); null without. With it x is this rank's
  /// sequence shard: the router and the routed experts (expert parallelism) take the shard's tokens, the shared
  /// expert runs column- / row-parallel on the gathered sequence.
  std::shared_ptr<TensorParallel> tp;
};
TORCH_MODULE(SparseMoeBlock);

}  // namespace recipebench::torch_model
