// plan's search space and headroom (harness/plan/layout_search.h, plan/memory_plan.h, plan/topology.h,
// plan/megatron_command.h, plan/torchtitan_command.h, plan/proposal_stacks.h; issue 44): the optimizer-state forms it
// tries per layout, the memory reserve beside each planned peak and the measurements it comes from, the seed's measured
// B200 layouts among the proposals for 48 and 64 GPUs, GB200's NVLink domain, CP / ETP / dispatchers / recompute and
// the stacks of each proposal, and every proposal's Megatron-LM and TorchTitan commands against the launch check.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "catalog/hardware.h"
#include "plan/compute_profile.h"
#include "plan/layout_search.h"
#include "backends/torch/torch_backend_registration.h"
#include "catalog/hf_config.h"
#include "plan/analytical_costs.h"
#include "plan/megatron_command.h"
#include "plan/proposal_stacks.h"
#include "plan/torchtitan_command.h"
#include "plan/memory_check.h"
#include "plan/memory_plan.h"
#include "plan/step_time.h"
#include "plan/topology.h"
#include "recipe/launch_check.h"
#include "recipe/run_model.h"
#include "recipe/source_doc.h"
#include "recipe/validate.h"
#include "record/profile_source.h"
#include "record/run_record.h"
#include "record/run_record_check.h"
#include "test_util.h"
#include "util/json.h"

using namespace recipebench;
using recipebench::test::source_path;

