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

#include "dist/parallel_groups.h"
#include "dist/process_group.h"
#include "layout/rank_map.h"
#include "catalog/models.h"
#include "layout/rank_map.h"
#include "model/determinism.h"
#include "model/moe.h"
#include "model/pipeline_stage.h"
#include "model/qwen35_moe.h"
#include "model/tensor_parallel.h"
#include "run/backend.h"
#include "torch_backend_registration.h"
#include "train/adam.h"
#include "train/distributed_adam.h"
#include "train/lr_schedule.h"
#include "train/packing.h"
#include "train/pipeline_executor.h"
#include "train/rows.h"

// RECIPEBENCH_TORCH_CUDA is set by CMake when libtorch was built with CUDA (libc10_cuda present).
#ifdef RECIPEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
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

/// The optimizer of the run over this rank's pipeline stage's parameters: MixedPrecisionAdam on one rank,
/// DistributedAdam (sharded over the stage's DP group) on several. With expert parallelism the experts of different
/// EP ranks are different tensors: the local expert parameters have their own MixedPrecisionAdam on every rank,
/// their gradients summed over the expert-data-parallel group (the ranks of the stage holding the same experts); the
/// other parameters go to DistributedAdam over DP as without EP.
/// With tensor parallelism (TP > 1, sequence parallel) the dense parameters are in two DistributedAdams over the DP
/// group (the ranks with the same TP coordinate): the TP-sharded ones (`tp_sharded`, different tensors per TP rank)
/// and the replicated ones (`sharded`: norms, router, shared_expert_gate), whose gradients are partial sums over
/// this rank's sequence shard (or heads) and are summed over TP first. The experts are always apart then (EDP
/// spans the TP ranks, which route different tokens). With PP > 1 the gradient norm for clipping sums the stages'
/// squared norms over the pipeline group.
/// The sum over `group` of every rank's `local` squared (double); `local` squared when group is null.
double sum_of_squares(dist::ProcessGroup* group, double local) {
  auto sq = torch::tensor({local * local}, torch::kFloat64);
  if (group) group->all_reduce_sum(sq);
  return sq.item<double>();
}

struct Optimizer {
  std::unique_ptr<train::MixedPrecisionAdam> one;
  std::unique_ptr<train::DistributedAdam> sharded;
  std::unique_ptr<train::DistributedAdam> tp_sharded;  ///< null when TP = 1
  std::unique_ptr<train::MixedPrecisionAdam> experts;
  dist::ProcessGroup* edp = nullptr;  ///< null when EDP = 1
  dist::ProcessGroup* ep = nullptr;   ///< null when EP = 1
  dist::ProcessGroup* tp = nullptr;   ///< null when TP = 1
  dist::ProcessGroup* pp = nullptr;   ///< the ranks of this rank's pipeline (same TP, DP); null when PP = 1
  void zero_grad() {
    one ? one->zero_grad() : sharded->zero_grad();
    if (tp_sharded) tp_sharded->zero_grad();
    if (experts) experts->zero_grad();
  }
  void accumulate_grads() {
    one ? one->accumulate_grads() : sharded->accumulate_grads();
    if (tp_sharded) tp_sharded->accumulate_grads();
    if (experts) experts->accumulate_grads();
  }
  /// The global gradient norm, equal to the one-rank run's: replicated parameters counted once, TP shards and EP
  /// shards summed over their groups.
  double grad_norm() {
    return std::sqrt(sum_of_squares(pp, stage_grad_norm()));  // the pipeline's stages together: the whole model
  }
  /// The L2 norm of this pipeline stage's gradients (summed over DP, all TP shards and experts of the stage).
  double stage_grad_norm() {
    if (one) return one->grad_norm();
    if (tp) tp->all_reduce_sum(sharded->grad_buffer());  // replicated under SP: the sum of the TP ranks' parts
    const double dense = sharded->grad_norm();
    double sq = dense * dense;
    if (tp_sharded) sq += sum_of_squares(tp, tp_sharded->grad_norm());  // the TP ranks' shards together
    if (experts) {
      if (edp)
        for (auto& g : experts->grad_buffers()) edp->all_reduce_sum(g);
      sq += sum_of_squares(ep, experts->grad_norm());  // the EP ranks' experts together: all experts
    }
    return std::sqrt(sq);
  }
  double clip(double norm) {
    if (experts) experts->clip(norm);
    if (tp_sharded) tp_sharded->clip(norm);
    return one ? one->clip(norm) : sharded->clip(norm);
  }
  void step(double lr) {
    one ? one->step(lr) : sharded->step(lr);
    if (tp_sharded) tp_sharded->step(lr);
    if (experts) experts->step(lr);
  }
};

