#include "train/model_builder.h"

#include <torch/torch.h>

#include <unordered_map>

#include "model/moe.h"
#include "model/qwen35_moe.h"

namespace recipebench::train {

namespace {

bool same_tensor(const torch::Tensor& a, const torch::Tensor& b) {
  return a.unsafeGetTensorImpl() == b.unsafeGetTensorImpl();
}

/// The pipeline rank holding each parameter of the one-rank model, in its parameters() order: the embedding on
/// the first, each decoder layer where the rank map puts it, the final norm and lm_head on the last.
std::vector<ParamInfo> param_stages(torch_model::Qwen35MoeForCausalLM& model, const RankMap& map) {
  const int last = map.pp - 1;
  std::vector<int> layer_stage(model->model->decoder_layers.size(), last);
  for (const auto& q : map.ranks)
    for (const auto& lr : q.layers)
      for (int64_t i = lr.first; i < lr.first + lr.count; ++i) layer_stage[static_cast<size_t>(i)] = q.pp;
  std::unordered_map<const void*, int> owner;  // TensorImpl -> pipeline rank; absent: norm, lm_head (last)
  for (const auto& p : model->model->embed_tokens->parameters()) owner[p.unsafeGetTensorImpl()] = 0;
  for (size_t i = 0; i < model->model->decoder_layers.size(); ++i)
    for (const auto& p : model->model->decoder_layers[i]->parameters()) owner[p.unsafeGetTensorImpl()] = layer_stage[i];
  std::vector<ParamInfo> info;
  for (const auto& p : model->parameters()) {
    const auto it = owner.find(p.unsafeGetTensorImpl());
    info.push_back({p.sizes().vec(), it == owner.end() ? last : it->second});
  }
  return info;
}

/// Tensor parallelism with sequence parallel: every TP rank keeps its part of the one-rank model's values.
void shard_tensor_parallel(torch_model::Qwen35MoeForCausalLM& model, const RunContext& ctx, RankModel& out) {
  if (ctx.map.tp <= 1) return;
  out.tp = std::make_shared<dist::GroupTensorParallel>(*ctx.groups.tp);
  out.tp_params = torch_model::shard_tensor_parallel(*model, out.tp);
}

/// This rank's pipeline stage: the layers of its virtual stages.
torch_model::PipelineStage take_stage(const torch_model::Qwen35MoeForCausalLM& model, const RunContext& ctx) {
  std::vector<torch_model::ChunkLayers> chunks;
  for (const auto& lr : ctx.me.layers) chunks.push_back({lr.first, lr.count});
  return torch_model::PipelineStage(model, chunks, ctx.me.pp == 0, ctx.me.pp == ctx.map.pp - 1);
}

/// Expert parallelism (ETP 1): EP groups of EP ranks of a stage, each holding E / EP experts per MoE layer; the
/// expert-data-parallel groups join the stage's ranks holding the same experts (EDP = world / (EP x PP)). With
/// TP > 1 the experts are apart from the dense parameters even with EP = 1 (the TP ranks route different tokens:
/// EDP spans them).
void shard_experts(const RunContext& ctx, RankModel& out) {
  if (ctx.map.ep > 1) out.ep = std::make_shared<dist::GroupExpertParallel>(*ctx.groups.ep);
  if (ctx.map.ep == 1 && ctx.map.tp == 1) return;
  for (const auto& mod : out.stage->modules())
    if (auto experts = std::dynamic_pointer_cast<torch_model::RoutedExpertsImpl>(mod)) {
      if (out.ep) experts->shard(out.ep);
      out.expert_params.push_back(experts->gate_up_proj);
      out.expert_params.push_back(experts->down_proj);
    }
}

}  // namespace

bool RankModel::is_expert(const torch::Tensor& p) const {
  for (const auto& e : expert_params)
    if (same_tensor(e, p)) return true;
  return false;
}

const torch_model::TpShardSpec* RankModel::tp_spec(const torch::Tensor& p) const {
  for (const auto& s : tp_params)
    if (same_tensor(s.param, p)) return &s.spec;
  return nullptr;
}

RankModel build_rank_model(const ModelConfig& cfg, const torch_model::KernelOptions& kernels, uint64_t seed,
                           const RunContext& ctx) {
  RankModel out;
  torch::manual_seed(seed);
  {
    torch_model::Qwen35MoeForCausalLM model(cfg, kernels);
    out.param_info = param_stages(model, ctx.map);
    shard_tensor_parallel(model, ctx, out);
    out.stage = take_stage(model, ctx);
  }  // the other stages' layers are freed here
  shard_experts(ctx, out);
  out.stage->to(ctx.device, ctx.dtype);
  out.stage->train();
  return out;
}

}  // namespace recipebench::train
