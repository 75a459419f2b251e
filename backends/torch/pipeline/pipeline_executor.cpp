#include "pipeline/pipeline_executor.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <utility>

#include "dist/comm_clock.h"
#include "dist/process_group.h"
#include "model/component_timer.h"
#include "model/tensor_parallel.h"
#include "schedule/pipeline_receives.h"
#include "schedule/pipeline_schedule.h"

namespace recipebench::train {

namespace {

/// One step of the pipeline schedule on this rank: the passes' state between a microbatch's forward and its
/// backward, the sends in flight and the loss sum.
class PipelineStepRun {
 public:
  PipelineStepRun(torch_model::PipelineStage& stage, const std::vector<PipelineMicrobatch>& microbatches,
                  const PipelinePlace& place, double denom, const std::vector<PipelineAction>& schedule)
      : stage_(stage),
        microbatches_(microbatches),
        place_(place),
        denom_(denom),
        stood_in_(place.group && place.group->transport() == dist::Transport::kStandIn),
        schedule_(schedule) {
    const auto param = stage->parameters().front();
    act_options_ = torch::TensorOptions().dtype(param.scalar_type()).device(param.device());
    loss_sum_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(param.device()));
    if (place.overlap_p2p_comm && place.pp > 1)
      for (const auto& r : pipeline_receive_plan(place.pp, place.vpp, place.stage,
                                                 static_cast<int64_t>(microbatches.size()), kPipelineReceivesAhead))
        if (r.ahead) due_after_[r.post_after].push_back(r);  // the others: posted by their own pass
  }

  /// Forward pass of chunk a.chunk on microbatch a.microbatch: takes the ids (embedding chunk) or receives the
  /// hidden states from the previous global stage; sends its output on, or (last stage) adds its loss.
  void forward(const PipelineAction& a, int64_t i) {
    const auto& mb = microbatches_[static_cast<size_t>(a.microbatch)];
    const int64_t g = global_stage(a);
    Live l;
    torch::Tensor x = mb.ids;
    if (!stage_->takes_ids(a.chunk)) {
      {
        const dist::CommWait wait(dist::CommKind::kPipeline);
        x = posted_input(i);
        if (!x.defined()) {
          x = hidden_buffer(a.microbatch);
          start_receive(a, false, x)->wait();
        }
      }
      x.requires_grad_(true);
      l.input = x;
    }
    post_due(i);
    auto y = stage_->forward(a.chunk, x);
    if (stage_->has_head(a.chunk)) {
      const auto s = stage_->loss_sum(y, mb.ids, mb.mask);
      // Per-token normalisation over the whole step: each microbatch's sum divided by the step's count.
      l.output = s.sum / denom_;
      loss_sum_ += s.sum.detach().to(torch::kFloat64);
    } else {
      sends_.push_back(link(false, g, g + 1)->isend(y.detach(), rank_of(g + 1), tag(a.microbatch, g + 1, false)));
      l.output = y;
    }
    live_.emplace(std::make_pair(a.microbatch, a.chunk), std::move(l));
  }

