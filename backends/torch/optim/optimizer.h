// The one interface of the training loop's optimizers (MixedPrecisionAdam, DistributedAdam and the chain of them,
// optim/chained_optimizer.h), and where an optimizer's gradients live besides this rank.
#pragma once

#include <cmath>

namespace recipebench::dist {
class ProcessGroup;
}

namespace recipebench::train {

/// The groups over which an optimizer's gradients are spread beyond its own data-parallel sharding (both null on
/// one rank). Every rank of a group passes the same kind of group in the same place of its optimizer chain.
struct GradientGroups {
  /// Ranks holding partial sums of the same parameters' gradients, summed (all-reduce) before the norm: the TP
  /// ranks for the parameters replicated over TP under sequence parallel (each saw its sequence shard), the
  /// expert-data-parallel ranks for the experts (each routed its own tokens).
  dist::ProcessGroup* partial_sums = nullptr;
  /// Ranks holding other parts of the model under this optimizer (different tensors): their squared norms are
  /// summed over it. The TP ranks for the TP-sharded parameters, the EP ranks for the experts.
  dist::ProcessGroup* shards = nullptr;
};

/// How MixedPrecisionAdam computes on a CUDA device (the CPU always takes libtorch's per-tensor ops).
enum class AdamKernels {
  kFused,  ///< our multi-tensor kernels (cuda/adamw_cuda.h) where built and the parameters are BF16 or FP32
  kOps,    ///< libtorch: PyTorch's fused multi-tensor AdamW (compat.h) and per-tensor norms (bench.kernels: ops)
};

/// Use, each step: zero_grad(); start_param_gather(); for each microbatch { [begin_last_backward(chunk) before the
/// step's last backward pass of each model chunk;] backward; accumulate_grads(); } norm = grad_norm(); clip(norm);
/// step(lr). After the last step, before reading the parameters: finish_param_gather().
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// Zeros the accumulated gradients.
  virtual void zero_grad() = 0;
  /// Adds every parameter's .grad() into the optimizer's FP32 gradients and clears .grad().
  virtual void accumulate_grads() = 0;
  /// The next backward pass is model chunk `chunk`'s last of the step (pipeline/pipeline_executor.h): the gradients
  /// it accumulates are final. An optimizer that overlaps its gradient reduction with the backward pass
  /// (bench.overlap_grad_reduce, optim/distributed_adam.h) starts reducing them during it; the others do nothing.
  virtual void begin_last_backward(int chunk) { (void)chunk; }
  /// The squared global L2 norm of the accumulated gradients over every rank holding them (after the sums over
  /// the partial-sum groups). A collective over the optimizer's groups: call once per step, after the last
  /// microbatch, on every rank.
  virtual double squared_grad_norm() = 0;
  /// The global L2 norm: sqrt(squared_grad_norm()) (a collective as that).
  double grad_norm() { return std::sqrt(squared_grad_norm()); }
  /// Scales the gradients by clip_grad / (norm + 1e-6) when norm > clip_grad > 0 (optim/adam.h clip_scale).
  /// Returns the scale applied (<= 1).
  virtual double clip(double norm) = 0;
  /// One update at learning rate `lr`.
  virtual void step(double lr) = 0;
  /// An optimizer that defers its parameter all-gathers into the next step (bench.overlap_param_gather,
  /// optim/param_gather.h) launches those the last step() left pending, in the forward passes' order; each
  /// module's forward then waits for its own. Call at the start of a step, before its first forward pass, on every
  /// rank. The others do nothing.
  virtual void start_param_gather() {}
  /// Finishes every deferred parameter all-gather: the parameters then hold the last update. Call before reading
  /// the parameters outside a forward pass (a parameter dump, the run's end), on every rank. Nothing to do for the
  /// others.
  virtual void finish_param_gather() {}
};

/// The sum over `group` of every rank's `local` squared (a float64 all-reduce); `local` squared when group is null.
double sum_of_squares(dist::ProcessGroup* group, double local);

}  // namespace recipebench::train
