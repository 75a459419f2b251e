// `recipebench plan --model M --gpu TYPE --count N --global-batch B --row-tokens T --profile RECORD...`: every
// layout of the model on those GPUs that passes the layout check and fits the memory plan, predicted by the
// step-time model and ranked; the top K written as proposed recipes (docs/step-time.md, "Planning layouts").
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "backends/torch/torch_backend_registration.h"
#include "catalog/hardware.h"
#include "catalog/hf_config.h"
#include "calibration.h"
#include "commands.h"
#include "option_checks.h"
#include "plan/layout_search.h"
#include "plan/megatron_command.h"
#include "plan/optimizer_traffic.h"
#include "plan/prediction_text.h"
#include "plan/proposal_stacks.h"
#include "plan/torchtitan_command.h"
#include "plan/topology.h"
#include "predict_inputs.h"
#include "recipe/diagnostic.h"
#include "recipe/validate.h"
#include "recipe/yaml_write.h"
#include "settings/switches.h"
#include "util/atomic_file.h"
#include "util/format.h"

namespace recipebench::cli {

namespace {

struct PlanArgs {
  std::string model, gpu, instance, out;
  std::string model_config;  ///< --model-config: a Hugging Face config.json (instead of --model)
  int count = 0, top = 5;
  std::optional<int> per_node;  ///< --per-node; absent: the instance's GPUs
  int64_t global_batch = 0, row_tokens = 0;
  std::vector<std::string> profiles;
  double stack_factor = 1;
  std::vector<std::string> calibrate;  ///< measured runs of the GPU to fit the stack factor on (as predict's)
  std::string format = "text";
  std::optional<double> memory_reserve_gb;  ///< --memory-reserve; absent: the measured reserve
  std::vector<std::string> optimizer_states{"fp32", "bf16_remainder", "bf16_moments"};
};

std::string today_utc() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

void usage_error(const std::string& field, const std::string& found, const std::string& expected) {
  std::cerr << Diagnostic{"<command line>", 0, 0, field, found, expected}.to_string() << "\n";
}

/// "core_attn", "layernorm+moe_act": selective recompute's modules joined by `sep`.
std::string modules_text(const RecipeRecompute& rc, const char* sep) {
  std::string s;
  for (RecomputeModule m : rc.modules) s += (s.empty() ? "" : sep) + to_string(m);
  return s;
}

/// layout.recompute as the recipe writes it: the granularity, for selective its modules, for full its method and
/// layers.
Json recompute_json(const RecipeRecompute& rc) {
  if (rc.granularity == "selective") {
    Json modules = Json::array();
    for (RecomputeModule m : rc.modules) modules.push_back(to_string(m));
    return Json{{"granularity", rc.granularity}, {"modules", modules}};
  }
  if (rc.granularity != "full") return Json{{"granularity", rc.granularity}};
  return Json{{"granularity", rc.granularity}, {"method", rc.method}, {"num_layers", rc.num_layers}};
}

/// The table's short name of a selective recompute module: attn (core_attn), ln (layernorm), act (moe_act), else its
/// recipe name.
std::string module_short(RecomputeModule m) {
  switch (m) {
    case RecomputeModule::kCoreAttn:
      return "attn";
    case RecomputeModule::kLayernorm:
      return "ln";
    case RecomputeModule::kMoeAct:
      return "act";
    default:
      return to_string(m);
  }
}

/// The plan table's recompute column (13 characters): "none", "selective" (core_attn, Megatron-Core's default),
/// "s:attn+ln+act" / "s:ln+act" / "s:act" (other selective module sets, docs/step-time.md "Planning layouts"),
/// "full" (uniform 1 layer: every layer) or "full block 3" / "full uniform 2".
std::string recompute_text(const RecipeRecompute& rc) {
  if (rc.granularity == "selective" && rc.modules != std::vector<RecomputeModule>{RecomputeModule::kCoreAttn}) {
    std::string s;
    for (RecomputeModule m : rc.modules) s += (s.empty() ? "s:" : "+") + module_short(m);
    return s;
  }
  if (rc.granularity != "full" || (rc.method == "uniform" && rc.num_layers == 1)) return rc.granularity;
  return fmt::format("full {} {}", rc.method, rc.num_layers);
}

/// A planned layout's parallel degrees as the recipe's layout block writes them: tp, pp, vpp, cp, ep, etp, dp and
/// sequence_parallel.
Json layout_degrees_json(const RecipeLayout& l) {
  return Json{{"tp", l.tp},   {"pp", l.pp},
              {"vpp", l.vpp}, {"cp", l.cp},
              {"ep", l.ep},   {"etp", l.effective_etp()},
              {"dp", l.dp},   {"sequence_parallel", l.sequence_parallel}};
}

/// A planned layout's layout block: label, summary (selective recompute with its modules), the degrees, layer split,
/// max tokens, rows per microbatch, recompute and dispatcher.
Json planned_layout_json(const Recipe& r) {
  const RecipeLayout& l = r.layout;
  std::string recompute = l.recompute.granularity;
  if (recompute == "selective") recompute += " (" + modules_text(l.recompute, ", ") + ")";
  Json layout{
      {"label", l.label},
      {"summary", fmt::format("proposed by recipebench plan: {}, {} row(s) of {} tokens per microbatch, "
                              "recompute {}, optimizer state {}, dispatcher {}",
                              l.label, *l.rows_per_microbatch, r.workload.row_tokens, recompute,
                              optimizer_state_label(r.optimizer), to_string(l.dispatcher))},
  };
  layout.update(layout_degrees_json(l));
  if (l.first_stage_layers)
    layout["layer_split"] = Json{{"first", *l.first_stage_layers}, {"last", *l.last_stage_layers}};
  layout["max_tokens_per_gpu"] = l.max_tokens_per_gpu;
  layout["rows_per_microbatch"] = *l.rows_per_microbatch;
  layout["recompute"] = recompute_json(l.recompute);
  layout["dispatcher"] = to_string(l.dispatcher);
  return layout;
}

/// A planned layout's prediction block: the figures, when and by what, the profiles and any stack factor.
Json planned_prediction_json(const PlannedLayout& p, const std::vector<std::string>& profiles, double stack_factor) {
  Json prediction{{"tokens_per_s_per_gpu", p.prediction.tokens_per_s_per_gpu},
                  {"step_seconds", p.prediction.step_seconds}};
  if (p.prediction.mfu) prediction["mfu"] = *p.prediction.mfu;
  if (p.prediction.usd_per_million_tokens) prediction["usd_per_million_tokens"] = *p.prediction.usd_per_million_tokens;
  prediction["gpu_hours"] = p.prediction.gpu_hours;
  prediction["predicted"] = today_utc();
  prediction["by"] = "recipebench " RECIPEBENCH_VERSION " (commit " RECIPEBENCH_GIT_COMMIT ") plan";
  prediction["profiles"] = profiles;
  if (stack_factor != 1) prediction["stack_factor"] = stack_factor;
  return prediction;
}

/// The recipe document of a planned layout: the fields validate reads, the layout, the bench switches the
/// prediction assumed, and the prediction block.
Json planned_doc(const PlannedLayout& p, const std::vector<std::string>& profiles, double stack_factor, bool torch,
                 const ModelConfig& m) {
  const Recipe& r = p.recipe;
  Json gpu{{"type", r.gpu.type}, {"memory_gb", r.gpu.memory_gb}, {"count", r.gpu.count}, {"per_node", r.gpu.per_node}};
  if (!r.gpu.instance.empty()) gpu["instance"] = r.gpu.instance;
  // A layout the torch backend runs is a torch recipe with the switches predicted; another is the command
  // backend's, its Megatron-LM command in `run` (the switches are that command's flags).
  Json bench{{"backend", torch ? "torch" : "command"}};
  if (torch) bench.update(bench_switches_json(r.bench));
  Json optimizer = Json::object();  // the state form planned; absent fields are the FP32 defaults
  if (r.optimizer.master_weights == MasterWeights::kBf16Remainder) optimizer["master_weights"] = "bf16_remainder";
  if (r.optimizer.exp_avg_dtype == StateDtype::kBf16) optimizer["exp_avg_dtype"] = "bf16";
  if (r.optimizer.exp_avg_sq_dtype == StateDtype::kBf16)
    optimizer["exp_avg_sq_dtype"] = "bf16";  // the switches the prediction priced, as the table writes them
  Json doc{{"schema_version", 1},
           {"model", r.model},
           {"gpu", gpu},
           {"author", Json{{"name", "recipebench plan"}}},
           {"status", "proposed"},
           {"workload", Json{{"row_tokens", r.workload.row_tokens},
                             {"rows", r.workload.rows},
                             {"global_batch", r.workload.global_batch},
                             {"precision", r.workload.precision}}},
           {"layout", planned_layout_json(r)}};
  if (r.model_params && r.model_params->config) doc["model_params"] = Json{{"config", *r.model_params->config}};
  if (!optimizer.empty()) doc["optimizer"] = optimizer;
  doc["run"] = megatron_command(r);  // the layout for Megatron-LM; validate's launch check holds it to the fields
  if (torchtitan_refusals(r, m).empty()) doc["x-torchtitan-run"] = torchtitan_command(r, m);
  doc["bench"] = bench;
  doc["prediction"] = planned_prediction_json(p, profiles, stack_factor);
  return doc;
}

/// Max tokens per GPU exactly: in units of 1,024 when whole (8192 -> "8k"), else the count (400 -> "400", 1536 ->
/// "1536"), so two layouts never share a label.
std::string tokens_label(int64_t tokens) {
  return tokens % 1024 == 0 ? fmt::format("{}k", tokens / 1024) : std::to_string(tokens);
}

std::string file_name(const Recipe& r) {
  std::string name = fmt::format("plan-tp{}-pp{}", r.layout.tp, r.layout.pp);
  if (r.layout.vpp > 1) name += fmt::format("-vpp{}", r.layout.vpp);
  if (r.layout.cp > 1) name += fmt::format("-cp{}", r.layout.cp);
  name += fmt::format("-ep{}", r.layout.ep);
  if (r.layout.effective_etp() > 1) name += fmt::format("-etp{}", r.layout.effective_etp());
  name += fmt::format("-dp{}", r.layout.dp);
  if (r.layout.dispatcher != Dispatcher::kAlltoall) name += "-" + to_string(r.layout.dispatcher);
  if (r.layout.first_stage_layers) name += fmt::format("-split{}", *r.layout.first_stage_layers);
  name += "-mt" + tokens_label(r.layout.max_tokens_per_gpu);
  const RecipeRecompute& rc = r.layout.recompute;
  if (rc.granularity == "selective")  // the default core_attn alone: "-selective"
    name += rc.modules == std::vector<RecomputeModule>{RecomputeModule::kCoreAttn} ? "-selective"
                                                                                   : "-selective-" + modules_text(rc, "-");
  if (rc.granularity == "full")
    name += rc.method == "block" ? fmt::format("-recompute-block{}", rc.num_layers) : "-recompute";
  if (r.optimizer.master_weights == MasterWeights::kBf16Remainder)
    name += r.optimizer.exp_avg_dtype == StateDtype::kBf16 ? "-bf16moments" : "-bf16rem";
  return name + ".yaml";
}

/// plan's largest --count: the search builds a rank map of every GPU for each layout, so its time grows with the
/// count (2 cores, 397B on B200: 1.1 s at 16,384 GPUs, 3.0 s at 131,072; at 2^20, ~25 s). Refused above it at once,
/// as a usage error (issue 49, plan-count-limit-takes-minutes).
constexpr int kMaxPlanGpus = 1 << 17;

/// Bytes left beside a layout's peak and its reserve on a GPU of `gpu_bytes`, in GB.
double spare_gb(double gpu_bytes, double peak, double reserve) { return (gpu_bytes - peak - reserve) / 1e9; }

std::string row_text(size_t i, const PlannedLayout& p, double gpu_bytes) {
  const RecipeLayout& l = p.recipe.layout;
  return fmt::format(
      "  {:>2}  {:<44} {:>6} {:>13}  {:<9} {:<14} {:>6.1f} {:>6.1f}  {:>7.3f}  {:>10}  {:>5}  {:>6}", i + 1, l.label,
      tokens_label(l.max_tokens_per_gpu), recompute_text(l.recompute), to_string(l.dispatcher),
      to_string(p.optimizer_form), p.peak_bytes / 1e9,
      spare_gb(gpu_bytes, p.peak_bytes, p.reserve_bytes), p.prediction.step_seconds,
      fixed(p.prediction.tokens_per_s_per_gpu, 1),
      p.prediction.mfu ? fmt::format("{:.1f}%", *p.prediction.mfu * 100) : "-",
      p.prediction.usd_per_million_tokens ? fmt::format("{:.2f}", *p.prediction.usd_per_million_tokens) : "-");
}

/// Up to five (reason, layouts) lines, most frequent first.
void print_reasons(const std::vector<std::pair<std::string, int64_t>>& reasons) {
  for (size_t i = 0; i < reasons.size() && i < 5; ++i)
    std::cout << fmt::format("    {} ({})\n", reasons[i].first, counted(reasons[i].second, "layout"));
}

/// Why no layout serves the request: the layout check's most frequent refusals, why the layouts that fit the memory
/// were not predicted, or the closest layouts over memory.
void print_no_layout(const LayoutSearch& search) {
  std::cout << "  no layout serves this request:";
  if (search.layout_ok == 0) {
    std::cout << " no layout passes the layout check; its refusals, most frequent first:\n";
    print_reasons(search.refusals);
    return;
  }
  if (search.fit > 0) {
    std::cout << fmt::format(" none of the {} that fit the memory could be predicted; why, most frequent first:\n",
                             counted(search.fit, "layout"));
    print_reasons(search.unpredicted);
    return;
  }
  std::cout << " none fits the GPU's memory with the reserve beside its peak; the closest (with the smallest "
               "optimizer state searched):\n";
  for (const MemoryMiss& m : search.closest)
    std::cout << fmt::format("    {} {} {} {}: peak {:.1f} GB + reserve {:.1f} GB of {:.0f} ({})\n",
                             m.recipe.layout.label, tokens_label(m.recipe.layout.max_tokens_per_gpu),
                             recompute_text(m.recipe.layout.recompute), to_string(m.optimizer_form), m.peak_bytes / 1e9,
                             m.reserve_bytes / 1e9, search.gpu_memory_bytes / 1e9,
                             m.inside_reserve ? "inside the reserve" : "largest term: " + m.largest_term);
}

/// The stacks that run `r`'s layout (plan/proposal_stacks.h): recipebench's torch backend by its declared
/// capabilities (backends/torch/torch_backend_registration.h), Megatron-LM, TorchTitan.
std::vector<StackVerdict> stacks_for(const Recipe& r, const ModelConfig& m) {
  return proposal_stacks(r, m, torch_backend_capabilities());
}

/// "recipebench torch, Megatron-LM; not TorchTitan: <its first reason> (+N more)" for one proposal.
std::string stacks_line(const std::vector<StackVerdict>& verdicts) {
  std::string runs, not_runs;
  for (const StackVerdict& v : verdicts) {
    if (v.runs) {
      runs += (runs.empty() ? "" : ", ") + std::string(to_string(v.stack));
      continue;
    }
    const size_t cut = v.why_not.find("; ");
    const size_t more = static_cast<size_t>(std::count(v.why_not.begin(), v.why_not.end(), ';'));
    not_runs += fmt::format("; not {}: {}{}", to_string(v.stack), v.why_not.substr(0, cut),
                            more > 0 ? fmt::format(" (+{} more)", more) : "");
  }
  return runs + not_runs;
}

/// Every line of `text` with `prefix` before it.
std::string indented(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    out += prefix + text.substr(start, end - start + 1);
  return out;
}

/// Each of the top `top` layouts' commands: Megatron-LM's, and TorchTitan's where it runs the layout (else why not).
void print_commands(const LayoutSearch& search, size_t top, const ModelConfig& m) {
  for (size_t i = 0; i < top; ++i) {
    const Recipe& r = search.ranked[i].recipe;
    std::cout << fmt::format("  #{} run: (Megatron-LM)\n", i + 1) << indented(megatron_command(r), "    ");
    const std::vector<std::string> tt = torchtitan_refusals(r, m);
    if (tt.empty())
      std::cout << fmt::format("  #{} run: (TorchTitan)\n", i + 1) << indented(torchtitan_command(r, m), "    ");
    else
      std::cout << fmt::format("  #{} TorchTitan: not this layout: {}\n", i + 1, tt.front());
  }
}

/// The top `top` layouts, each one's breakdown, and the assumptions of the first.
void print_ranked(const LayoutSearch& search, size_t top, const ModelConfig& m) {
  std::cout << "   #  layout                                       max tok     recompute  dispatch  optimizer      peak GB  spare   "
               "step s  tokens/s/GPU    MFU  $/1M\n";
  for (size_t i = 0; i < top; ++i) std::cout << row_text(i, search.ranked[i], search.gpu_memory_bytes) << "\n";
  std::cout << "  stacks that run each row (recipebench torch by its declared capabilities; Megatron-LM runs every "
               "layout searched):\n";
  for (size_t i = 0; i < top; ++i)
    std::cout << fmt::format("  {:>2}  {}\n", i + 1, stacks_line(stacks_for(search.ranked[i].recipe, m)));
  std::cout << "  where each step goes (the rank that ends last, seconds per step):\n";
  for (size_t i = 0; i < top; ++i) {
    const StepPrediction& p = search.ranked[i].prediction;
    std::cout << fmt::format("  {:>2}  pp {}: {}\n", i + 1, p.critical_pp_rank,
                             breakdown_line(p.ranks.at(static_cast<size_t>(p.critical_pp_rank))));
  }
  std::cout << "  assumptions:\n";
  for (const std::string& a : search.ranked.front().prediction.assumptions) std::cout << "    - " << a << "\n";
  print_commands(search, top, m);
}

/// The top `top` layouts written into args.out as proposed recipes (atomically), by rank, each one's path: a layout
/// the torch backend runs as a torch recipe; another (never a torch recipe) as the command backend's, its Megatron-LM
/// command as `run`.
std::vector<std::string> write_planned(const LayoutSearch& search, size_t top, const LoadedProfiles& loaded,
                                       const PlanArgs& args, const ModelConfig& m) {
  std::vector<std::string> profile_files, paths;
  for (const ProfiledRank& r : loaded.ranks) profile_files.push_back(r.source);
  std::vector<std::pair<std::string, std::string>> files;
  std::set<std::string> taken;
  for (size_t i = 0; i < top; ++i) {
    const bool torch = torch_runs(stacks_for(search.ranked[i].recipe, m));
    // One file per ranked layout: a name already taken by a better-ranked layout gets the rank ("-n3").
    std::string name = file_name(search.ranked[i].recipe);
    if (!taken.insert(name).second) {
      name = name.substr(0, name.size() - 5) + "-n" + std::to_string(i + 1) + ".yaml";
      taken.insert(name);
    }
    paths.push_back((std::filesystem::path(args.out) / name).string());
    files.push_back({paths.back(),
                     "# Proposed by recipebench plan: a predicted layout, not a measurement (docs/step-time.md).\n" +
                         std::string(torch ? "" : "# For Megatron-LM (the command backend runs its run: command); "
                                                  "recipebench's torch backend does not run this layout.\n") +
                         yaml_text(planned_doc(search.ranked[i], profile_files, args.stack_factor, torch, m))});
  }
  write_files_atomically(files);
  return paths;
}

/// The reserve's rule in words: "3.0 GB + 8% of the peak" (measured) or "10.0 GB (--memory-reserve)".
std::string reserve_rule(const MemoryReserve& r) {
  if (r.stated) return fmt::format("{:.1f} GB (--memory-reserve)", r.fixed_bytes / 1e9);
  return fmt::format("{:.1f} GB + {:.0f}% of the peak (measured; docs/memory-plan.md, \"Reserve\")",
                     r.fixed_bytes / 1e9, r.fraction * 100);
}

/// "8 per node on AWS p5en.48xlarge" or "4 per node, NVLink domain 72 on AWS p6e-gb200.36xlarge".
std::string topology_text(const Recipe& base) {
  const InstanceSpec* inst = find_instance(base.gpu.instance);
  const int island = nvlink_island(inst, base.gpu.per_node);
  std::string s = fmt::format("{} per node", base.gpu.per_node);
  if (island != base.gpu.per_node) s += fmt::format(", NVLink domain {}", island);
  if (inst != nullptr) s += " on " + inst->label();
  return s;
}

/// Whether `count` GPUs fill whole nodes of `per_node` (fewer than a node: one node of them); else a located usage
/// error naming the node size's source and the per-node values that would divide `count`.
bool whole_nodes(int count, int per_node, bool stated) {
  if (count <= per_node || count % per_node == 0) return true;
  std::string divisors;
  for (int d = 2; d <= std::min(count, 72); ++d)
    if (count % d == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(d);
  usage_error("--count", fmt::format("{} GPUs", count),
              fmt::format("whole nodes of {} GPUs ({}): {}, {}, ...; or --per-node with a divisor of {} ({})", per_node,
                          stated ? "--per-node" : "the instance's", per_node * (count / per_node),
                          per_node * (count / per_node + 1), count, divisors));
  return false;
}

/// The instance `args` names (--instance), else the GPU's default (nullptr when it has none), into `inst`; false
/// (a located usage error printed) for an instance the catalog lacks or one of another GPU than --gpu, with the
/// catalog's instances of that GPU.
bool plan_instance(const PlanArgs& args, const GpuSpec& gpu, const InstanceSpec*& inst) {
  inst = args.instance.empty() ? default_instance_for_gpu(gpu.name) : find_instance(args.instance);
  if (inst != nullptr && inst->gpu == gpu.name) return true;
  if (args.instance.empty()) return true;  // a GPU without a default instance
  std::string names;
  for (const InstanceSpec& i : instance_catalog())
    if (i.gpu == gpu.name) names += (names.empty() ? "" : ", ") + i.name;
  const std::string expected =
      "an instance of the catalog with " + gpu.name + " GPUs (--gpu)" + (names.empty() ? "" : ": " + names);
  usage_error("--instance", inst == nullptr ? args.instance : "'" + inst->label() + "' (" + inst->gpu + " GPUs)",
              expected);
  return false;
}

/// The request of `args` with its model and GPU from the catalogs; nullopt (a located usage error printed) when
/// either is unknown.
/// The model of `args`: --model-config's config.json (the formula of its family, as `models --config` counts it)
/// or --model's registry entry; nullopt (a located error printed) when neither gives one.
std::optional<ModelConfig> plan_model(const PlanArgs& args) {
  if (!args.model_config.empty()) {
    try {
      // Named by the file's stem (llama-3.1-70b.json: llama-3.1-70b), or by its architectures[0] for a file named
      // config.json (a Hugging Face snapshot's), as load_hf_config names it.
      ModelConfig m = load_hf_config(args.model_config);
      const std::string stem = std::filesystem::path(args.model_config).stem().string();
      if (stem != "config" && !stem.empty()) m.name = stem;
      return m;
    } catch (const std::invalid_argument& e) {  // located: "FILE:line:col: error: field: found, expected ..."
      std::cerr << "recipebench plan: " << e.what() << "\n";
    }
    return std::nullopt;
  }
  if (const ModelConfig* model = find_model(args.model)) return *model;
  std::string names;
  for (const ModelConfig& m : model_registry()) names += (names.empty() ? "" : ", ") + m.name;
  usage_error("--model", args.model,
              "a model of the registry (" + names + "), or --model-config FILE for a Hugging Face config.json");
  return std::nullopt;
}

std::optional<LayoutRequest> plan_request(const PlanArgs& args) {
  const std::optional<ModelConfig> model = plan_model(args);
  if (!model) return std::nullopt;
  const GpuSpec* gpu = find_gpu(args.gpu);
  if (gpu == nullptr) {
    std::string names;
    for (const GpuSpec& g : gpu_catalog()) names += (names.empty() ? "" : ", ") + g.name;
    usage_error("--gpu", args.gpu, "a GPU of the catalog (" + names + ")");
    return std::nullopt;
  }
  const InstanceSpec* inst = nullptr;
  if (!plan_instance(args, *gpu, inst)) return std::nullopt;
  LayoutRequest req;
  req.model = *model;
  req.gpu = gpu->name;
  req.count = args.count;
  // GPUs per node: --per-node, else the instance's (GB200: 4), else 8 (docs/catalog.md).
  req.per_node = args.per_node.value_or(inst != nullptr ? inst->gpus : 8);
  if (!whole_nodes(args.count, req.per_node, args.per_node.has_value())) return std::nullopt;
  req.global_batch = args.global_batch;
  req.row_tokens = args.row_tokens;
  req.instance = args.instance;
  if (!args.model_config.empty())
    req.model_config = std::filesystem::absolute(args.model_config).lexically_normal().string();
  if (args.memory_reserve_gb) req.reserve = stated_reserve(*args.memory_reserve_gb);
  return req;
}

/// "; N of them predicted, M not: <the most frequent reason>" when a layout that fits was not predicted, else "".
std::string unpredicted_text(const LayoutSearch& search) {
  if (search.unpredicted.empty()) return "";
  return fmt::format("; {} of them predicted, {} not: {}", search.predicted, search.fit - search.predicted,
                     search.unpredicted.front().first);
}

/// The header: the request, the counts, the reserve and the search's time; then the space searched and left out.
void print_header(const PlanArgs& args, const Recipe& base, const LayoutSearch& search, const LayoutSpace& space,
                  double seconds) {
  std::cout << fmt::format(
      "recipebench plan: {} on {} x {} ({}), global batch {} rows of {} tokens\n  {} layouts considered, {} "
      "pass the layout check, {} fit {:.0f} GB by the memory plan (with recompute, once per choice that fits) "
      "with a reserve of {} beside the peak ({} more fit only inside it){}; searched in {:.2f} s\n",
      base.model, args.count, base.gpu.type, topology_text(base), args.global_batch, args.row_tokens, search.considered,
      search.layout_ok, search.fit, search.gpu_memory_bytes / 1e9, reserve_rule(search.reserve), search.inside_reserve,
      unpredicted_text(search), seconds);
  std::cout << "  searched:\n";
  for (const std::string& d : searched_dimensions(space, search.nvlink_gpus)) std::cout << "    - " << d << "\n";
  std::cout << "  not searched:\n";
  for (const std::string& d : left_out_dimensions()) std::cout << "    - " << d << "\n";
  std::cout << "  pruned:\n";
  for (const std::string& d : pruning_rules(space, args.row_tokens)) std::cout << "    - " << d << "\n";
}

/// One proposal as JSON: its rank, layout fields, optimizer state, memory, the stacks that run it, the prediction.
Json proposal_json(size_t i, const PlannedLayout& p, double gpu_bytes, const ModelConfig& m) {
  const RecipeLayout& l = p.recipe.layout;
  Json layout{{"label", l.label}};
  layout.update(layout_degrees_json(l));
  layout.update(Json{{"max_tokens_per_gpu", l.max_tokens_per_gpu},
                     {"rows_per_microbatch", *l.rows_per_microbatch},
                     {"recompute", recompute_json(l.recompute)},
                     {"dispatcher", to_string(l.dispatcher)}});
  layout["layer_split"] =
      l.first_stage_layers ? Json{{"first", *l.first_stage_layers}, {"last", *l.last_stage_layers}} : Json(nullptr);
  const std::vector<StackVerdict> stacks = stacks_for(p.recipe, m);
  Json not_stacks = Json::object();  // stack -> why it cannot run the layout
  for (const StackVerdict& v : stacks)
    if (!v.runs) not_stacks[to_string(v.stack)] = v.why_not;
  return Json{{"rank", i + 1},
              {"layout", layout},
              {"optimizer_state", to_string(p.optimizer_form)},
              {"bench", bench_switches_json(p.recipe.bench)},
              {"peak_bytes", p.peak_bytes},
              {"reserve_bytes", p.reserve_bytes},
              {"spare_bytes", gpu_bytes - p.peak_bytes - p.reserve_bytes},
              {"stacks", running_stacks(stacks)},
              {"not_stacks", not_stacks},
              {"run", megatron_command(p.recipe)},
              {"torchtitan_run", torchtitan_refusals(p.recipe, m).empty() ? Json(torchtitan_command(p.recipe, m))
                                                                          : Json(nullptr)},
              {"prediction", prediction_to_json(p.prediction)}};
}

/// The whole answer as JSON (schema recipebench-plan/1, beside predict's recipebench-prediction/1).
Json plan_json(const PlanArgs& args, const Recipe& base, const ModelConfig& model, const LayoutSearch& search,
               const LayoutSpace& space, size_t top, double seconds) {
  Json proposals = Json::array(), closest = Json::array();
  for (size_t i = 0; i < top; ++i)
    proposals.push_back(proposal_json(i, search.ranked[i], search.gpu_memory_bytes, model));
  for (const MemoryMiss& m : search.closest)
    closest.push_back(Json{{"layout", m.recipe.layout.label},
                           {"max_tokens_per_gpu", m.recipe.layout.max_tokens_per_gpu},
                           {"recompute", recompute_json(m.recipe.layout.recompute)},
                           {"optimizer_state", to_string(m.optimizer_form)},
                           {"peak_bytes", m.peak_bytes},
                           {"reserve_bytes", m.reserve_bytes},
                           {"inside_reserve", m.inside_reserve},
                           {"largest_term", m.largest_term}});
  Json refusals = Json::object();
  for (const auto& [field, n] : search.refusals) refusals[field] = n;
  Json unpredicted = Json::object();
  for (const auto& [why, n] : search.unpredicted) unpredicted[why] = n;
  return Json{{"schema", "recipebench-plan/1"},
              {"model", base.model},
              {"memory_plan", model.family == ModelFamily::kQwen35 ? "torch backend" : "analytical"},
              {"gpu", Json{{"type", base.gpu.type},
                           {"count", base.gpu.count},
                           {"per_node", base.gpu.per_node},
                           {"nvlink_gpus", search.nvlink_gpus},
                           {"instance", base.gpu.instance},
                           {"memory_bytes", search.gpu_memory_bytes}}},
              {"workload", Json{{"global_batch", args.global_batch}, {"row_tokens", args.row_tokens}}},
              {"reserve", Json{{"rule", reserve_rule(search.reserve)},
                               {"fixed_bytes", search.reserve.fixed_bytes},
                               {"fraction_of_peak", search.reserve.fraction}}},
              {"searched", searched_dimensions(space, search.nvlink_gpus)},
              {"not_searched", left_out_dimensions()},
              {"pruned", pruning_rules(space, args.row_tokens)},
              {"counts", Json{{"considered", search.considered},
                              {"layout_ok", search.layout_ok},
                              {"fit", search.fit},
                              {"predicted", search.predicted},
                              {"inside_reserve", search.inside_reserve}}},
              {"search_seconds", seconds},
              {"refusals", refusals},
              {"unpredicted", unpredicted},
              {"proposals", proposals},
              {"closest", closest}};
}

/// The search of `req` from the profiles of `args`; nullopt (the reason printed) when profiles or the model refuse.
/// With --calibrate, the stack factor fitted on the measured runs (said on stderr) replaces args.stack_factor.
std::optional<LayoutSearch> plan_search(PlanArgs& args, const LayoutRequest& req, const Recipe& base,
                                        const LayoutSpace& space, std::optional<LoadedProfiles>& loaded, int& rc) {
  const bool torch_family = req.model.family == ModelFamily::kQwen35;  // only the torch backend's are profiled
  if (!torch_family && !args.profiles.empty()) {
    usage_error("--profile", std::to_string(args.profiles.size()) + " given",
                "none for " + req.model.name + " " + family_clause(req.model) +
                    " (no backend of recipebench profiles it; the analytical mode times it)");
    rc = kUsage;
    return std::nullopt;
  }
  loaded = load_profiles(args.profiles, req.model.name);
  rc = kFailed;
  if (!loaded) return std::nullopt;
  if (!torch_family) {
    std::cerr << "recipebench plan: " << req.model.name << " " << family_clause(req.model)
              << ", which no recipebench backend builds: the layouts are ranked by the analytical mode (its layer "
                 "kinds' work at the catalog's efficiencies, nothing measured; docs/step-time.md, Modes) and held to "
                 "the analytical memory plan (docs/memory-plan.md, \"Analytical plan\")\n";
  } else if (loaded->ranks.empty())
    std::cerr << "recipebench plan: no profile of " << req.model.name << " among the " << args.profiles.size()
              << " given: "
              << (loaded->family_ranks.empty()
                      ? "the layouts are ranked by the analytical mode (the catalog's efficiencies, nothing measured)"
                      : "the profiles of " + loaded->family_ranks.front().model +
                            " (another size of the family) time it at its widths")
              << " (docs/step-time.md, Modes); profile one rank of each kind of a layout with `recipebench run "
                 "RECIPE --emulate-rank R --profile` for a measured ranking\n";
  if (!args.calibrate.empty()) {  // as predict's (cli/calibration.h): each run predicted as the candidates are
    const std::optional<Calibration> fitted = fit_calibration(args.calibrate, base, req.model, *loaded);
    if (!fitted) {
      rc = kUsage;
      return std::nullopt;
    }
    args.stack_factor = fitted->stack_factor;
    for (const std::string& line : calibration_lines(*fitted)) std::cerr << "recipebench plan: " << line << "\n";
  }
  try {
    // One row per microbatch, TP 1, EP 1: the analytical mode's setup only; each layout's costs are read again at its
    // own shape when it is timed (plan/analytical_costs.h analytical_costs_at_layout), as predict times its recipe.
    ChunkShape shape;
    shape.tokens = shape.row_tokens = req.row_tokens;
    const PredictSetup setup = prediction_setup(base, req.model, shape, *loaded, args.stack_factor);
    return search_layouts(req, setup.costs, setup.network, setup.options, space);
  } catch (const std::invalid_argument& e) {
    std::cerr << "recipebench plan: error: " << e.what() << "\n";
    return std::nullopt;
  }
}

int run_plan(PlanArgs args) {
  if (args.model.empty() == args.model_config.empty()) {
    usage_error("--model", "absent", "--model NAME or --model-config FILE");
    return kUsage;
  }
  if (!args.out.empty() && refuse_output_folder(args.out)) return kUsage;  // before the search
  const std::optional<LayoutRequest> request = plan_request(args);
  if (!request) return kUsage;
  Recipe base;
  try {
    base = base_recipe(*request);
  } catch (const std::invalid_argument& e) {
    usage_error("--instance", args.instance, e.what());
    return kUsage;
  }
  LayoutSpace space;
  space.optimizer_forms.clear();
  for (const std::string& name : args.optimizer_states) space.optimizer_forms.push_back(*optimizer_form_named(name));
  const auto started = std::chrono::steady_clock::now();
  std::optional<LoadedProfiles> loaded;
  int rc = kFailed;
  const std::optional<LayoutSearch> search = plan_search(args, *request, base, space, loaded, rc);
  if (!search) return rc;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const size_t top = std::min(search->ranked.size(), static_cast<size_t>(std::max(1, args.top)));
  std::vector<std::string> paths;
  if (!search->ranked.empty() && !args.out.empty()) paths = write_planned(*search, top, *loaded, args, request->model);
  if (args.format == "json") {
    Json j = plan_json(args, base, request->model, *search, space, top, seconds);
    for (size_t i = 0; i < paths.size(); ++i)
      j["proposals"][i]["file"] = paths[i].empty() ? Json(nullptr) : Json(paths[i]);
    std::cout << j.dump(2) << "\n";
    return search->ranked.empty() ? kFailed : kOk;
  }
  print_header(args, base, *search, space, seconds);
  if (search->ranked.empty()) {
    print_no_layout(*search);
    return kFailed;
  }
  print_ranked(*search, top, request->model);
  for (size_t i = 0; i < paths.size(); ++i)
    std::cout << "  wrote " << paths[i]
              << (torch_runs(stacks_for(search->ranked[i].recipe, request->model))
                      ? ""
                      : " (for Megatron-LM, bench.backend command: recipebench's torch backend does not run it)")
              << "\n";
  return kOk;
}

}  // namespace

void add_plan_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand("plan",
                                 "Rank every layout of a model on N GPUs that fits, by predicted tokens/s/GPU, "
                                 "and write the best as proposed recipes (docs/step-time.md)");
  auto args = std::make_shared<PlanArgs>();
  auto* model = cmd->add_option("--model", args->model, "Registry model (recipebench models)");
  auto* config = cmd->add_option("--model-config", args->model_config,
                                 "Hugging Face config.json of the model instead of a registry name (the families "
                                 "`recipebench models --config` counts; timed by the analytical mode)")
                     ->check(existing_file("a Hugging Face config.json"));
  model->excludes(config);
  config->excludes(model);
  cmd->add_option("--gpu", args->gpu,
                  "GPU of the hardware catalog, by name or alias (docs/catalog.md; --catalog FILE adds your own)")
      ->required();
  cmd->add_option("--count", args->count, "GPUs (at most 131,072: the search's time grows with the GPUs)")
      ->required()
      ->check(integer_in(1, kMaxPlanGpus));
  cmd->add_option("--global-batch", args->global_batch, "Rows per optimizer step")
      ->required()
      ->check(integer_in(1, 1LL << 40));
  cmd->add_option("--row-tokens", args->row_tokens, "Tokens per row")
      ->required()
      ->check(integer_in(1, 1LL << 30));
  cmd->add_option("--per-node", args->per_node,
                  "GPUs per node (default: the instance's, e.g. 4 for GB200, 8 for HGX; its NVLink domain from the "
                  "catalog, 72 for NVL72)")
      ->check(integer_in(1, 1024));
  cmd->add_option("--instance", args->instance, "Catalog instance (default: the GPU's)");
  cmd->add_option("--top", args->top, "Layouts shown and written (default 5)")->check(integer_in(1, 1000));
  cmd->add_option("--out", args->out, "Write the top layouts as proposed recipes into this folder");
  cmd->add_option("--profile", args->profiles, "Profiles of the model (run records of `run --profile`)")
      ->check(existing_file("a run record of `run --profile` (*.json)"));
  cmd->add_option("--memory-reserve", args->memory_reserve_gb,
                  "GB held back beside each layout's planned peak (CUDA context, NCCL buffers, the plan's error); "
                  "default: 3 GB + 8% of the peak, measured (docs/memory-plan.md, \"Reserve\")")
      ->check(number_from_to(0, 1e4));
  cmd->add_option("--optimizer-state", args->optimizer_states,
                  "Optimizer-state forms searched, tried in this order per layout (default: fp32 bf16_remainder "
                  "bf16_moments; docs/optimizer.md)")
      ->check(CLI::IsMember({"fp32", "bf16_remainder", "bf16_moments"}));
  cmd->add_option("--format", args->format, "text or json (schema recipebench-plan/1; docs/step-time.md)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--stack-factor", args->stack_factor, "Multiply every compute second by this (0.01 to 100)")
      ->check(number_from_to(kMinStackFactor, kMaxStackFactor));
  cmd->add_option("--calibrate", args->calibrate,
                  "Measured runs of --gpu to fit the stack factor on, as predict's: recipes with a measured result "
                  "or run records of whole runs (ours or imported)")
      ->check(existing_file("a recipe with a measured result or a run record"))
      ->excludes("--stack-factor");
  cmd->callback([&run, args] { run = [args] { return run_plan(*args); }; });
}

}  // namespace recipebench::cli