  /// Backward pass of chunk a.chunk on microbatch a.microbatch: from the loss (last stage) or the output gradient
  /// received from the next global stage; sends its input's gradient to the previous stage.
  void backward(const PipelineAction& a, int64_t i) {
    const int64_t g = global_stage(a);
    auto it = live_.find(std::make_pair(a.microbatch, a.chunk));
    if (it == live_.end())
      throw std::logic_error("pipeline step: backward of microbatch " + std::to_string(a.microbatch) + " chunk " +
                             std::to_string(a.chunk) + " before its forward");
    Live l = std::move(it->second);
    live_.erase(it);
    if (stage_->has_head(a.chunk)) {
      l.output.backward();
    } else {
      torch::Tensor grad;
      {
        const dist::CommWait wait(dist::CommKind::kPipeline);
        grad = posted_input(i);
        if (!grad.defined()) {
          grad = torch::empty_like(l.output, torch::MemoryFormat::Contiguous);
          start_receive(a, true, grad)->wait();
        } else if (grad.sizes() != l.output.sizes() || grad.scalar_type() != l.output.scalar_type()) {
          throw std::logic_error("pipeline step: the output gradient received ahead for microbatch " +
                                 std::to_string(a.microbatch) + " chunk " + std::to_string(a.chunk) +
                                 " does not match the output's shape or dtype");
        }
        if (stood_in_) grad.mul_(1.0 / denom_);  // the stand-in's N(0, 1) at the loss's scale
      }
      post_due(i);
      l.output.backward(grad);
    }
    if (l.input.defined()) {
      auto dx = l.input.grad();
      if (!dx.defined()) dx = torch::zeros_like(l.input);  // the chunk's output did not depend on its input
      sends_.push_back(link(true, g, g - 1)->isend(dx, rank_of(g - 1), tag(a.microbatch, g - 1, true)));
    }
  }

  /// Waits for the sends in flight and returns the loss sum (fp64 scalar on the stage's device: no host
  /// synchronisation here, the caller reads it after the optimizer's gradient norm).
  torch::Tensor finish() {
    if (!posted_.empty()) throw std::logic_error("pipeline step: a receive posted ahead was never waited for");
    if (!sends_.empty()) {
      const dist::CommWait wait(dist::CommKind::kPipeline);
      for (auto& s : sends_) s->wait();
    }
    return loss_sum_;
  }

 private:
  /// A receive posted ahead: its buffer and the request to wait for.
  struct Posted {
    torch::Tensor buffer;
    std::unique_ptr<dist::ProcessGroup::Request> request;
  };

  /// Starts receiving the input of pass `a` into `into`: its hidden states from the previous global stage, or
  /// (gradient) its output's gradient from the next one.
  std::unique_ptr<dist::ProcessGroup::Request> start_receive(const PipelineAction& a, bool gradient,
                                                             torch::Tensor& into) {
    const int64_t g = global_stage(a), from = gradient ? g + 1 : g - 1;
    return link(gradient, from, g)->irecv(into, rank_of(from), tag(a.microbatch, g, gradient));
  }

  /// The hidden states' shape between stages for microbatch m (sequence parallel: this rank's sequence shard).
  torch::Tensor hidden_buffer(int64_t m) const {
    const auto& ids = microbatches_[static_cast<size_t>(m)].ids;
    const int64_t seq = ids.size(1) / (stage_->tp ? stage_->tp->size() : 1);
    return torch::empty({ids.size(0), seq, stage_->hidden_size}, act_options_);
  }

  /// Posts the receives due after the wait of schedule[i]'s input, each into a buffer allocated now.
  void post_due(int64_t i) {
    auto it = due_after_.find(i);
    if (it == due_after_.end()) return;
    for (const auto& r : it->second) {
      const PipelineAction& a = schedule_[static_cast<size_t>(r.action)];
      Posted p{hidden_buffer(a.microbatch), nullptr};
      p.request = start_receive(a, r.gradient, p.buffer);
      posted_.emplace(r.action, std::move(p));
    }
    due_after_.erase(it);
  }

  /// The input of schedule[i] received ahead, waited for now; undefined when none was posted.
  torch::Tensor posted_input(int64_t i) {
    auto it = posted_.find(i);
    if (it == posted_.end()) return {};
    it->second.request->wait();
    torch::Tensor t = std::move(it->second.buffer);
    posted_.erase(it);
    return t;
  }

  struct Live {
    torch::Tensor input;   ///< received hidden states (a leaf that requires grad); undefined on the embedding chunk
    torch::Tensor output;  ///< the hidden states sent on, or the loss sum / denom on the last stage
  };

