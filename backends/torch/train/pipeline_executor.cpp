#include "train/pipeline_executor.h"

#include <torch/torch.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <utility>

#include "dist/process_group.h"
#include "model/tensor_parallel.h"
#include "train/pipeline_schedule.h"

namespace recipebench::train {

torch::Tensor run_pipeline_step(torch_model::PipelineStage& stage, const std::vector<PipelineMicrobatch>& microbatches,
                                const PipelinePlace& place, double denom, const std::function<void()>& after_backward,
                                const std::function<void(bool)>& lap) {
  const int pp = place.pp, vpp = place.vpp;
  const int64_t m_count = static_cast<int64_t>(microbatches.size());
  if (stage->num_chunks() != vpp)
    throw std::invalid_argument("pipeline step: the stage holds " + std::to_string(stage->num_chunks()) +
                                " model chunks, the layout has VPP " + std::to_string(vpp));
  if (pp > 1 && (!place.group || static_cast<int>(place.stage_ranks.size()) != pp))
    throw std::invalid_argument("pipeline step: PP " + std::to_string(pp) + " needs a group and " +
                                std::to_string(pp) + " stage ranks");
  const int64_t stages = int64_t{pp} * vpp;
  auto rank_of = [&](int64_t global_stage) { return place.stage_ranks[static_cast<size_t>(global_stage % pp)]; };
  auto tag = [&](int64_t m, int64_t receiving_stage, bool gradient) {
    return static_cast<int>(2 * (m * stages + receiving_stage) + (gradient ? 1 : 0));
  };
  const auto param = stage->parameters().front();
  const auto act_options = torch::TensorOptions().dtype(param.scalar_type()).device(param.device());
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(param.device()));

  struct Live {
    torch::Tensor input;   ///< received hidden states (a leaf that requires grad); undefined on the embedding chunk
    torch::Tensor output;  ///< the hidden states sent on, or the loss sum / denom on the last stage
  };
  std::map<std::pair<int64_t, int>, Live> live;
  // The group of a send or receive between global stages `from` and `to` (pipeline_executor.h: PipelinePlace::p2p).
  auto link = [&](bool gradient, int64_t from, int64_t to) {
    dist::ProcessGroup* g = place.p2p[gradient ? 1 : 0][to % pp > from % pp ? 0 : 1];
    return g ? g : place.group;
  };
  std::vector<std::unique_ptr<dist::ProcessGroup::Request>> sends;  // waited for at the end of the step

  for (const PipelineAction& a : pipeline_schedule(pp, vpp, place.stage, m_count)) {
    const auto& mb = microbatches[static_cast<size_t>(a.microbatch)];
    const int64_t g = int64_t{a.chunk} * pp + place.stage;  // this pass's global stage
    const auto key = std::make_pair(a.microbatch, a.chunk);
    if (a.kind == PipelineAction::Kind::Forward) {
      Live l;
      torch::Tensor x = mb.ids;
      if (!stage->takes_ids(a.chunk)) {
        // Sequence parallel: the hidden states between stages are this rank's sequence shard.
        const int64_t seq = mb.ids.size(1) / (stage->tp ? stage->tp->size() : 1);
        x = torch::empty({mb.ids.size(0), seq, stage->hidden_size}, act_options);
        link(false, g - 1, g)->irecv(x, rank_of(g - 1), tag(a.microbatch, g, false))->wait();
        x.requires_grad_(true);
        l.input = x;
      }
      auto y = stage->forward(a.chunk, x);
      if (stage->has_head(a.chunk)) {
        const auto s = stage->loss_sum(y, mb.ids, mb.mask);
        // Per-token normalisation over the whole step: each microbatch's sum divided by the step's count.
        l.output = s.sum / denom;
        loss_sum += s.sum.detach().to(torch::kFloat64);
      } else {
        sends.push_back(link(false, g, g + 1)->isend(y.detach(), rank_of(g + 1), tag(a.microbatch, g + 1, false)));
        l.output = y;
      }
      live.emplace(key, std::move(l));
      if (lap) lap(false);
    } else {
      auto it = live.find(key);
      if (it == live.end())
        throw std::logic_error("pipeline step: backward of microbatch " + std::to_string(a.microbatch) +
                               " chunk " + std::to_string(a.chunk) + " before its forward");
      Live l = std::move(it->second);
      live.erase(it);
      if (stage->has_head(a.chunk)) {
        l.output.backward();
      } else {
        auto grad = torch::empty_like(l.output, torch::MemoryFormat::Contiguous);
        link(true, g + 1, g)->irecv(grad, rank_of(g + 1), tag(a.microbatch, g, true))->wait();
        l.output.backward(grad);
      }
      if (l.input.defined()) {
        auto dx = l.input.grad();
        if (!dx.defined()) dx = torch::zeros_like(l.input);  // the chunk's output did not depend on its input
        sends.push_back(link(true, g, g - 1)->isend(dx, rank_of(g - 1), tag(a.microbatch, g - 1, true)));
      }
      if (after_backward) after_backward();
      if (lap) lap(true);
    }
  }
  for (auto& s : sends) s->wait();
  return loss_sum.cpu();
}

}  // namespace recipebench::train