/// Refuses, with a RunError, a TP > 1 layout the backend cannot run: TP runs with sequence parallel only (the model
/// is MoE: docs/distributed.md), the rows' length and the sharded dimensions (heads, KV heads, Gated DeltaNet key
/// and value heads, the shared expert's FFN, the vocabulary) divisible by TP.
void check_tensor_parallel(const Recipe& recipe) {
  const auto& l = recipe.layout;
  if (l.tp < 1) throw RunError("the recipe's layout " + l.label + " has TP = " + std::to_string(l.tp));
  if (l.tp == 1) return;
  const std::string tp = std::to_string(l.tp);
  if (!l.sequence_parallel)
    throw RunError("the recipe's layout " + l.label + " has TP = " + tp +
                   " without sequence parallel: the torch backend runs TP > 1 with sequence parallel only "
                   "(layout.sequence_parallel: true); the model is MoE, and without it every TP rank would route "
                   "the same tokens through the experts (docs/distributed.md)");
  if (recipe.workload.row_tokens % l.tp != 0)
    throw RunError("workload.row_tokens " + std::to_string(recipe.workload.row_tokens) + " is not divisible by TP = " +
                   tp + ": sequence parallel splits every row's sequence over the TP ranks");
  const ModelConfig* m = find_model(recipe.model);
  if (!m) return;  // a model from a config.json: shard_tensor_parallel checks the same dimensions
  const std::pair<const char*, int64_t> dims[] = {{"attention heads", m->num_attention_heads},
                                                  {"KV heads", m->num_kv_heads},
                                                  {"Gated DeltaNet key heads", m->linear_num_key_heads},
                                                  {"Gated DeltaNet value heads", m->linear_num_value_heads},
                                                  {"shared expert FFN", m->shared_expert_ffn},
                                                  {"vocabulary", m->vocab_size}};
  for (const auto& [what, n] : dims)
    if (n % l.tp != 0)
      throw RunError("the recipe's layout " + l.label + " has TP = " + tp + " but " + recipe.model + " has " +
                     std::to_string(n) + " " + what + ", not divisible by TP");
}

class TorchBackend : public Backend {
 public:
  std::string name() const override { return "torch"; }

  BackendEnvironment environment(const Recipe& recipe, const RunOptions& o) override {
    BackendEnvironment env;
    env.libtorch = TORCH_VERSION;
    const auto& l = recipe.layout;
    const int64_t world = l.world();
    recompute_options(l);  // refuses what the backend cannot run, before any rank starts
    if (l.cp != 1)
      throw RunError("the recipe's layout " + l.label + " has CP = " + std::to_string(l.cp) +
                     ": the torch backend runs tensor, data, expert and pipeline parallel (CP = 1)");
    check_tensor_parallel(recipe);
    if (l.pp < 1 || l.vpp < 1 || (l.vpp > 1 && l.pp < 2))
      throw RunError("the recipe's layout " + l.label + " has PP = " + std::to_string(l.pp) + ", VPP = " +
                     std::to_string(l.vpp) + ": virtual pipeline stages need PP >= 2");
    if (l.ep < 1 || world % (int64_t{l.ep} * l.pp) != 0)
      throw RunError("the recipe's layout " + l.label + " has EP = " + std::to_string(l.ep) +
                     ": expert parallelism needs EP to divide the ranks of a pipeline stage (world size " +
                     std::to_string(world) + " / PP " + std::to_string(l.pp) + ")");
    if (l.effective_etp() != 1)
      throw RunError("the recipe's layout " + l.label + " has ETP = " + std::to_string(l.effective_etp()) +
                     (l.etp ? std::string() : std::string(" (layout.etp absent: ETP = TP)")) +
                     ": the torch backend's experts run with ETP = 1 (TP folded into EP); set layout.etp: 1");
    if (l.ep > 1)
      if (const ModelConfig* m = find_model(recipe.model); m && m->num_experts % l.ep != 0)
        throw RunError("the recipe's layout " + l.label + " has EP = " + std::to_string(l.ep) + " but " +
                       recipe.model + " has " + std::to_string(m->num_experts) +
                       " experts, not divisible by EP");
    if (world != o.world)
      throw RunError("the recipe's layout " + l.label + " needs " + std::to_string(world) + " ranks (" +
                     (l.tp > 1 ? "TP = " + std::to_string(l.tp) + " x " : std::string()) + "DP = " +
                     std::to_string(l.dp) + (l.pp > 1 ? " x PP = " + std::to_string(l.pp) : std::string()) +
                     ") but this run has " + std::to_string(o.world) +
                     " (start it with --nproc " + std::to_string(world) + ", torchrun or srun: docs/distributed.md)");
    if (o.device == "cuda") {
      // One GPU per rank: local rank r of this host trains on CUDA device r (docs/distributed.md).
      const auto count = static_cast<int>(torch::cuda::device_count());
      if (count < 1) throw RunError("--device cuda but no CUDA device is visible (torch::cuda::device_count() = 0)");
      if (o.local_rank >= count)
        throw RunError("rank " + std::to_string(o.rank) + " is local rank " + std::to_string(o.local_rank) +
                       " of its host but only " + std::to_string(count) + " CUDA device(s) are visible: one GPU " +
                       "per rank needs at least " + std::to_string(o.local_rank + 1));
      env.device_count = o.world;
#ifdef RECIPEBENCH_TORCH_CUDA
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(o.local_rank));
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
    if (o.world > 1 && !dist::transport_available(o.device == "cuda" ? dist::Transport::kNccl : dist::Transport::kGloo))
      throw RunError(o.device == "cuda"
                         ? "this build has no c10d NCCL (a CUDA libtorch with torch/csrc/distributed/c10d/"
                           "ProcessGroupNCCL.hpp and nccl.h): a CUDA run on " + std::to_string(o.world) +
                               " ranks needs it"
                         : "this build's libtorch has no c10d Gloo headers (torch/csrc/distributed/c10d/"
                           "ProcessGroupGloo.hpp, gloo/config.h): a CPU run on " + std::to_string(o.world) +
                               " ranks needs them");
    return env;
  }

