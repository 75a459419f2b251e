#include "rank/model_builder.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <unordered_map>

#include "model/moe.h"
#include "model/param_factory.h"
#include "model/param_init.h"
#include "model/qwen35_moe.h"

namespace recipebench::train {

namespace {

bool same_tensor(const torch::Tensor& a, const torch::Tensor& b) {
  return a.unsafeGetTensorImpl() == b.unsafeGetTensorImpl();
}

/// The pipeline rank holding each parameter of the one-rank model, in its parameters() order: the embedding on
/// the first, each decoder layer where the rank map puts it, the final norm and lm_head on the last; -1 for a layer
/// no rank holds (an emulated rank's stage cut by --layers, layout/rank_map.h keep_stage_layers).
std::vector<ParamInfo> param_stages(torch_model::Qwen35MoeForCausalLM& model, const RankMap& map) {
  const int last = map.pp - 1;
  std::vector<int> layer_stage(model->model->decoder_layers.size(), -1);
  for (const auto& q : map.ranks)
    for (const auto& lr : q.layers)
      for (int64_t i = lr.first; i < lr.first + lr.count; ++i) layer_stage[static_cast<size_t>(i)] = q.pp;
  std::unordered_map<const void*, int> owner;  // TensorImpl -> pipeline rank; absent: norm, lm_head (last)
  for (const auto& p : model->model->embed_tokens->parameters()) owner[p.unsafeGetTensorImpl()] = 0;
  for (size_t i = 0; i < model->model->decoder_layers.size(); ++i)
    for (const auto& p : model->model->decoder_layers[i]->parameters()) owner[p.unsafeGetTensorImpl()] = layer_stage[i];
  std::vector<ParamInfo> info;
  for (const auto& np : model->named_parameters()) {
    const auto it = owner.find(np.value().unsafeGetTensorImpl());
    info.push_back({np.key(), np.value().sizes().vec(), it == owner.end() ? last : it->second});
  }
  return info;
}

/// The rank and size of a group, without collectives: the layout of shards on the meta device.
struct ShapeOnlyTp : torch_model::TensorParallel {
  ShapeOnlyTp(int64_t r, int64_t s) : r_(r), s_(s) {}
  int64_t rank() const override { return r_; }
  int64_t size() const override { return s_; }
  void all_reduce_sum(at::Tensor&) override { fail(); }
  void all_reduce_max(at::Tensor&) override { fail(); }
  void all_gather(const at::Tensor&, at::Tensor&) override { fail(); }
  void reduce_scatter_sum(at::Tensor&, at::Tensor&) override { fail(); }
  std::unique_ptr<torch_model::PendingCollective> start_reduce_scatter_sum(const at::Tensor&,
                                                                           const at::Tensor&) override {
    fail();
  }
  bool overlap_comm() const override { return false; }
  [[noreturn]] static void fail() { TORCH_CHECK(false, "a model built for its shapes runs no collective"); }
  int64_t r_, s_;
};

struct ShapeOnlyEp : torch_model::ExpertParallel {
  ShapeOnlyEp(int64_t r, int64_t s) : r_(r), s_(s) {}
  int64_t rank() const override { return r_; }
  int64_t size() const override { return s_; }
  torch::Tensor all_to_all(const torch::Tensor&, const std::vector<int64_t>&, const std::vector<int64_t>&) override {
    ShapeOnlyTp::fail();
  }
  int64_t r_, s_;
};

/// The groups a rank's shards are cut by: `tp` null when TP = 1, `ep` null when EP = 1.
struct Cut {
  std::shared_ptr<torch_model::TensorParallel> tp;
  std::shared_ptr<torch_model::ExpertParallel> ep;
};

/// The one-rank model on the meta device, cut to rank `me`'s part: TP shards, its pipeline stage, its experts.
/// Fills everything of `out` but the device tensors and the groups.
void cut_on_meta(const ModelConfig& cfg, const torch_model::KernelOptions& kernels,
                 const torch_model::EpDispatchOptions& dispatch, const RankMap& map, const RankPlacement& me,
                 const Cut& cut, RankModel& out) {
  torch_model::MetaParams meta;
  torch_model::Qwen35MoeForCausalLM model(cfg, kernels);
  out.param_info = param_stages(model, map);
  std::unordered_map<const void*, std::string> names;  // TensorImpl -> global name (kept through set_)
  for (const auto& np : model->named_parameters()) names[np.value().unsafeGetTensorImpl()] = np.key();
  if (cut.tp) out.tp_params = torch_model::shard_tensor_parallel(*model, cut.tp);
  std::vector<torch_model::ChunkLayers> chunks;
  for (const auto& lr : me.layers) chunks.push_back({lr.first, lr.count});
  out.stage = torch_model::PipelineStage(model, chunks, me.pp == 0, me.pp == map.pp - 1);
  // Expert parallelism (ETP 1): each EP rank of a stage holds E / EP experts per MoE layer; the expert-data-parallel
  // groups join the stage's ranks holding the same experts (EDP = world / (EP x PP)). With TP > 1 the experts are
  // apart from the dense parameters even with EP = 1 (the TP ranks route different tokens: EDP spans them).
  for (const auto& mod : out.stage->modules())
    if (auto experts = std::dynamic_pointer_cast<torch_model::RoutedExpertsImpl>(mod)) {
      if (cut.ep) experts->shard(cut.ep, dispatch);
      if (map.ep > 1 || map.tp > 1) {
        out.expert_params.push_back(experts->gate_up_proj);
        out.expert_params.push_back(experts->down_proj);
      }
    }
  std::unordered_map<const void*, bool> mine;
  for (const auto& p : out.stage->parameters()) {
    out.stage_param_names.push_back(names.at(p.unsafeGetTensorImpl()));
    mine[p.unsafeGetTensorImpl()] = true;
  }
  std::vector<torch_model::TpParam> kept;  // the other stages' TP shards are dropped with the one-rank model
  for (auto& t : out.tp_params)
    if (mine.count(t.param.unsafeGetTensorImpl())) kept.push_back(std::move(t));
  out.tp_params = std::move(kept);
}

/// Allocates every parameter of the stage on `device` in `dtype` and fills it with its shard of the global values
/// (docs/initialization.md); the parameters keep their identity (the same TensorImpl, now holding device memory).
void materialize(RankModel& out, const Cut& cut, uint64_t seed, c10::Device device, c10::ScalarType dtype) {
  std::unordered_map<const void*, int64_t> first_expert;
  for (const auto& mod : out.stage->modules())
    if (auto e = std::dynamic_pointer_cast<torch_model::RoutedExpertsImpl>(mod)) {
      first_expert[e->gate_up_proj.unsafeGetTensorImpl()] = e->first_expert;
      first_expert[e->down_proj.unsafeGetTensorImpl()] = e->first_expert;
    }
  std::unordered_map<std::string, const ParamInfo*> info;
  for (const auto& i : out.param_info) info[i.name] = &i;
  const auto params = out.stage->parameters();
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    auto p = params[i];
    const ParamInfo& g = *info.at(out.stage_param_names[i]);
    torch_model::ShardPlacement where;
    if (const auto it = first_expert.find(p.unsafeGetTensorImpl()); it != first_expert.end())
      where.expert_offset = it->second;
    if (const auto* spec = out.tp_spec(p)) {
      where.tp_sharded = true;
      where.tp = *spec;
      where.tp_rank = cut.tp->rank();
      where.tp_size = cut.tp->size();
    }
    auto local = torch::empty(p.sizes(), torch::TensorOptions().device(device).dtype(dtype));
    torch_model::init_shard(local, seed, g.name, g.shape, where);
    // The meta parameter becomes the device tensor in place (what Module::to does through set_data, whose
    // type check refuses meta -> dense in libtorch 1.13): module members, the module's parameter list and
    // tp_params / expert_params all hold this TensorImpl.
    p.unsafeGetTensorImpl()->shallow_copy_from(local.getIntrusivePtr());
    TORCH_CHECK(p.device() == device && p.scalar_type() == dtype, "init: ", g.name, " not materialized");
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

RankModel build_rank_model(const ModelConfig& cfg, const torch_model::KernelOptions& kernels,
                           const ModelParallelConfig& parallel, uint64_t seed, const RunContext& ctx) {
  RankModel out;
  Cut cut;
  if (ctx.map.tp > 1)
    cut.tp = out.tp = std::make_shared<dist::GroupTensorParallel>(*ctx.groups.tp, parallel.overlap_tp_comm);
  if (ctx.map.ep > 1) cut.ep = out.ep = std::make_shared<dist::GroupExpertParallel>(*ctx.groups.ep);
  cut_on_meta(cfg, kernels, parallel.ep_dispatch, ctx.map, ctx.me, cut, out);
  materialize(out, cut, seed, ctx.device, ctx.dtype);
  out.stage->train();
  return out;
}

RankModel build_rank_shapes(const ModelConfig& cfg, const RankMap& map, const RankPlacement& me) {
  RankModel out;
  Cut cut;
  if (map.tp > 1) cut.tp = std::make_shared<ShapeOnlyTp>(me.tp, map.tp);
  if (map.ep > 1) cut.ep = std::make_shared<ShapeOnlyEp>(me.ep, map.ep);
  cut_on_meta(cfg, {}, {}, map, me, cut, out);
  return out;
}

}  // namespace recipebench::train