  int64_t global_stage(const PipelineAction& a) const { return int64_t{a.chunk} * place_.pp + place_.stage; }
  int rank_of(int64_t global_stage) const { return place_.stage_ranks[static_cast<size_t>(global_stage % place_.pp)]; }
  int tag(int64_t m, int64_t receiving_stage, bool gradient) const {
    const int64_t stages = int64_t{place_.pp} * place_.vpp;
    return static_cast<int>(2 * (m * stages + receiving_stage) + (gradient ? 1 : 0));
  }
  /// The group of a send or receive between global stages `from` and `to` (PipelinePlace::links).
  dist::ProcessGroup* link(bool gradient, int64_t from, int64_t to) const {
    dist::ProcessGroup* g = place_.links.of(gradient, to % place_.pp > from % place_.pp);
    return g ? g : place_.group;
  }

  torch_model::PipelineStage& stage_;
  const std::vector<PipelineMicrobatch>& microbatches_;
  const PipelinePlace& place_;
  const double denom_;
  /// An emulated rank (docs/emulation.md): the stand-in's receives are standard normal, so a received output
  /// gradient is scaled by 1 / denom on arrival, the scale of a hidden state's gradient of the step's mean loss
  /// (N(0, 1) gradients overflow BF16 after a few layers' backward).
  const bool stood_in_;
  const std::vector<PipelineAction>& schedule_;
  torch::TensorOptions act_options_;
  torch::Tensor loss_sum_;
  std::map<std::pair<int64_t, int>, Live> live_;
  std::vector<std::unique_ptr<dist::ProcessGroup::Request>> sends_;  // waited for at the end of the step
  std::map<int64_t, std::vector<PipelineReceive>> due_after_;        // receives to post, by post_after
  std::map<int64_t, Posted> posted_;                                 // receives in flight, by action
};

}  // namespace

torch::Tensor run_pipeline_step(torch_model::PipelineStage& stage, const std::vector<PipelineMicrobatch>& microbatches,
                                const PipelinePlace& place, double denom, const std::function<void()>& after_backward,
                                const std::function<void(bool)>& lap,
                                const std::function<void(int chunk)>& before_last_backward) {
  const int pp = place.pp, vpp = place.vpp;
  if (stage->num_chunks() != vpp)
    throw std::invalid_argument("pipeline step: the stage holds " + std::to_string(stage->num_chunks()) +
                                " model chunks, the layout has VPP " + std::to_string(vpp));
  if (pp > 1 && (!place.group || static_cast<int>(place.stage_ranks.size()) != pp))
    throw std::invalid_argument("pipeline step: PP " + std::to_string(pp) + " needs a group and " + std::to_string(pp) +
                                " stage ranks");
  const auto m_count = static_cast<int64_t>(microbatches.size());
  const auto schedule = pipeline_schedule(pp, vpp, place.stage, m_count);
  PipelineStepRun run(stage, microbatches, place, denom, schedule);
  std::vector<size_t> last_backward(static_cast<size_t>(vpp), schedule.size());  // per chunk; size(): none
  for (size_t i = 0; i < schedule.size(); ++i)
    if (schedule[i].kind != PipelineAction::Kind::Forward) last_backward[static_cast<size_t>(schedule[i].chunk)] = i;
  for (size_t i = 0; i < schedule.size(); ++i) {
    const PipelineAction& a = schedule[i];
    const bool backward = a.kind != PipelineAction::Kind::Forward;
    if (backward && before_last_backward && last_backward[static_cast<size_t>(a.chunk)] == i)
      before_last_backward(a.chunk);
    torch_model::profile_begin_pass(backward, a.chunk, a.microbatch);  // --profile: the pass's own time
    backward ? run.backward(a, static_cast<int64_t>(i)) : run.forward(a, static_cast<int64_t>(i));
    torch_model::profile_end_pass();
    if (backward && after_backward) after_backward();
    if (lap) lap(backward);
  }
  return run.finish();
}

}  // namespace recipebench::train
