// The torch backend: trains the recipe's Qwen3.5 MoE model with libtorch on one rank and reports every step.
#include <sys/resource.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <unordered_map>

#include "dist/process_group.h"
#include "catalog/models.h"
#include "layout/rank_map.h"
#include "model/moe.h"
#include "model/pipeline_stage.h"
#include "model/qwen35_moe.h"
#include "run/backend.h"
#include "torch_backend_registration.h"
#include "train/adam.h"
#include "train/distributed_adam.h"
#include "train/lr_schedule.h"
#include "train/pipeline_executor.h"
#include "train/rows.h"

// RECIPEBENCH_TORCH_CUDA is set by CMake when libtorch was built with CUDA (libc10_cuda present).
#ifdef RECIPEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#if __has_include(<nccl.h>)
#include <nccl.h>
#define RECIPEBENCH_HAVE_NCCL_H 1
#endif
#endif

namespace recipebench {

namespace {

using Clock = std::chrono::steady_clock;

void synchronize(const torch::Device& device) {
#ifdef RECIPEBENCH_TORCH_CUDA
  if (device.is_cuda()) cudaDeviceSynchronize();
#else
  (void)device;
#endif
}

void reset_peak_memory(const torch::Device& device) {
#ifdef RECIPEBENCH_TORCH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
#else
  (void)device;
#endif
}

/// Peak device memory allocated by the caching allocator since the last reset (bytes); on CPU the process's
/// peak resident set size (getrusage, bytes).
int64_t peak_memory(const torch::Device& device) {
#ifdef RECIPEBENCH_TORCH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  }
#endif
  (void)device;
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

/// An integer environment variable, or nullopt when unset or empty.
std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::atoi(v);
}

/// Collectives' and rendezvous timeout: RECIPEBENCH_DIST_TIMEOUT seconds, default 300.
std::chrono::seconds dist_timeout() { return std::chrono::seconds(env_int("RECIPEBENCH_DIST_TIMEOUT").value_or(300)); }

/// The recipe's layout.recompute as the model's RecomputeOptions, or a RunError for what the backend cannot run.
/// granularity full: method uniform (groups of num_layers consecutive layers, each group recomputed as one unit) or
/// block (the first num_layers layers recomputed, the rest not); an absent method is uniform and an absent (or 0)
/// num_layers is 1. selective is not implemented yet.
torch_model::RecomputeOptions recompute_options(const RecipeLayout& l) {
  const RecipeRecompute& r = l.recompute;
  torch_model::RecomputeOptions o;
  if (r.granularity.empty() || r.granularity == "none") return o;
  if (r.granularity == "selective")
    throw RunError("the recipe's layout " + l.label +
                   " asks for selective recompute (layout.recompute.granularity: selective): not implemented yet in "
                   "the torch backend; use granularity full (method uniform or block) or none");
  if (r.granularity != "full")
    throw RunError("layout.recompute.granularity " + r.granularity + " is not one of full, selective, none");
  if (r.method.empty() || r.method == "uniform")
    o.method = torch_model::RecomputeOptions::Method::Uniform;
  else if (r.method == "block")
    o.method = torch_model::RecomputeOptions::Method::Block;
  else
    throw RunError("layout.recompute.method " + r.method + " is not one of uniform, block");
  if (r.num_layers < 0)
    throw RunError("layout.recompute.num_layers is " + std::to_string(r.num_layers) + ", expected >= 1");
  o.num_layers = r.num_layers == 0 ? 1 : r.num_layers;
  return o;
}

/// The expert-parallel group of the MoE layers over a c10d group.
struct GroupExpertParallel : torch_model::ExpertParallel {
  explicit GroupExpertParallel(dist::ProcessGroup& g) : group(g) {}
  int64_t rank() const override { return group.rank(); }
  int64_t size() const override { return group.size(); }
  torch::Tensor all_to_all(const torch::Tensor& x, const std::vector<int64_t>& send_counts,
                           const std::vector<int64_t>& recv_counts) override {
    int64_t rows = 0;
    for (auto n : recv_counts) rows += n;
    auto shape = x.sizes().vec();
    shape[0] = rows;
    auto out = torch::empty(shape, x.options());
    group.all_to_all(x.contiguous(), out, recv_counts, send_counts);
    return out;
  }
  dist::ProcessGroup& group;
};

/// The optimizer of the run over this rank's pipeline stage's parameters: MixedPrecisionAdam when DP = 1,
/// DistributedAdam (sharded over the stage's DP group) otherwise. With expert parallelism the experts of different
/// EP ranks are different tensors: the local expert parameters have their own MixedPrecisionAdam on every rank,
/// their gradients summed over the expert-data-parallel group (the ranks of the stage holding the same experts); the
/// other parameters go to DistributedAdam over DP as without EP. With PP > 1 the gradient norm for clipping sums the
/// stages' squared norms over the pipeline group.
struct Optimizer {
  std::unique_ptr<train::MixedPrecisionAdam> one;
  std::unique_ptr<train::DistributedAdam> sharded;
  std::unique_ptr<train::MixedPrecisionAdam> experts;
  dist::ProcessGroup* edp = nullptr;  ///< null when EDP = 1
  dist::ProcessGroup* ep = nullptr;
  dist::ProcessGroup* pp = nullptr;   ///< the ranks of this rank's pipeline (same DP coordinate); null when PP = 1
  void zero_grad() {
    one ? one->zero_grad() : sharded->zero_grad();
    if (experts) experts->zero_grad();
  }
  void accumulate_grads() {
    one ? one->accumulate_grads() : sharded->accumulate_grads();
    if (experts) experts->accumulate_grads();
  }
  double grad_norm() {
    const double stage = stage_grad_norm();
    if (!pp) return stage;
    auto sq = torch::tensor({stage * stage}, torch::kFloat64);  // the pipeline's stages together: the whole model
    pp->all_reduce_sum(sq);
    return std::sqrt(sq.item<double>());
  }
  /// The L2 norm of this pipeline stage's gradients (summed over DP, all experts of the stage).
  double stage_grad_norm() {
    if (one) return one->grad_norm();
    const double dense = sharded->grad_norm();
    if (!experts) return dense;
    if (edp)
      for (auto& g : experts->grad_buffers()) edp->all_reduce_sum(g);
    const double local = experts->grad_norm();
    auto sq = torch::tensor({local * local}, torch::kFloat64);  // the EP ranks' experts together: all experts
    ep->all_reduce_sum(sq);
    return std::sqrt(dense * dense + sq.item<double>());
  }
  double clip(double norm) {
    if (experts) experts->clip(norm);
    return one ? one->clip(norm) : sharded->clip(norm);
  }
  void step(double lr) {
    one ? one->step(lr) : sharded->step(lr);
    if (experts) experts->step(lr);
  }
};

class TorchBackend : public Backend {
 public:
  std::string name() const override { return "torch"; }

