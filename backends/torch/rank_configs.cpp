#include "rank_configs.h"

#include "backend_support.h"
#include "layout/rank_map.h"

namespace recipebench::torch_backend {

RankConfigs rank_configs(const Recipe& recipe, const RunSettings& s) {
  RankConfigs c;
  c.parallel.grad_reduce_groups = s.overlap_grad_reduce;
  c.parallel.overlap_p2p_comm = s.overlap_p2p_comm;
  c.parallel.emulated_stage_layers = s.emulated_stage_layers;
  c.kernels.recompute = recompute_options(recipe.layout);
  c.kernels.fused_kernels = s.kernels == Kernels::kFused;
  c.model_parallel.ep_dispatch.mode = s.ep_dispatch == EpDispatch::kFixedCapacity
                                          ? torch_model::EpDispatch::FixedCapacity
                                          : torch_model::EpDispatch::HostSplits;
  c.model_parallel.ep_dispatch.max_tokens = ep_capacity_tokens(recipe.layout);
  c.model_parallel.overlap_tp_comm = s.overlap_tp_comm;
  c.optimizer.reduce = {s.overlap_grad_reduce, s.grad_reduce_bucket_elements};
  c.optimizer.overlap_param_gather = s.overlap_param_gather;
  c.optimizer.kernels = c.kernels.fused_kernels ? train::AdamKernels::kFused : train::AdamKernels::kOps;
  return c;
}

}  // namespace recipebench::torch_backend