namespace {

/// The profile of the one record in the committed folder `rel`.
ProfiledRank profile_in(const std::string& rel) {
  std::string file;
  for (const auto& e : std::filesystem::directory_iterator(source_path(rel))) file = e.path().string();
  return profiled_rank(RunRecord::from_json(read_json_file(file), file), file);
}

/// The six committed emulated ranks of the seed's layouts the docs predict from (bench/predict-recorded.sh): mt16k's
/// and the 48-GPU layout's first, middle and last stage.
std::vector<ProfiledRank> seed_profiles() {
  std::vector<ProfiledRank> ranks;
  for (const std::string kind : {"first", "middle", "last"}) {
    ranks.push_back(
        profile_in("reports/bench/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k-" + kind + "-profile"));
    ranks.push_back(profile_in("reports/bench/h200-2026-12-03-predict/call2/seed-attune-48gpu-tp2-pp6-ep8-" + kind));
  }
  return ranks;
}

/// plan's search of Qwen3.5-397B-A17B on `count` B200, global batch 128 rows of 8,192 tokens, from the seed's
/// profiles (H200, carried to the B200 by the step-time model), trying `forms`.
LayoutSearch seed_search(int count, const std::vector<OptimizerForm>& forms = LayoutSpace{}.optimizer_forms) {
  LayoutRequest req;
  req.model = *find_model("Qwen3.5-397B-A17B");
  req.gpu = "B200";
  req.count = count;
  req.global_batch = 128;
  req.row_tokens = 8192;
  StepTimeOptions o;
  LayoutSpace space;
  space.optimizer_forms = forms;
  return search_layouts(req, fit_unit_costs(seed_profiles()), recipe_network(base_recipe(req)), o, space);
}

/// The proposal of `search` with the layout of the seed recipe `stem` (label, max tokens, recompute), or nullptr.
const PlannedLayout* find_seed_layout(const LayoutSearch& search, const std::string& stem) {
  const ValidatedRecipe v = validate_recipe_file(test::seed_recipe(stem));
  REQUIRE(v.ok());
  const RecipeLayout& s = v.recipe->layout;
  for (const PlannedLayout& p : search.ranked) {
    const RecipeLayout& l = p.recipe.layout;
    if (layout_label(l) == layout_label(s) && l.max_tokens_per_gpu == s.max_tokens_per_gpu &&
        l.recompute.granularity == s.recompute.granularity && l.recompute.method == s.recompute.method &&
        l.recompute.num_layers == s.recompute.num_layers && l.dispatcher == s.dispatcher &&
        l.effective_etp() == s.effective_etp())
      return &p;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("memory reserve: 3 GB + 8% on CUDA, covering every committed emulated peak over its plan",
          "[plan][reserve]") {
  const MemoryReserve cuda = measured_reserve(Device::kCuda), cpu = measured_reserve(Device::kCpu);
  CHECK(cuda.bytes(100e9) == Approx(3e9 + 8e9));
  CHECK(cpu.bytes(100e9) == Approx(8e9));
  CHECK(cuda.text(163.5e9) == "16.1 GB (3.0 GB + 8% of the peak)");
  // Every committed record with an emulation block: its measured peak over its plan within 1 + the fraction, and
  // the fraction no more than a point above the largest (1.076, the mt16k first stage): taken from measurement.
  double largest = 0;
  int records = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(source_path("reports/bench"))) {
    if (e.path().extension() != ".json") continue;
    const Json j = read_json_file(e.path().string());
    if (!j.is_object() || !j.contains("emulation") || !j["emulation"].contains("peak_over_plan")) continue;
    largest = std::max(largest, j["emulation"]["peak_over_plan"].get<double>());
    ++records;
  }
  REQUIRE(records >= 9);
  CHECK(largest == Approx(1.076).epsilon(0.001));
  CHECK(largest <= 1 + cuda.fraction);
  CHECK(1 + cuda.fraction - largest < 0.01);
}

TEST_CASE("memory reserve: one rule of fitting, stated or measured", "[plan][reserve]") {
  const MemoryReserve m = measured_reserve(Device::kCuda);
  CHECK(fits_with_reserve(163.5e9, 180e9, m));        // the 48-GPU seed: 163.5 + 16.1 = 179.6
  CHECK_FALSE(fits_with_reserve(179.8e9, 180e9, m));  // case plan-no-memory-headroom: 96 B200 #2
  CHECK_FALSE(fits_with_reserve(140.9e9, 141e9, m));  // 35B-A3B on 7 H200
  CHECK(fits_with_reserve(179.8e9, 180e9, stated_reserve(0)));
  CHECK_FALSE(fits_with_reserve(175e9, 180e9, stated_reserve(5.5)));
  CHECK(stated_reserve(5.5).text(1e9) == "5.5 GB (--memory-reserve)");
  CHECK_THROWS_AS(stated_reserve(-1), std::invalid_argument);
  // validate's check applies the same rule: the 48-GPU seed's layout with FP32 masters (180.2 GB) does not fit, nor
  // at 163.5 GB beside a stated reserve of 20 GB; its own bf16_remainder form fits the measured reserve.
  const std::string seed = test::seed_recipe("attune-48gpu-tp2-pp6-ep8");
  const ValidatedRecipe v = validate_recipe_file(seed);
  REQUIRE(v.ok());
  CHECK_FALSE(check_memory_fits(*v.recipe, seed, true));
  const std::optional<Diagnostic> d = check_memory_fits(*v.recipe, seed, true, stated_reserve(20));
  REQUIRE(d);
  CHECK_THAT(d->found, Catch::Contains("needs 163.5 GB at its peak and a reserve of 20.0 GB (--memory-reserve) beside "
                                       "it"));
  CHECK_THAT(d->found, Catch::Contains("3.5 GB more than the B200's 180.0 GB"));
}

TEST_CASE("plan searches the optimizer-state forms: the seed's 48 B200 layout with BF16 + remainder masters",
          "[plan][optimizer-state]") {
  const LayoutSearch s = seed_search(48);
  const PlannedLayout* seed = find_seed_layout(s, "attune-48gpu-tp2-pp6-ep8");
  REQUIRE(seed != nullptr);
  CHECK(seed->optimizer_form == OptimizerForm::kBf16Remainder);
  CHECK(seed->recipe.optimizer.master_weights == MasterWeights::kBf16Remainder);
  CHECK(seed->recipe.optimizer.exp_avg_dtype == StateDtype::kFp32);
  CHECK(seed->peak_bytes / 1e9 == Approx(163.5).margin(0.05));  // docs/memory-plan.md, the seed's B200 recipes
  // No proposal inside the reserve; every one's form is the first of the three whose plan fits.
  for (const PlannedLayout& p : s.ranked) {
    CHECK(p.peak_bytes + p.reserve_bytes <= s.gpu_memory_bytes);
    CHECK(p.reserve_bytes == Approx(measured_reserve(Device::kCuda).bytes(p.peak_bytes)));
    CHECK(p.recipe.optimizer.master_weights ==
          (p.optimizer_form == OptimizerForm::kFp32 ? MasterWeights::kFp32 : MasterWeights::kBf16Remainder));
  }
  // FP32 state only (the search before issue 44): the seed's layout is not proposed.
  const LayoutSearch fp32 = seed_search(48, {OptimizerForm::kFp32});
  CHECK(find_seed_layout(fp32, "attune-48gpu-tp2-pp6-ep8") == nullptr);
  CHECK(fp32.fit < s.fit);
}

TEST_CASE("plan proposes the seed's two measured 64 B200 layouts, with the reserve beside each peak",
          "[plan][optimizer-state]") {
  const LayoutSearch s = seed_search(64);
  for (const std::string stem : {"attune-tp2-pp8-ep8-vpp2-mt16k", "attune-tp2-pp8-ep8-vpp2-mt8k"}) {
    const PlannedLayout* p = find_seed_layout(s, stem);
    REQUIRE(p != nullptr);
    CHECK(p->optimizer_form == OptimizerForm::kFp32);  // FP32 masters fit: the most precise form is proposed
  }
  // Measured order: mt16k (1,232.5 tokens/s/GPU) above mt8k (1,130.7).
  CHECK(find_seed_layout(s, "attune-tp2-pp8-ep8-vpp2-mt16k")->prediction.tokens_per_s_per_gpu >
        find_seed_layout(s, "attune-tp2-pp8-ep8-vpp2-mt8k")->prediction.tokens_per_s_per_gpu);
  for (const PlannedLayout& p : s.ranked) CHECK(fits_with_reserve(p.peak_bytes, s.gpu_memory_bytes, s.reserve));
  CHECK(optimizer_form_named("bf16_moments") == OptimizerForm::kBf16Moments);
  CHECK_FALSE(optimizer_form_named("fp16"));
}

TEST_CASE("topology from the catalog: GB200's 4-GPU instance in a 72-GPU NVLink domain", "[plan][topology]") {
  const InstanceSpec* gb200 = default_instance_for_gpu("GB200");
  REQUIRE(gb200 != nullptr);
  CHECK(gb200->gpus == 4);
  CHECK(gb200->nvlink_domain == 72);
  CHECK(nvlink_island(gb200, 4) == 72);
  CHECK(nvlink_island(gb200, 72) == 72);
  CHECK(nvlink_island(gb200, 8) == 8);  // another node size: the user's own machines
  const InstanceSpec* p5en = find_instance("p5en.48xlarge");
  REQUIRE(p5en != nullptr);
  CHECK(p5en->nvlink_domain == 8);  // HGX: the instance itself
  CHECK(nvlink_island(p5en, 8) == 8);
  // The network of 144 GB200 by plan's request: 4 per node by default, NVLink over the rack, the 18 instances'
  // 1,600 Gbps summed across racks (28.8 Tbps = 3,600 GB/s), the same 50 GB/s per GPU as one instance's.
  LayoutRequest req;
  req.model = *find_model("Qwen3.5-35B-A3B");
  req.gpu = "GB200";
  req.count = 144;
  req.per_node = gb200->gpus;
  req.global_batch = 288;
  req.row_tokens = 8192;
  const Recipe base = base_recipe(req);
  CHECK(base.gpu.per_node == 4);
  for (const int per_node : {4, 72}) {
    Recipe r = base;
    r.gpu.per_node = per_node;
    const NetworkModel n = recipe_network(r);
    CHECK(n.gpus_per_node == 72);
    CHECK(n.node_network.bandwidth_bytes_per_s == Approx(3600e9));
    CHECK_THAT(n.source, Catch::Contains("NVLink domain of 72 GPUs (18 instances of 4)"));
  }
  // An instance of another GPU is refused (the CLI says so at <command line>, exit 2).
  req.gpu = "H100";
  req.per_node = 8;
  req.instance = "p5en.48xlarge";
  CHECK_THROWS_WITH(base_recipe(req), "instance AWS p5en.48xlarge holds H200 GPUs, not H100");
}

namespace {

/// The 35B-A3B proxy's committed profile at 2 x 8,192 tokens (H200).
std::vector<ProfiledRank> proxy_profiles() {
  return {profile_in("reports/bench/h200-2026-12-03-predict/call1/profile-2x8k")};
}

/// The recipe document of `command` alone, as a planned recipe's `run` block (a YAML block scalar).
SourceDoc run_doc(const std::string& command) {
  std::string text = "run: |\n";
  size_t start = 0;
  for (size_t end; (end = command.find('\n', start)) != std::string::npos; start = end + 1)
    text += "  " + command.substr(start, end - start) + "\n";
  return parse_yaml(text, "<proposal>");
}

}  // namespace

namespace {

/// A request of plan's: `model` on `count` `gpu`, `batch` rows of `row_tokens` tokens.
LayoutRequest plan_request_of(const ModelConfig& model, const std::string& gpu, int count, int64_t batch,
                              int64_t row_tokens) {
  LayoutRequest req;
  req.model = model;
  req.gpu = gpu;
  req.count = count;
  req.per_node = default_instance_for_gpu(gpu)->gpus;
  req.global_batch = batch;
  req.row_tokens = row_tokens;
  return req;
}

/// plan's search of `req` in the analytical mode (a config.json model: nothing measured).
LayoutSearch analytical_search(const LayoutRequest& req) {
  ChunkShape shape;
  shape.tokens = shape.row_tokens = req.row_tokens;
  const UnitCosts u = analytical_costs(hardware_catalog(), *find_gpu(req.gpu), req.model, shape);
  return search_layouts(req, u, recipe_network(base_recipe(req)), StepTimeOptions{});
}

/// The last value of each flag of `cmd` (launch_flags' words), "" for a switch.
std::map<std::string, std::string> flag_values(const std::string& cmd) {
  std::map<std::string, std::string> flags;
  for (const LaunchFlag& f : launch_flags(cmd)) flags[f.name] = f.value;
  return flags;
}

/// `flags[name]`, or "absent".
std::string flag_or_absent(const std::map<std::string, std::string>& flags, const std::string& name) {
  const auto it = flags.find(name);
  return it == flags.end() ? "absent" : it->second;
}

/// Checks that Megatron-LM's command of `r` states every layout field plan sets, and that the launch check finds
/// nothing to say about it (nor about TorchTitan's, where TorchTitan runs the layout). Returns the commands checked.
int round_trip(const Recipe& r, const ModelConfig& m, bool check_changed_tp) {
  const RecipeLayout& l = r.layout;
  const std::string cmd = megatron_command(r);
  INFO(cmd);
  const LaunchCheck c = check_launch_command(r, run_doc(cmd));
  CHECK(c.stated.empty());
  CHECK(c.unstated.empty());
  // predict reads a command recipe's priced switches back from the command (plan/megatron_command.h): the same.
  Recipe as_command = r;
  as_command.doc["run"] = cmd;
  RunSettings back;
  back.backend = "command";
  command_switches(as_command, back);
  CHECK(back.overlap_grad_reduce == r.bench.overlap_grad_reduce.value_or(false));
  CHECK(back.overlap_param_gather == r.bench.overlap_param_gather.value_or(false));
  CHECK(back.overlap_p2p_comm == r.bench.overlap_p2p_comm.value_or(false));
  CHECK(back.overlap_tp_comm == r.bench.overlap_tp_comm.value_or(false));
  const std::map<std::string, std::string> f = flag_values(cmd);
  CHECK(f.at("--tensor-model-parallel-size") == std::to_string(l.tp));
  CHECK(f.at("--pipeline-model-parallel-size") == std::to_string(l.pp));
  CHECK(flag_or_absent(f, "--num-virtual-stages-per-pipeline-rank") ==
        (l.vpp > 1 ? std::to_string(l.vpp) : "absent"));
  CHECK(f.at("--context-parallel-size") == std::to_string(l.cp));
  CHECK(f.at("--expert-model-parallel-size") == std::to_string(l.ep));
  CHECK(f.at("--expert-tensor-parallel-size") == std::to_string(l.effective_etp()));
  CHECK(f.at("--moe-token-dispatcher-type") == to_string(l.dispatcher));
  CHECK(f.count("--moe-enable-deepep") == (l.dispatcher == Dispatcher::kFlex ? 1u : 0u));
  CHECK(flag_or_absent(f, "--decoder-first-pipeline-num-layers") ==
        (l.first_stage_layers ? std::to_string(*l.first_stage_layers) : "absent"));
  CHECK(f.count("--sequence-parallel") == (l.sequence_parallel ? 1u : 0u));
  CHECK(flag_or_absent(f, "--recompute-granularity") ==
        (l.recompute.granularity == "none" ? "absent" : l.recompute.granularity));
  CHECK(flag_or_absent(f, "--recompute-method") == (l.recompute.granularity == "full" ? l.recompute.method : "absent"));
  CHECK(flag_or_absent(f, "--recompute-num-layers") ==
        (l.recompute.granularity == "full" ? std::to_string(l.recompute.num_layers) : "absent"));
  CHECK(f.at("--micro-batch-size") == std::to_string(*l.rows_per_microbatch));
  CHECK(f.at("--global-batch-size") == std::to_string(r.workload.global_batch));
  CHECK(f.at("--seq-length") == std::to_string(r.workload.row_tokens));
  CHECK(f.count("--use-precision-aware-optimizer") ==
        (r.optimizer.master_weights == MasterWeights::kBf16Remainder ? 1u : 0u));
  CHECK(f.count("--exp-avg-dtype") == (r.optimizer.exp_avg_dtype == StateDtype::kBf16 ? 1u : 0u));
  CHECK(std::stoi(f.at("--nnodes")) * std::stoi(f.at("--nproc-per-node")) == r.gpu.count);
  if (check_changed_tp) {  // a command that disagrees is caught: TP doubled, one warning
    std::string wrong = cmd;
    const std::string tp = "--tensor-model-parallel-size " + std::to_string(l.tp);
    wrong.replace(wrong.find(tp), tp.size(), "--tensor-model-parallel-size " + std::to_string(2 * l.tp));
    const LaunchCheck w = check_launch_command(r, run_doc(wrong));
    CHECK(w.stated.size() + w.unstated.size() == 1);
  }
  if (!torchtitan_refusals(r, m).empty()) {
    CHECK_THROWS_AS(torchtitan_command(r, m), std::invalid_argument);
    return 1;
  }
  const std::string tt = torchtitan_command(r, m);
  INFO(tt);
  const LaunchCheck ct = check_launch_command(r, run_doc(tt));
  CHECK(ct.stated.empty());
  CHECK(ct.unstated.empty());
  const std::map<std::string, std::string> g = flag_values(tt);
  CHECK(g.at("--parallelism.tensor_parallel_degree") == std::to_string(l.tp));
  CHECK(g.at("--parallelism.context_parallel_degree") == std::to_string(l.cp));
  CHECK(g.at("--parallelism.pipeline_parallel_degree") == std::to_string(l.pp));
  CHECK(g.at("--parallelism.expert_parallel_degree") == std::to_string(l.ep));
  CHECK(g.at("--parallelism.expert_tensor_parallel_degree") == std::to_string(l.effective_etp()));
  CHECK(g.at("--parallelism.data_parallel_shard_degree") == std::to_string(l.dp));
  CHECK(g.at("--activation_checkpoint.mode") == l.recompute.granularity);
  CHECK(g.at(l.pp > 1 ? "--parallelism.pipeline_parallel_microbatch_size" : "--training.local_batch_size") ==
        std::to_string(*l.rows_per_microbatch));
  if (l.pp > 1) {  // VPP: layers per stage x PP x VPP = the model's layers
    CHECK(std::stoi(g.at("--parallelism.pipeline_parallel_layers_per_stage")) * l.pp * l.vpp == m.num_layers);
    CHECK(g.at("--parallelism.pipeline_parallel_schedule") == (l.vpp > 1 ? "Interleaved1F1B" : "1F1B"));
  }
  CHECK(std::stoi(g.at("--nnodes")) * std::stoi(g.at("--nproc_per_node")) == r.gpu.count);
  return 2;
}

}  // namespace

TEST_CASE("plan's search space: CP for long rows, ETP, the dispatchers, selective and block recompute, each proposal "
          "marked with the stacks that run it",
          "[plan][search-space]") {
  const BackendCapabilities torch = torch_backend_capabilities();
  // 64 B200, the seed's request: no CP (8,192-token rows), ETP = TP and allgather within a node, block recompute.
  const LayoutSearch s64 = seed_search(64);
  std::map<std::string, int> seen;
  for (const PlannedLayout& p : s64.ranked) {
    const RecipeLayout& l = p.recipe.layout;
    CHECK(l.cp == 1);
    // allgather only within the 8-GPU NVLink domain, flex (DeepEP) only beyond it.
    if (l.dispatcher == Dispatcher::kAllgather) CHECK(l.ep * l.effective_etp() <= 8);
    if (l.dispatcher == Dispatcher::kFlex) CHECK(l.ep * l.effective_etp() > 8);
    if (l.effective_etp() > 1) CHECK(l.effective_etp() == l.tp);
    if (l.recompute.method == "block") {
      CHECK(l.recompute.num_layers >= 1);
      // fewer than the largest virtual stage's layers (all of them would be full uniform 1's memory)
      const int stage = l.first_stage_layers ? std::max(*l.first_stage_layers, (60 - 2 * *l.first_stage_layers) / (l.pp - 2))
                                             : 60 / l.pp;
      CHECK(l.recompute.num_layers < stage / l.vpp);
    }
    ++seen[l.recompute.granularity + " " + l.recompute.method];
    ++seen[l.effective_etp() > 1 ? "etp" : "etp1"];
    ++seen[to_string(l.dispatcher)];
    CHECK(fits_with_reserve(p.peak_bytes, s64.gpu_memory_bytes, s64.reserve));
    // The torch backend runs exactly the proposals its declaration lists (CP, ETP, dispatcher, recompute).
    const std::vector<StackVerdict> v = proposal_stacks(p.recipe, *find_model("Qwen3.5-397B-A17B"), torch);
    const bool declared = l.cp == 1 && l.effective_etp() == 1 && l.dispatcher == Dispatcher::kAlltoall &&
                          l.recompute.granularity != "selective";
    CHECK(torch_runs(v) == declared);
    CHECK(running_stacks(v).at(declared ? 1 : 0) == "Megatron-LM");
    CHECK_FALSE(v.at(2).runs);  // TorchTitan has no Qwen3.5 model
    CHECK_THAT(v.at(2).why_not, Catch::Contains("no Qwen3.5 / Qwen3-Next model"));
  }
  CHECK(seen["full block"] > 0);
  CHECK(seen["full uniform"] > 0);
  CHECK(seen["etp"] > 0);
  CHECK(seen["allgather"] > 0);
  CHECK(seen["alltoall"] > 0);
  // Recompute only where none does not fit: no layout is proposed both with and without it.
  std::map<std::string, std::set<std::string>> recompute_of;
  for (const PlannedLayout& p : s64.ranked) {
    const RecipeLayout& l = p.recipe.layout;
    recompute_of[l.label + std::to_string(l.max_tokens_per_gpu) + to_string(l.dispatcher)].insert(
        l.recompute.granularity);
  }
  for (const auto& [layout, kinds] : recompute_of) CHECK((kinds.count("none") == 0 || kinds.size() == 1));
  // 131,072-token rows on 64 H200 (case plan-search-space-and-cli): CP proposed, one row per microbatch and at least
  // 4,096 tokens per CP rank; never the torch backend's.
  LayoutRequest req = plan_request_of(*find_model("Qwen3.5-35B-A3B"), "H200", 64, 64, 131072);
  const LayoutSearch lr =
      search_layouts(req, fit_unit_costs(proxy_profiles()), recipe_network(base_recipe(req)), StepTimeOptions{});
  int with_cp = 0;
  for (const PlannedLayout& p : lr.ranked) {
    const RecipeLayout& l = p.recipe.layout;
    if (l.cp == 1) continue;
    ++with_cp;
    CHECK(*l.rows_per_microbatch == 1);
    CHECK(131072 / l.cp >= 4096);
    CHECK_FALSE(torch_runs(proposal_stacks(p.recipe, req.model, torch)));
    CHECK_THAT(proposal_stacks(p.recipe, req.model, torch).front().why_not, Catch::Contains("CP "));
  }
  CHECK(with_cp > 0);
  CHECK_THAT(pruning_rules(LayoutSpace{}, 131072).front(), Catch::Contains("CP up to 32 for rows of 131072 tokens"));
  CHECK_THAT(pruning_rules(LayoutSpace{}, 8192).front(), Catch::Contains("CP > 1 only for rows of 16384 tokens"));
}

TEST_CASE("every proposal of six requests round-trips: Megatron-LM's and TorchTitan's commands through the launch "
          "check, the same fields and no warning",
          "[plan][megatron][torchtitan]") {
  int commands = 0, torchtitan = 0, flex = 0, cp = 0, selective_or_block = 0;
  const auto check_all = [&](const LayoutSearch& s, const ModelConfig& m) {
    REQUIRE_FALSE(s.ranked.empty());
    for (const PlannedLayout& p : s.ranked) {
      const int n = round_trip(p.recipe, m, &p - s.ranked.data() < 5);
      commands += n;
      torchtitan += n - 1;
      flex += p.recipe.layout.dispatcher == Dispatcher::kFlex;
      cp += p.recipe.layout.cp > 1;
      selective_or_block += p.recipe.layout.recompute.granularity == "selective" || p.recipe.layout.recompute.method == "block";
    }
  };
  check_all(seed_search(48), *find_model("Qwen3.5-397B-A17B"));
  check_all(seed_search(64), *find_model("Qwen3.5-397B-A17B"));
  {  // 128 B200: EP 16 spans two nodes, where flex is searched
    const LayoutSearch s = seed_search(128);
    check_all(s, *find_model("Qwen3.5-397B-A17B"));
  }
  {
    LayoutRequest req = plan_request_of(*find_model("Qwen3.5-35B-A3B"), "H200", 64, 64, 131072);
    check_all(search_layouts(req, fit_unit_costs(proxy_profiles()), recipe_network(base_recipe(req)), StepTimeOptions{}),
              req.model);
  }
  for (const char* file : {"llama-3.1-8b.json", "qwen3-30b-a3b.json"}) {  // TorchTitan runs these families
    const ModelConfig m = load_hf_config(test::source_path(std::string("tests/data/hf_configs/") + file));
    check_all(analytical_search(plan_request_of(m, "H100", 16, 256, 8192)), m);
  }
  CHECK(flex > 0);
  CHECK(cp > 0);
  CHECK(selective_or_block > 0);
  CHECK(torchtitan > 20);
  CHECK(commands > 500);
}

TEST_CASE("command switches: the priced switches of a recipe run by its own command are its command's flags",
          "[plan][megatron]") {
  Recipe r;
  r.doc = Json{{"run", "torchrun --nproc-per-node 8 pretrain_gpt.py \\\n  --overlap-grad-reduce \\\n"
                       "  --tensor-model-parallel-size 2 \\\n  --tp-comm-overlap\n"}};
  RunSettings s;
  s.backend = "command";
  command_switches(r, s);
  CHECK(s.overlap_grad_reduce);
  CHECK(s.overlap_tp_comm);
  CHECK_FALSE(s.overlap_param_gather);
  CHECK_FALSE(s.overlap_p2p_comm);
  RunSettings torch;  // the torch backend's switches are its bench block's: the command is not read
  command_switches(r, torch);
  CHECK_FALSE(torch.overlap_grad_reduce);
  CHECK_FALSE(torch.overlap_tp_comm);
  Recipe none;  // no run: command, nothing set
  RunSettings c;
  c.backend = "command";
  command_switches(none, c);
  CHECK_FALSE(c.overlap_grad_reduce);
}

TEST_CASE("the seed's three measured commands round-trip through the launch check with no warning",
          "[plan][megatron][launch]") {
  for (const std::string stem :
       {"attune-48gpu-tp2-pp6-ep8", "attune-tp2-pp8-ep8-vpp2-mt16k", "attune-tp2-pp8-ep8-vpp2-mt8k"}) {
    const std::string file = test::seed_recipe(stem);
    const ValidatedRecipe v = validate_recipe_file(file);
    REQUIRE(v.ok());
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    const SourceDoc doc = parse_yaml(text.str(), file);
    const LaunchCheck c = check_launch_command(*v.recipe, doc, find_model(v.recipe->model));
    INFO(stem);
    CHECK(c.stated.empty());
    CHECK(c.unstated.empty());
    // The command states the layout: its TP, PP, EP and the precision-aware optimizer come back from its flags.
    const std::map<std::string, std::string> f = flag_values(doc.value["run"].get<std::string>());
    CHECK(f.at("--tensor-model-parallel-size") == "2");
    CHECK(f.at("--expert-model-parallel-size") == "8");
    CHECK(f.at("--pipeline-model-parallel-size") == std::to_string(v.recipe->layout.pp));
    CHECK(f.count("--use-precision-aware-optimizer") == 1);
  }
}

TEST_CASE("Megatron-LM's command states the public row's recompute modules and BF16 gradient reduce, and the launch "
          "check reads --grad-reduce-in-bf16 against optimizer.grad_reduce_dtype",
          "[megatron]") {
  const ValidatedRecipe v = validate_recipe_file(
      test::source_path("reports/bench/public-rows-2026-12-06/recipes/gpt-oss-120b-b200-26.04.01-bf16.yaml"));
  REQUIRE(v.ok());
  const std::string cmd = megatron_command(*v.recipe);
  INFO(cmd);
  CHECK(cmd.find("--recompute-granularity selective \\\n") != std::string::npos);
  CHECK(cmd.find("--recompute-modules layernorm moe_act \\\n") != std::string::npos);
  CHECK(cmd.find("--grad-reduce-in-bf16") != std::string::npos);
  const LaunchCheck agree = check_launch_command(*v.recipe, run_doc(cmd));
  CHECK(agree.stated.empty());
  CHECK(agree.unstated.empty());
  // The same command against the recipe with FP32 gradients (the field's default): one disagreement, at the field.
  Recipe fp32 = *v.recipe;
  fp32.optimizer.grad_reduce_dtype = StateDtype::kFp32;
  const LaunchCheck disagree = check_launch_command(fp32, run_doc(cmd));
  REQUIRE(disagree.stated.size() + disagree.unstated.size() == 1);
  const Diagnostic& d = disagree.stated.empty() ? disagree.unstated.front() : disagree.stated.front();
  CHECK(d.path == "optimizer.grad_reduce_dtype");
  INFO(d.to_string());
  CHECK(d.to_string().find("--grad-reduce-in-bf16") != std::string::npos);
  // The seed's default (FP32, Megatron-LM's own with --bf16) writes neither switch.
  CHECK(megatron_command(fp32).find("--grad-reduce-in-bf16") == std::string::npos);
}