  BackendEnvironment environment(const Recipe& recipe, const RunOptions& o) override {
    BackendEnvironment env;
    env.libtorch = TORCH_VERSION;
    const auto& l = recipe.layout;
    const int64_t world = l.world();
    recompute_options(l);  // refuses what the backend cannot run, before any rank starts
    if (l.tp != 1 || l.cp != 1)
      throw RunError("the recipe's layout " + l.label + " has TP = " + std::to_string(l.tp) + ", CP = " +
                     std::to_string(l.cp) +
                     ": the torch backend runs data, expert and pipeline parallel only (TP = CP = 1)");
    if (l.pp < 1 || l.vpp < 1 || (l.vpp > 1 && l.pp < 2))
      throw RunError("the recipe's layout " + l.label + " has PP = " + std::to_string(l.pp) + ", VPP = " +
                     std::to_string(l.vpp) + ": virtual pipeline stages need PP >= 2");
    if (l.ep < 1 || world % (int64_t{l.ep} * l.pp) != 0)
      throw RunError("the recipe's layout " + l.label + " has EP = " + std::to_string(l.ep) +
                     ": expert parallelism needs EP to divide the ranks of a pipeline stage (world size " +
                     std::to_string(world) + " / PP " + std::to_string(l.pp) + ")");
    if (l.ep > 1 && l.etp && *l.etp > 1)
      throw RunError("the recipe's layout " + l.label + " has ETP = " + std::to_string(*l.etp) +
                     ": the torch backend's expert parallelism runs with ETP = 1");
    if (l.ep > 1)
      if (const ModelConfig* m = find_model(recipe.model); m && m->num_experts % l.ep != 0)
        throw RunError("the recipe's layout " + l.label + " has EP = " + std::to_string(l.ep) + " but " +
                       recipe.model + " has " + std::to_string(m->num_experts) +
                       " experts, not divisible by EP");
    if (world != o.world)
      throw RunError("the recipe's layout " + l.label + " needs " + std::to_string(world) + " ranks (DP = " +
                     std::to_string(l.dp) + (l.pp > 1 ? " x PP = " + std::to_string(l.pp) : std::string()) +
                     ") but this run has " + std::to_string(o.world) +
                     " (start it with --nproc " + std::to_string(world) + ", torchrun or srun: docs/distributed.md)");
    if (o.world > 1 && o.device == "cuda")
      throw RunError("multi-rank runs on CUDA (NCCL process groups) are not implemented yet; DP, EP and PP run on CPU "
                     "(Gloo)");
    if (o.device == "cuda") {
      const auto count = torch::cuda::device_count();
      if (count < 1) throw RunError("--device cuda but no CUDA device is visible (torch::cuda::device_count() = 0)");
      env.device_count = 1;
#ifdef RECIPEBENCH_TORCH_CUDA
      const cudaDeviceProp* p = at::cuda::getCurrentDeviceProperties();
      env.device_name = p->name;
      env.device_memory_bytes = static_cast<double>(p->totalGlobalMem);
      int driver = 0, runtime = 0;
      cudaDriverGetVersion(&driver);
      cudaRuntimeGetVersion(&runtime);
      env.driver = "CUDA driver API " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
      env.cuda = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
#ifdef RECIPEBENCH_HAVE_NCCL_H
      env.nccl = std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
#endif
#endif
    } else {
      env.device_count = o.world;
      env.device_name = "CPU (" + std::to_string(torch::get_num_threads()) + " threads)";
    }
    return env;
  }