  void run(const Recipe& recipe, const ModelConfig& cfg, const RunOptions& o,
           const std::function<void(const StepSample&)>& on_step) override {
    torch_model::set_deterministic(o.deterministic);  // bench.deterministic, before the first GPU matmul
    const torch::Device device = o.device == "cuda" ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(o.local_rank))
                                                    : torch::Device(torch::kCPU);
#ifdef RECIPEBENCH_TORCH_CUDA
    if (device.is_cuda()) c10::cuda::set_device(device.index());
#endif
    // BF16 compute on GPU; FP32 on CPU (DESIGN.md section 8 machines have no fast bf16 CPU path).
    const auto dtype = (device.is_cuda() && recipe.workload.precision == "bf16") ? torch::kBFloat16 : torch::kFloat32;
    torch::manual_seed(o.seed);

    const int64_t row_tokens = recipe.workload.row_tokens;
    const int64_t max_tokens = recipe.layout.max_tokens_per_gpu;
    const int64_t rows_per_mb = std::max<int64_t>(1, max_tokens / row_tokens);
    if (row_tokens > max_tokens)
      throw RunError("workload.row_tokens " + std::to_string(row_tokens) + " is more than layout.max_tokens_per_gpu " +
                     std::to_string(max_tokens) + ": a row must fit in one microbatch");
    // DESIGN.md section 5: microbatches per step per DP rank = global_batch / DP / rows per microbatch (full rows).
    // Every rank draws the step's whole global batch (the single-rank order) and keeps its DP rank's contiguous
    // block of global_batch / DP rows, packed first-fit into microbatches of at most max_tokens_per_gpu tokens
    // (dynamic batching, train/packing.h); every rank trains as many microbatches as the DP rank with the most.
    // The TP ranks and the pipeline stages of a DP rank train on the same rows (TP: each on its sequence shard).
    const int64_t tp_size = std::max(1, recipe.layout.tp);
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
    const int64_t rows_per_rank = recipe.workload.global_batch / dp;

