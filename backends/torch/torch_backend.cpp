// The torch backend: trains the recipe's Qwen3.5 MoE model with libtorch and reports every step. A run is a few
// named steps (train/): the run context (device, groups, rank map), the rank's model (model_builder), its
// optimizer (optimizer_builder), the step batcher (rows packed and copied outside the timed region) and the step
// function (train_step).
#include <torch/version.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "backend/backend.h"
#include "backend_support.h"
#include "catalog/models.h"
#include "data/step_batcher.h"
#include "dist/comm_clock.h"
#include "model/determinism.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer_builder.h"
#include "rank/device.h"
#include "rank/host_memory.h"
#include "rank/model_builder.h"
#include "rank/rank_traffic.h"
#include "rank/run_context.h"
#include "rank_configs.h"
#include "recipe/run_model.h"
#include "torch_backend_registration.h"
#include "train/param_dump.h"
#include "train/train_step.h"

namespace recipebench {

namespace {

using Clock = std::chrono::steady_clock;
using torch_backend::check_backend_support;

/// RunHooks::fail_rank / fail_step: whether this rank fails at `step` as `kind` (the failure-handling tests).
bool injected(const RunOptions& o, int step, FailKind kind) {
  return o.hooks.fail_rank && o.hooks.fail_step && *o.hooks.fail_rank == o.place.rank &&
         *o.hooks.fail_step == step && o.hooks.fail_kind == kind;
}

/// FailKind::kThrow: this rank throws at that step (kill and nan_loss act inside the step: StepChecks).
void fail_if_injected(const RunOptions& o, int step) {
  if (injected(o, step, FailKind::kThrow))
    throw RunError("injected failure on rank " + std::to_string(o.place.rank) + " at step " + std::to_string(step) +
                       " (hooks fail_rank, fail_step: RECIPEBENCH_FAIL_RANK, RECIPEBENCH_FAIL_STEP)",
                   step);
}

/// Installs a CommClock as the process's active one while it lives (nullptr: none), also when the run throws.
class ActiveCommClock {
 public:
  explicit ActiveCommClock(dist::CommClock* clock) { dist::set_active_comm_clock(clock); }
  ~ActiveCommClock() { dist::set_active_comm_clock(nullptr); }
  ActiveCommClock(const ActiveCommClock&) = delete;
  ActiveCommClock& operator=(const ActiveCommClock&) = delete;
};

/// The step's sample: the step's counts, its timing and the peak memory (the maximum over ranks).
StepSample make_sample(int step, const train::StepBatch& batch, const train::StepResult& r, double lr,
                       const train::RunContext& ctx, Clock::time_point data_start, double overhead, bool profile,
                       const std::optional<dist::WaitSecondsByKind>& waits) {
  StepSample s;
  s.step = step;
  s.seconds = std::chrono::duration<double>(r.end - r.start).count();
  s.tokens = batch.tokens;
  s.microbatches = static_cast<int64_t>(batch.microbatches.size());
  s.supervised_tokens = batch.supervised;
  s.loss = r.loss;
  s.grad_norm = r.grad_norm;
  s.learning_rate = lr;
  s.peak_memory_bytes = ctx.max_over_ranks(train::peak_memory(ctx.device));
  s.data_seconds = std::chrono::duration<double>(r.start - data_start).count();
  s.overhead_seconds = overhead;
  if (waits) {
    using dist::CommKind;
    auto at = [&](CommKind k) { return (*waits)[static_cast<size_t>(k)]; };
    s.comm_waits = CommWaitSeconds{true, at(CommKind::kTensorParallel), at(CommKind::kExpertParallel),
                                   at(CommKind::kDataParallel), at(CommKind::kPipeline)};
  }
  if (ctx.emulated()) s.traffic = train::take_step_traffic(ctx);  // what each group would have moved
  if (profile) {
    s.forward_seconds = r.forward_seconds;
    s.backward_seconds = r.backward_seconds;
    s.optimizer_seconds = r.optimizer_seconds;
    s.components = r.components;
    s.passes = r.passes;  // this rank's (rank 0's) passes
  }
  return s;
}

/// This rank's model (rank/model_builder.h), with the build's time and every rank's host memory before and at its
/// peak while building (rank/host_memory.h), handed to `on_built` (the run record's model_build block).
train::RankModel build_model(const ModelConfig& cfg, const torch_backend::RankConfigs& c, const RunOptions& o,
                             const train::RunContext& ctx, const std::function<void(const ModelBuild&)>& on_built) {
  const int64_t rss_before = train::host_rss_bytes();
  train::reset_host_peak_rss();  // where refused, the peak below is the process's so far (an upper bound)
  const auto t0 = Clock::now();
  train::RankModel model = train::build_rank_model(cfg, c.kernels, c.model_parallel, o.settings.seed, ctx);
  ctx.synchronize();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  ModelBuild b;
  b.seconds = seconds;
  b.host_rss_before_bytes = ctx.gather_over_ranks(rss_before);
  b.host_peak_rss_bytes = ctx.gather_over_ranks(train::host_peak_rss_bytes());
  if (on_built) on_built(b);
  if (!o.hooks.dump_init_params_path.empty()) train::dump_parameters(o.hooks.dump_init_params_path, model, ctx);
  return model;
}

/// The layout effects the resolved run worked out (settings.<switch>_applies, settings/switches.h) held against what
/// this rank's optimizers do (the same optimizers reduce-scatter and gather). The switch conflicts are the run
/// driver's (run/admission.h), not repeated here. Throws RunError.
void check_switches(const RunOptions& o, const train::RankModel& model, const train::RunContext& ctx) {
  const bool optimizer_overlaps = train::overlap_applies(model, ctx);
  for (const auto& [name, said] : {std::pair{"overlap_grad_reduce", o.effects.overlap_grad_reduce_applies},
                                   std::pair{"overlap_param_gather", o.effects.overlap_param_gather_applies}})
    if (said && *said != optimizer_overlaps)
      throw RunError(std::string(name) + ": the layout says it " + (*said ? "applies" : "has no effect") +
                     ", the optimizer disagrees");
}

/// The steps of a built rank: data, step, sample, `on_step`; `step` is the step in progress.
void run_steps(train::RunContext& ctx, const Recipe& recipe, train::RankModel& model, train::Optimizer& optimizer,
               train::StepBatcher& batcher, const RunOptions& o, const std::function<void(const StepSample&)>& on_step,
               int& step) {
  const RunSettings& s = o.settings;
  const train::HostSyncCheck host_sync(s.fail_on_sync, ctx.device.is_cuda());
  // Several ranks: rank 0's (an emulated rank's own) waits for communication in each step (dist/comm_clock.h).
  std::optional<dist::CommClock> comm_clock;
  if (ctx.group && (ctx.rank == 0 || ctx.emulated())) comm_clock.emplace(ctx.device.is_cuda());
  train::take_step_traffic(ctx);  // the steps' traffic only: what the build and the placement moved is dropped
  const ActiveCommClock active_clock(comm_clock ? &*comm_clock : nullptr);
  auto tail = Clock::now();  // the end of the previous step's timed region
  for (step = 0; step < s.steps; ++step) {
    const auto data_start = Clock::now();
    const double overhead = step > 0 ? std::chrono::duration<double>(data_start - tail).count() : 0.0;
    const train::StepBatch batch = batcher.next();  // not timed
    fail_if_injected(o, step);
    const double lr = train::learning_rate(recipe.optimizer, step, s.steps);
    const train::StepChecks checks{&host_sync, o.hooks.inject_sync_step == step, injected(o, step, FailKind::kKill),
                                   injected(o, step, FailKind::kNanLoss)};
    const train::StepResult r = train::train_step(ctx, model, optimizer, batch, lr, step, s.profile, checks);
    if (o.hooks.dump_step_params && !o.hooks.dump_params_path.empty()) {
      optimizer.finish_param_gather();  // bench.overlap_param_gather: the step's update reaches the parameters
      train::dump_parameters(o.hooks.dump_params_path + ".step" + std::to_string(step), model, ctx);
    }
    tail = r.end;
    std::optional<dist::WaitSecondsByKind> waits;
    if (comm_clock) waits = comm_clock->collect();  // the step ended with a device synchronisation
    on_step(make_sample(step, batch, r, lr, ctx, data_start, overhead, s.profile, waits));
  }
}

/// The training run on this rank, after the rendezvous: the configs, the rank's place on the resolved run's rank
/// map, the data, the model, the optimizer, the steps. `step` is the step in progress (for failure messages).
void train_run(train::RunContext& ctx, const ResolvedRun& r, const std::function<void(const StepSample&)>& on_step,
               const std::function<void(const ModelBuild&)>& on_built, int& step) {
  const Recipe& recipe = *r.recipe;
  const ModelConfig& cfg = r.model.model;
  const RunOptions& o = r.options;
  const torch_backend::RankConfigs configs = torch_backend::rank_configs(recipe, o.settings);
  if (!r.map) throw RunError(r.map_problem);  // environment() refuses it first, with the layout named
  train::place_rank(ctx, *r.map, configs.parallel);
  if (!o.hooks.dump_traffic_path.empty()) train::keep_traffic_calls(ctx);
  train::StepBatcher batcher(recipe, cfg, o, ctx);
  train::RankModel model = build_model(cfg, configs, o, ctx, on_built);
  auto optimizer = train::build_optimizer(model, ctx, recipe.optimizer, configs.optimizer);
  check_switches(o, model, ctx);
  run_steps(ctx, recipe, model, *optimizer, batcher, o, on_step, step);
  optimizer->finish_param_gather();  // the last step's deferred all-gathers: the parameters hold its update
  if (!o.hooks.dump_params_path.empty()) train::dump_parameters(o.hooks.dump_params_path, model, ctx);
  if (!o.hooks.dump_traffic_path.empty()) train::dump_rank_traffic(o.hooks.dump_traffic_path, ctx, model);
  ctx.finish();
}

/// A failure of a rank as the RunError the harness records. On several ranks the first rank to fail shows its
/// message; the others stop quietly (rank 0's run record carries the first failure's message when the store still
/// answers).
/// A communication error (not a RunError) may come from a rank that died without a word: `run --nproc`'s launcher
/// notes such a rank (launch/launch.h launch_note_text). Waits up to 3 s for the note; "" when none comes.
std::string launch_note(const std::string& path) {
  if (path.empty()) return "";
  for (int i = 0; i < 30; ++i) {
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) return line;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

RunError run_failure(const std::exception& e, dist::ProcessGroup* group, int step, const std::string& note_path) {
  const auto* run_error = dynamic_cast<const RunError*>(&e);
  const int at = run_error ? run_error->step() : step;
  if (!group) {
    if (run_error) return *run_error;
    return RunError((step >= 0 ? "step " + std::to_string(step) + ": " : std::string()) + e.what(), at);
  }
  std::string what = e.what();
  if (!run_error)
    if (const std::string note = launch_note(note_path); !note.empty())
      what = note + (step >= 0 ? " during step " + std::to_string(step) : std::string()) + " (the launcher saw it); " +
             "this rank then failed: " + what;
  const bool first = group->report_failure(what);
  std::string message = what;
  if (!first) {
    const std::string f = group->first_failure();
    message = f.empty() ? "stopped after another rank failed (" + message + ")" : "stopped after " + f;
  }
  return RunError(message, at, !first);
}

class TorchBackend : public Backend {
 public:
  std::string name() const override { return "torch"; }

  /// Refuses, before any rank starts (every rank refuses alike), what this backend cannot build beyond its capability
  /// table (TP without sequence parallel, widths it does not shard), a run whose ranks are not the layout's and a
  /// layout that does not hold for the model that runs (the resolved run's rank map and layout rules); then
  /// describes the device.
  BackendEnvironment environment(const ResolvedRun& r) override {
    const Recipe& recipe = *r.recipe;
    const ModelConfig& model = r.model.model;
    check_backend_support(recipe, &model);
    torch_backend::check_run_ranks(recipe, r.options);
    torch_backend::check_resolved_layout(r);
    BackendEnvironment env = train::describe_device(r.options);
    env.libtorch = TORCH_VERSION;
    return env;
  }

  void run(const ResolvedRun& r, const std::function<void(const StepSample&)>& on_step) override {
    torch_model::set_deterministic(r.settings().deterministic);  // bench.deterministic, before the first GPU matmul
    train::RunContext ctx = train::open_run(*r.recipe, r.options);
    int step = -1;
    try {
      train_run(ctx, r, on_step, on_model_built, step);
    } catch (const std::exception& e) {
      throw run_failure(e, ctx.group.get(), step, r.options.place.launch_note_path);
    }
  }
};

}  // namespace

void register_torch_backend() {
  register_backend("torch", torch_backend_capabilities(), [] { return std::make_unique<TorchBackend>(); });
}

}  // namespace recipebench
