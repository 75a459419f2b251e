#include "rank/run_context.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "plan/memory_plan.h"
#include "rank/device.h"

#ifdef RECIPEBENCH_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace recipebench::train {

c10::ScalarType compute_dtype(const std::string& precision, c10::Device device) {
  switch (torch_compute_bytes(precision, device.is_cuda())) {
    case 2:
      return c10::kBFloat16;
    case 4:
      return c10::kFloat;
    case 8:
      return c10::kDouble;
    default:
      throw RunError("workload.precision " + precision + ": the torch backend computes in bf16, fp32 or fp64");
  }
}

void RunContext::synchronize() const { train::synchronize(device); }

void RunContext::barrier() const {
  if (group) group->barrier();
}

int64_t RunContext::max_over_ranks(int64_t v) const {
  if (!group) return v;
  auto t = torch::tensor({v}, torch::kInt64);
  group->all_reduce_max(t);
  return t.item<int64_t>();
}

std::vector<int64_t> RunContext::gather_over_ranks(int64_t v) const {
  if (!group) return {v};
  auto t = torch::zeros({world}, torch::kInt64);  // each rank fills its slot; the sum gathers them
  t[rank] = v;
  group->all_reduce_sum(t);
  if (emulated()) return {v};  // the stand-in's sum is no gathering: only this rank's value is known
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + world);
}

void RunContext::finish() {
  synchronize();
  for (auto& g : groups.owned) g->finish();
  if (group) group->finish();
}

RunContext open_run(const Recipe& recipe, const RunOptions& o) {
  RunContext ctx;
  ctx.device = rank_device(o);
  ctx.rank = o.place.rank;
  ctx.world = o.place.world;
#ifdef RECIPEBENCH_TORCH_CUDA
  if (ctx.device.is_cuda()) c10::cuda::set_device(ctx.device.index());
#endif
  ctx.dtype = compute_dtype(recipe.workload.precision, ctx.device);
  if (o.settings.emulate_rank) {
    ctx.group = dist::ProcessGroup::make_stand_in(o.place.rank, o.place.world);
    return ctx;
  }
  if (o.place.world == 1) return ctx;
  try {
    // NCCL between the GPUs of a CUDA run (one GPU per rank), Gloo between CPU ranks.
    const bool cuda = ctx.device.is_cuda();
    ctx.group = std::make_unique<dist::ProcessGroup>(
        o.place.rank, o.place.world, o.place.master_addr, o.place.master_port,
        std::chrono::seconds(o.place.dist_timeout_seconds), cuda ? dist::Transport::kNccl : dist::Transport::kGloo,
        cuda ? ctx.device.index() : -1);
  } catch (const std::exception& e) {
    throw RunError("rank " + std::to_string(o.place.rank) + ": rendezvous with rank 0 at " + o.place.master_addr + ":" +
                   std::to_string(o.place.master_port) + " failed: " + e.what());
  }
  return ctx;
}

void place_rank(RunContext& ctx, const RankMap& map, const ParallelConfig& config) {
  ctx.map = map;
  if (config.emulated_stage_layers) {
    try {
      keep_stage_layers(ctx.map, ctx.map.ranks.at(static_cast<size_t>(ctx.rank)).pp, *config.emulated_stage_layers);
    } catch (const std::invalid_argument& e) {
      throw RunError(std::string("--layers with --emulate-rank: ") + e.what());
    }
  }
  if (ctx.map.world != ctx.world)
    throw RunError("the rank map has " + std::to_string(ctx.map.world) + " ranks, the run " +
                   std::to_string(ctx.world));
  ctx.me = ctx.map.ranks[static_cast<size_t>(ctx.rank)];
  // The layout's groups from its rank map (TP fastest; the expert grid with ETP 1: TP folded into EP).
  if (ctx.group) ctx.groups = dist::make_layout_groups(*ctx.group, ctx.map, config.grad_reduce_groups);
  ctx.place.pp = ctx.map.pp;
  ctx.place.vpp = ctx.map.vpp;
  ctx.place.stage = ctx.me.pp;
  ctx.place.stage_ranks = group_members(ctx.map, ctx.rank, GroupKind::kPp);
  ctx.place.group = ctx.group.get();
  ctx.place.links = ctx.groups.links;
  ctx.place.overlap_p2p_comm = config.overlap_p2p_comm;
}

}  // namespace recipebench::train