    // The process group (rendezvous at rank 0's TCPStore) of a multi-rank run.
    std::unique_ptr<dist::ProcessGroup> group;
    if (o.world > 1) {
      try {
        // NCCL between the GPUs of a CUDA run (one GPU per rank), Gloo between CPU ranks.
        group = std::make_unique<dist::ProcessGroup>(
            o.rank, o.world, o.master_addr, o.master_port, dist_timeout(),
            device.is_cuda() ? dist::Transport::kNccl : dist::Transport::kGloo, device.is_cuda() ? device.index() : -1);
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
      const int64_t first_row = me.dp * rows_per_rank;
      // The layout's groups from its rank map (TP fastest; the expert grid with ETP 1: TP folded into EP).
      dist::LayoutGroups groups;
      if (group) groups = dist::make_layout_groups(*group, map);
      train::PipelinePlace place;
      place.pp = pp;
      place.vpp = vpp;
      place.stage = me.pp;
      place.stage_ranks = dist::group_members(map, o.rank, "pp");
      place.group = group.get();
      for (int k = 0; k < 2; ++k)
        for (int d = 0; d < 2; ++d) place.p2p[k][d] = groups.p2p[k][d];

      std::unique_ptr<train::RowSource> source;
      try {
        if (o.data_source == "file")
          source = std::make_unique<train::FileRows>(o.data_path, row_tokens, cfg.vocab_size);
        else
          source = std::make_unique<train::SyntheticRows>(cfg.vocab_size, row_tokens, o.supervised_token_ratio, o.seed,
                                                          o.min_row_tokens);
      } catch (const std::exception& e) {
        throw RunError(std::string("data: ") + e.what());
      }

      // The one-rank model (every rank builds it from the same seed, so every part starts with the one-rank run's
      // values); with TP every TP rank keeps its shards of it, and this rank keeps its pipeline stage: the
      // embedding on the first stage, the layers of its virtual stages (rank map), the final norm and lm_head on
      // the last.
      torch_model::KernelOptions kernels;
      kernels.recompute = recompute_options(recipe.layout);
      torch_model::PipelineStage stage{nullptr};
      struct ParamInfo {
        std::vector<int64_t> shape;  ///< in the one-rank model (experts and TP shards whole)
        int stage = 0;               ///< the pipeline rank holding it
      };
      std::vector<ParamInfo> param_info;  // the one-rank model's parameters() order
      std::shared_ptr<dist::GroupTensorParallel> tp_comm;
      std::vector<torch_model::TpParam> tp_params;
      {
        torch_model::Qwen35MoeForCausalLM model(cfg, kernels);
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
        // Tensor parallelism with sequence parallel: every TP rank keeps its part of the one-rank model's values.
        if (tp_size > 1) {
          tp_comm = std::make_shared<dist::GroupTensorParallel>(*groups.tp);
          try {
            tp_params = torch_model::shard_tensor_parallel(*model, tp_comm);
          } catch (const c10::Error& e) {  // a dimension not divisible by TP (a model from a config.json)
            throw RunError(e.what_without_backtrace());
          }
        }
        std::vector<torch_model::ChunkLayers> chunks;
        for (const auto& lr : me.layers) chunks.push_back({lr.first, lr.count});
        stage = torch_model::PipelineStage(model, chunks, me.pp == 0, me.pp == pp - 1);
      }  // the other stages' layers are freed here
      // Expert parallelism (ETP 1): EP groups of EP ranks of a stage, each holding E / EP experts per MoE layer;
      // the expert-data-parallel groups join the stage's ranks holding the same experts (EDP = world / (EP x PP)).
      // With TP > 1 the experts are apart from the dense parameters even with EP = 1 (the TP ranks route different
      // tokens: EDP spans them).
      const int ep = static_cast<int>(std::max<int64_t>(1, recipe.layout.ep));
      std::shared_ptr<dist::GroupExpertParallel> ep_comm;
      std::vector<torch::Tensor> expert_params;
      if (ep > 1) {
        if (!group || (o.world / pp) % ep != 0 || cfg.num_experts % ep != 0)
          throw RunError("EP = " + std::to_string(ep) + " needs to divide the " + std::to_string(o.world / pp) +
                         " ranks of a pipeline stage and the " + std::to_string(cfg.num_experts) + " experts");
        ep_comm = std::make_shared<dist::GroupExpertParallel>(*groups.ep);
      }
      if (ep > 1 || tp_size > 1)
        for (const auto& mod : stage->modules())
          if (auto experts = std::dynamic_pointer_cast<torch_model::RoutedExpertsImpl>(mod)) {
            if (ep_comm) experts->shard(ep_comm);
            expert_params.push_back(experts->gate_up_proj);
            expert_params.push_back(experts->down_proj);
          }
      stage->to(device, dtype);
      stage->train();
      auto is_expert = [&](const torch::Tensor& p) {
        for (const auto& e : expert_params)
          if (e.unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) return true;
        return false;
      };
      auto tp_spec = [&](const torch::Tensor& p) -> const torch_model::TpShardSpec* {
        for (const auto& s : tp_params)
          if (s.param.unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) return &s.spec;
        return nullptr;
      };
      Optimizer adam;
      adam.pp = groups.pp;
      if (group) {
        std::vector<torch::Tensor> dense, dense_tp;  // replicated over TP; TP-sharded
        for (const auto& p : stage->parameters())
          if (!is_expert(p)) (tp_spec(p) ? dense_tp : dense).push_back(p);
        adam.sharded = std::make_unique<train::DistributedAdam>(dense, recipe.optimizer, *groups.dp);
        if (tp_size > 1) adam.tp = groups.tp;  // the replicated gradients are summed over TP (Optimizer)
        if (!dense_tp.empty())
          adam.tp_sharded = std::make_unique<train::DistributedAdam>(dense_tp, recipe.optimizer, *groups.dp);
        if (!expert_params.empty()) {
          adam.experts = std::make_unique<train::MixedPrecisionAdam>(expert_params, recipe.optimizer);
          adam.edp = groups.edp->size() > 1 ? groups.edp : nullptr;
          adam.ep = ep_comm ? &ep_comm->group : nullptr;
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
        // Rows of the step, copied to the device before the clock starts (data loading is not timed).
        std::vector<train::PipelineMicrobatch> batches;
        // Every rank holds the whole global batch, so the step's token and supervised counts and every rank's
        // packing are known here without a collective.
        const train::Rows rows = source->next(recipe.workload.global_batch);
        int64_t supervised = 0, step_tokens = 0;
        for (int64_t i = 0; i < rows.rows; ++i) {
          step_tokens += rows.lengths[i];
          for (int64_t t = 1; t < row_tokens; ++t) supervised += rows.mask[i * row_tokens + t];
        }
        // Packed by their lengths padded to a multiple of TP (sequence parallel splits the sequence over TP), so a
        // microbatch stays within max_tokens_per_gpu after the padding.
        auto pack = [&](int64_t dp_rank) {
          std::vector<int64_t> lengths;
          for (int64_t i = 0; i < rows_per_rank; ++i)
            lengths.push_back((rows.lengths[dp_rank * rows_per_rank + i] + tp_size - 1) / tp_size * tp_size);
          return train::pack_first_fit(lengths, max_tokens);
        };
        size_t step_microbatches = 0;
        std::vector<train::Microbatch> packed;
        for (int64_t r = 0; r < dp; ++r) {
          auto p = pack(r);
          step_microbatches = std::max(step_microbatches, p.size());
          if (r == me.dp) packed = std::move(p);
        }
        // The interleaved schedule needs a multiple of PP microbatches (checked for full rows above); with shorter
        // rows the packed count is rounded up (never past one row per microbatch: rows_per_rank is such a multiple).
        if (vpp > 1) step_microbatches = (step_microbatches + pp - 1) / pp * pp;
        train::split_to_count(packed, static_cast<int64_t>(step_microbatches));
        for (const auto& mb : packed) {
          int64_t longest = 0;
          for (const int64_t i : mb) longest = std::max(longest, rows.lengths[first_row + i]);
          // Sequence parallel splits the sequence over TP: pad to a multiple of TP (row_tokens is one).
          longest = (longest + tp_size - 1) / tp_size * tp_size;
          std::vector<int64_t> ids_host;
          std::vector<uint8_t> mask_host;
          for (const int64_t i : mb) {
            const int64_t at = (first_row + i) * row_tokens;
            ids_host.insert(ids_host.end(), rows.tokens.begin() + at, rows.tokens.begin() + at + longest);
            mask_host.insert(mask_host.end(), rows.mask.begin() + at, rows.mask.begin() + at + longest);
          }
          const auto k = static_cast<int64_t>(mb.size());
          auto ids = torch::from_blob(ids_host.data(), {k, longest}, torch::kInt64).clone().to(device);
          auto mask = torch::from_blob(mask_host.data(), {k, longest}, torch::kUInt8).clone().to(device);
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
        // The last stages' sums reach every rank; every TP rank of a last stage has the whole loss of its rows
        // (vocab-parallel cross-entropy), so TP rank 0's counts.
        if (me.tp != 0) loss_sum.zero_();
        if (group) group->all_reduce_sum(loss_sum);
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
        sample.tokens = step_tokens;
        sample.microbatches = static_cast<int64_t>(batches.size());
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
      // Each parameter comes from rank 0's pipeline (DP rank 0, TP rank 0): the stage holding it sends it to rank 0;
      // the expert shards of the stage's EP group and the TP shards of its TP groups are gathered first (every rank
      // of the stage takes part), so the file has the one-rank model's layout.
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
            if (tp_comm)
              if (const auto* spec = tp_spec(p)) c = torch_model::tp_gather_param(c, *spec, *tp_comm).contiguous();
            if (me.dp == 0 && me.tp == 0 && o.rank != 0) group->isend(c, 0, static_cast<int>(i))->wait();
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
      // A clean end on every rank: the device's work done, subgroups first, then the run's group (its store lives
      // on rank 0).
      synchronize(device);
      for (auto& g : groups.owned) g->finish();
      if (group) group->finish();
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