  void run(const Recipe& recipe, const ModelConfig& cfg, const RunOptions& o,
           const std::function<void(const StepSample&)>& on_step) override {
    const torch::Device device(o.device == "cuda" ? torch::kCUDA : torch::kCPU);
    // BF16 compute on GPU; FP32 on CPU (DESIGN.md section 8 machines have no fast bf16 CPU path).
    const auto dtype = (device.is_cuda() && recipe.workload.precision == "bf16") ? torch::kBFloat16 : torch::kFloat32;
    torch::manual_seed(o.seed);

    const int64_t row_tokens = recipe.workload.row_tokens;
    const int64_t rows_per_mb = std::max<int64_t>(1, recipe.layout.max_tokens_per_gpu / row_tokens);
    // DESIGN.md section 5: microbatches per step per DP rank = global_batch / DP / rows per microbatch. Every rank
    // draws the step's whole global batch in microbatches (the single-rank order) and keeps its DP rank's
    // contiguous block; every pipeline stage of a DP rank holds the same block.
    const int64_t dp = std::max(1, recipe.layout.dp);
    const int pp = std::max(1, recipe.layout.pp), vpp = std::max(1, recipe.layout.vpp);
    const int64_t global_microbatches = recipe.workload.global_batch / rows_per_mb;
    const int64_t microbatches = global_microbatches / dp;
    if (dp > 1 && (recipe.workload.global_batch % (dp * rows_per_mb) != 0 || microbatches < 1))
      throw RunError("global_batch " + std::to_string(recipe.workload.global_batch) + " is not a whole number of " +
                     std::to_string(rows_per_mb) + "-row microbatches per DP rank for DP = " + std::to_string(dp));
    if (vpp > 1 && microbatches % pp != 0)
      throw RunError("the interleaved pipeline schedule (VPP " + std::to_string(vpp) + ") needs the " +
                     std::to_string(microbatches) + " microbatches per DP rank to be a multiple of PP " +
                     std::to_string(pp));

    // The process group (rendezvous at rank 0's TCPStore) of a multi-rank run.
    std::unique_ptr<dist::ProcessGroup> group;
    if (o.world > 1) {
      try {
        group = std::make_unique<dist::ProcessGroup>(o.rank, o.world, o.master_addr, o.master_port, dist_timeout());
      } catch (const std::exception& e) {
        throw RunError("rank " + std::to_string(o.rank) + ": rendezvous with rank 0 at " + o.master_addr + ":" +
                       std::to_string(o.master_port) + " failed: " + e.what());
      }
    }
    const std::optional<int> fail_rank = env_int("RECIPEBENCH_FAIL_RANK"), fail_step = env_int("RECIPEBENCH_FAIL_STEP");

    int step = -1;
    try {
      // Every rank's coordinates and layers (attention grid tp-cp-dp-pp, expert grid etp-ep-edp-pp).
      RankMap map;
      try {
        map = build_rank_map(recipe, cfg);
      } catch (const std::invalid_argument& e) {
        throw RunError("the recipe's layout " + recipe.layout.label + " with " + std::to_string(cfg.num_layers) +
                       " layers: " + e.what());
      }
      if (map.world != o.world)
        throw RunError("the rank map has " + std::to_string(map.world) + " ranks, the run " + std::to_string(o.world));
      const RankPlacement& me = map.ranks[static_cast<size_t>(o.rank)];
      const int64_t first_mb = me.dp * microbatches;
      // The ranks sharing this rank's coordinates except `free` ("dp", "pp", "ep", "edp"), in rank order.
      auto peers = [&](const std::string& free) {
        std::vector<int> out;
        for (const auto& q : map.ranks) {
          const bool same = free == "dp"    ? q.pp == me.pp && q.tp == me.tp && q.cp == me.cp
                            : free == "pp"  ? q.dp == me.dp && q.tp == me.tp && q.cp == me.cp
                            : free == "ep"  ? q.pp == me.pp && q.edp == me.edp && q.etp == me.etp
                                            : q.pp == me.pp && q.ep == me.ep && q.etp == me.etp;
          if (same) out.push_back(q.rank);
        }
        return out;
      };
      // The subgroup of `ranks` (the whole group when it has every rank; null for one rank). Every rank creates its
      // subgroups in the same order (DP, PP, EP, EDP), each group's members with the same name.
      std::vector<std::unique_ptr<dist::ProcessGroup>> subgroups;
      auto make_group = [&](const std::string& name, const std::vector<int>& ranks) -> dist::ProcessGroup* {
        if (ranks.size() <= 1) return nullptr;
        if (static_cast<int>(ranks.size()) == o.world) return group.get();
        subgroups.push_back(group->subgroup(name, ranks));
        return subgroups.back().get();
      };
      const std::string at_stage = std::to_string(me.pp);
      dist::ProcessGroup* dp_group = make_group("dp" + at_stage, peers("dp"));
      dist::ProcessGroup* pp_group = make_group("pp" + std::to_string(me.dp), peers("pp"));
      train::PipelinePlace place;
      place.pp = pp;
      place.vpp = vpp;
      place.stage = me.pp;
      place.stage_ranks = peers("pp");
      place.group = group.get();

      std::unique_ptr<train::RowSource> source;
      try {
        if (o.data_source == "file")
          source = std::make_unique<train::FileRows>(o.data_path, row_tokens, cfg.vocab_size);
        else
          source = std::make_unique<train::SyntheticRows>(cfg.vocab_size, row_tokens, o.supervised_token_ratio, o.seed);
      } catch (const std::exception& e) {
        throw RunError(std::string("data: ") + e.what());
      }

      // The one-rank model (every rank builds it from the same seed, so every part starts with the one-rank run's
      // values); this rank keeps its pipeline stage of it: the embedding on the first stage, the layers of its
      // virtual stages (rank map), the final norm and lm_head on the last.
      torch_model::KernelOptions kernels;
      kernels.recompute = recompute_options(recipe.layout);
      torch_model::PipelineStage stage{nullptr};
      struct ParamInfo {
        std::vector<int64_t> shape;  ///< in the one-rank model (experts unsharded)
        int stage = 0;               ///< the pipeline rank holding it
      };
      std::vector<ParamInfo> param_info;  // the one-rank model's parameters() order
      {
        torch_model::Qwen35MoeForCausalLM model(cfg, kernels);
        std::vector<torch_model::ChunkLayers> chunks;
        for (const auto& lr : me.layers) chunks.push_back({lr.first, lr.count});
        stage = torch_model::PipelineStage(model, chunks, me.pp == 0, me.pp == pp - 1);
        std::vector<int> layer_stage(static_cast<size_t>(cfg.num_layers), pp - 1);
        for (const auto& q : map.ranks)
          for (const auto& lr : q.layers)
            for (int64_t i = lr.first; i < lr.first + lr.count; ++i) layer_stage[static_cast<size_t>(i)] = q.pp;
        std::unordered_map<const void*, int> owner;  // TensorImpl -> pipeline rank; absent: norm, lm_head (last)
        for (const auto& p : model->model->embed_tokens->parameters()) owner[p.unsafeGetTensorImpl()] = 0;
        for (size_t i = 0; i < model->model->decoder_layers.size(); ++i)
          for (const auto& p : model->model->decoder_layers[i]->parameters())
            owner[p.unsafeGetTensorImpl()] = layer_stage[i];
        for (const auto& p : model->parameters()) {
          const auto it = owner.find(p.unsafeGetTensorImpl());
          param_info.push_back({p.sizes().vec(), it == owner.end() ? pp - 1 : it->second});
        }
      }  // the other stages' layers are freed here
      // Expert parallelism (ETP 1): EP groups of EP ranks of a stage, each holding E / EP experts per MoE layer;
      // the expert-data-parallel groups join the stage's ranks holding the same experts (EDP = world / (EP x PP)).
      const int ep = static_cast<int>(std::max<int64_t>(1, recipe.layout.ep));
      dist::ProcessGroup *ep_group = nullptr, *edp_group = nullptr;
      std::shared_ptr<GroupExpertParallel> ep_comm;
      std::vector<torch::Tensor> expert_params;
      if (ep > 1) {
        if (!group || (o.world / pp) % ep != 0 || cfg.num_experts % ep != 0)
          throw RunError("EP = " + std::to_string(ep) + " needs to divide the " + std::to_string(o.world / pp) +
                         " ranks of a pipeline stage and the " + std::to_string(cfg.num_experts) + " experts");
        ep_group = make_group("ep" + at_stage + "." + std::to_string(me.edp), peers("ep"));
        edp_group = make_group("edp" + at_stage + "." + std::to_string(me.ep), peers("edp"));
        ep_comm = std::make_shared<GroupExpertParallel>(*ep_group);
        for (const auto& mod : stage->modules())
          if (auto experts = std::dynamic_pointer_cast<torch_model::RoutedExpertsImpl>(mod)) {
            experts->shard(ep_comm);
            expert_params.push_back(experts->gate_up_proj);
            expert_params.push_back(experts->down_proj);
          }
      }
      stage->to(device, dtype);
      stage->train();
      auto is_expert = [&](const torch::Tensor& p) {
        for (const auto& e : expert_params)
          if (e.unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) return true;
        return false;
      };
      Optimizer adam;
      adam.pp = pp_group;
      if (dp_group) {
        std::vector<torch::Tensor> dense;
        for (const auto& p : stage->parameters())
          if (!is_expert(p)) dense.push_back(p);
        adam.sharded = std::make_unique<train::DistributedAdam>(dense, recipe.optimizer, *dp_group);
        if (!expert_params.empty()) {
          adam.experts = std::make_unique<train::MixedPrecisionAdam>(expert_params, recipe.optimizer);
          adam.edp = edp_group;
          adam.ep = &ep_comm->group;
        }
      } else {
        adam.one = std::make_unique<train::MixedPrecisionAdam>(stage->parameters(), recipe.optimizer);
      }
      auto barrier = [&] {
        if (group) group->barrier();
      };

      auto tail_start = Clock::now();  // end of the previous step's timing
      double pending_overhead = 0;
      for (step = 0; step < o.steps; ++step) {
        const auto data_start = Clock::now();
        if (step > 0) pending_overhead = std::chrono::duration<double>(data_start - tail_start).count();
        // Rows of the step, copied to the device before the clock starts (data loading is not timed). The
        // supervised-token count of the whole global batch is known to every rank (every rank draws all rows).
        std::vector<train::PipelineMicrobatch> batches;
        int64_t supervised = 0;
        for (int64_t mb = 0; mb < global_microbatches; ++mb) {
          train::Rows rows = source->next(rows_per_mb);
          for (int64_t i = 0; i < rows.rows; ++i)
            for (int64_t t = 1; t < row_tokens; ++t) supervised += rows.mask[i * row_tokens + t];
          if (mb < first_mb || mb >= first_mb + microbatches) continue;  // another DP rank's rows
          auto ids = torch::from_blob(rows.tokens.data(), {rows.rows, row_tokens}, torch::kInt64).clone().to(device);
          auto mask = torch::from_blob(rows.mask.data(), {rows.rows, row_tokens}, torch::kUInt8).clone().to(device);
          batches.push_back({ids, mask});
        }
        if (fail_rank && fail_step && *fail_rank == o.rank && *fail_step == step)
          throw RunError("injected failure on rank " + std::to_string(o.rank) + " at step " + std::to_string(step) +
                             " (RECIPEBENCH_FAIL_RANK, RECIPEBENCH_FAIL_STEP)",
                         step);
        synchronize(device);
        barrier();
        reset_peak_memory(device);
        const auto t0 = Clock::now();
        const double data_seconds = std::chrono::duration<double>(t0 - data_start).count();
        double fwd = 0, bwd = 0;
        auto since = t0;
        auto lap = [&](bool backward) {
          if (!o.profile) return;
          synchronize(device);
          const auto now = Clock::now();
          (backward ? bwd : fwd) += std::chrono::duration<double>(now - since).count();
          since = now;
        };

        adam.zero_grad();
        // Per-token normalisation over the whole global batch: each microbatch's loss sum is divided by the step's
        // supervised-token count before its backward pass. The forward and backward passes run in the pipeline
        // schedule's order (PP 1: forward and backward of each microbatch in turn).
        const double denom = static_cast<double>(std::max<int64_t>(1, supervised));
        torch::Tensor loss_sum =
            train::run_pipeline_step(stage, batches, place, denom, [&] { adam.accumulate_grads(); }, lap);
        const double norm = adam.grad_norm();
        if (group) group->all_reduce_sum(loss_sum);  // the last stages' sums reach every rank
        const double loss = loss_sum.item<double>() / denom;
        if (!std::isfinite(loss) || !std::isfinite(norm))
          throw RunError("step " + std::to_string(step) + ": the loss is " + std::to_string(loss) +
                             " and the gradient norm " + std::to_string(norm) + "; the run stops here",
                         step);
        adam.clip(norm);
        const double lr = train::learning_rate(recipe.optimizer, step, o.steps);
        adam.step(lr);
        synchronize(device);
        barrier();
        const auto t1 = Clock::now();
        const double seconds = std::chrono::duration<double>(t1 - t0).count();

        StepSample sample;
        sample.step = step;
        sample.seconds = seconds;
        sample.tokens = recipe.workload.global_batch * row_tokens;
        sample.supervised_tokens = supervised;
        sample.loss = loss;
        sample.grad_norm = norm;
        sample.learning_rate = lr;
        sample.peak_memory_bytes = peak_memory(device);
        if (group) {  // the maximum over ranks
          auto peak = torch::tensor({sample.peak_memory_bytes}, torch::kInt64);
          group->all_reduce_max(peak);
          sample.peak_memory_bytes = peak.item<int64_t>();
        }
        sample.data_seconds = data_seconds;
        sample.overhead_seconds = pending_overhead;
        if (o.profile) {
          sample.forward_seconds = fwd;
          sample.backward_seconds = bwd;
          sample.optimizer_seconds = std::chrono::duration<double>(t1 - since).count();
        }
        tail_start = t1;
        on_step(sample);
      }
      // Test hook: the final parameters, float32, one after the other in the one-rank model's parameters() order.
      // Each parameter comes from rank 0's pipeline (DP rank 0): the stage holding it sends it to rank 0; with
      // expert parallelism the expert shards of the stage's EP group are gathered first (every EP group of the
      // stage takes part), so the file has the one-rank model's layout.
      if (const char* dump = std::getenv("RECIPEBENCH_DUMP_PARAMS"); dump && *dump) {
        std::ofstream out;
        if (o.rank == 0) out.open(dump, std::ios::binary);
        const auto mine = stage->parameters();  // this stage's part of param_info, in the same order
        size_t next = 0;
        for (size_t i = 0; i < param_info.size(); ++i) {
          const int owner = param_info[i].stage;
          const int src = place.stage_ranks[static_cast<size_t>(owner)];  // rank 0's pipeline, for rank 0
          torch::Tensor c;
          if (owner == me.pp) {
            const auto& p = mine.at(next++);
            c = p.detach().to(torch::kCPU, torch::kFloat32).contiguous();
            if (ep_comm && is_expert(p)) {
              auto full = torch::empty({c.numel() * ep}, c.options());
              ep_comm->group.all_gather(c.reshape({-1}), full);
              c = full;
            }
            if (me.dp == 0 && o.rank != 0) group->isend(c, 0, static_cast<int>(i))->wait();
          } else if (o.rank == 0) {
            c = torch::empty(param_info[i].shape, torch::kFloat32);
            group->irecv(c, src, static_cast<int>(i))->wait();
          }
          if (o.rank == 0)
            out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * sizeof(float)));
        }
        if (next != mine.size())
          throw RunError("RECIPEBENCH_DUMP_PARAMS: the stage has " + std::to_string(mine.size()) +
                         " parameters, the one-rank model's map gives it " + std::to_string(next));
        if (o.rank == 0 && !out) throw RunError(std::string("RECIPEBENCH_DUMP_PARAMS: cannot write ") + dump);
      }
    } catch (const std::exception& e) {
      // On several ranks: the first rank to fail shows its message; the others stop quietly (rank 0's run record
      // carries the first failure's message when the store still answers).
      const auto* run_error = dynamic_cast<const RunError*>(&e);
      const int at = run_error ? run_error->step() : step;
      if (!group) {
        if (run_error) throw;
        throw RunError((step >= 0 ? "step " + std::to_string(step) + ": " : std::string()) + e.what(), at);
      }
      const bool first = group->report_failure(e.what());
      std::string message = e.what();
      if (!first) {
        const std::string f = group->first_failure();
        message = f.empty() ? "stopped after another rank failed (" + message + ")" : "stopped after " + f;
      }
      throw RunError(message, at, !first);
    }
  }
};

}  // namespace

void register_torch_backend() {
  register_backend("torch", [] { return std::make_unique<TorchBackend>(); });
}

}  // namespace recipebench
