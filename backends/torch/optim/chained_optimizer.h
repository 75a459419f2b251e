// The optimizers of one rank's parameters chained behind the one Optimizer interface (as Megatron-Core's
// ChainedOptimizer): dense and expert parameters, TP-replicated and TP-sharded ones, each in its own optimizer.
#pragma once

#include <memory>
#include <vector>

#include "optim/optimizer.h"

namespace recipebench::train {

/// The members update disjoint sets of parameters. The gradient norm is the norm of all of them together, over the
/// whole model: sqrt(sum over the pipeline stages of (sqrt(sum of the members' squared norms))^2); every member
/// clips with that norm, so the step is the one-rank run's.
class ChainedOptimizer : public Optimizer {
 public:
  /// `members`: in the same order on every rank (their collectives run in this order). `stages`: this rank's
  /// pipeline (the other stages hold the other parameters), null when PP = 1.
  ChainedOptimizer(std::vector<std::unique_ptr<Optimizer>> members, dist::ProcessGroup* stages);

  void zero_grad() override;
  void accumulate_grads() override;
  void begin_last_backward(int chunk) override;
  /// The members' squared norms summed (this pipeline stage), then summed over the pipeline's stages.
  double squared_grad_norm() override;
  double clip(double norm) override;
  void step(double lr) override;
  void start_param_gather() override;
  void finish_param_gather() override;

 private:
  std::vector<std::unique_ptr<Optimizer>> members_;
  dist::ProcessGroup* stages_;
};

}  // namespace recipebench::train
