#include "train/param_dump.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <fstream>

namespace recipebench::train {

namespace {

/// This rank's parameter `p` as the one-rank tensor: float64 on the CPU (exact for every compute dtype), its EP and TP shards gathered.
torch::Tensor whole_parameter(const torch::Tensor& p, const RankModel& model) {
  torch::Tensor c = p.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  if (model.ep && model.is_expert(p)) {
    auto full = torch::empty({c.numel() * model.ep->size()}, c.options());
    model.ep->group.all_gather(c.reshape({-1}), full);
    c = full;
  }
  if (model.tp)
    if (const auto* spec = model.tp_spec(p)) c = torch_model::tp_gather_param(c, *spec, *model.tp).contiguous();
  return c;
}

}  // namespace

void dump_parameters(const std::string& path, const RankModel& model, const RunContext& ctx) {
  std::ofstream out, names;
  if (ctx.rank == 0) {
    out.open(path, std::ios::binary);
    names.open(path + ".names");
  }
  const auto mine = model.stage->parameters();  // this stage's part of param_info, in the same order
  size_t next = 0;
  for (size_t i = 0; i < model.param_info.size(); ++i) {
    const int owner = model.param_info[i].stage;
    if (owner < 0) continue;  // a layer no rank holds (an emulated rank's cut stage)
    const int src = ctx.place.stage_ranks[static_cast<size_t>(owner)];  // rank 0's pipeline, for rank 0
    torch::Tensor c;
    if (owner == ctx.me.pp) {
      c = whole_parameter(mine.at(next++), model);
      if (ctx.me.dp == 0 && ctx.me.tp == 0 && ctx.rank != 0) ctx.group->isend(c, 0, static_cast<int>(i))->wait();
    } else if (ctx.rank == 0) {
      c = torch::empty(model.param_info[i].shape, torch::kFloat64);
      ctx.group->irecv(c, src, static_cast<int>(i))->wait();
    }
    if (ctx.rank == 0) {
      names << model.param_info[i].name << ' ' << c.numel() << '\n';
      out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * sizeof(double)));
    }
  }
  if (next != mine.size())
    throw RunError("dump_params: the stage has " + std::to_string(mine.size()) +
                   " parameters, the one-rank model's map gives it " + std::to_string(next));
  if (ctx.rank == 0 && (!out || !names)) throw RunError("dump_params: cannot write " + path + " or its .names");
}

}  // namespace recipebench::train
