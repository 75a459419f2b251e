#include "recipe/launch_check.h"

#include <charconv>
#include <cmath>
#include <optional>

#include "util/format.h"

namespace recipebench {

namespace {

/// Splits `command` into words with the line each starts on; comments dropped, continuations joined.
std::vector<std::pair<std::string, int>> words(const std::string& command) {
  std::vector<std::pair<std::string, int>> out;
  std::string word;
  int line = 1, word_line = 1;
  bool comment = false;
  auto end_word = [&] {
    if (!word.empty()) out.emplace_back(word, word_line);
    word.clear();
  };
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == '\n') {
      end_word();
      comment = false;
      ++line;
    } else if (comment) {
      continue;
    } else if (c == '\\' && i + 1 < command.size() && command[i + 1] == '\n') {
      end_word();
    } else if (c == ' ' || c == '\t' || c == '\r') {
      end_word();
    } else if (c == '#' && word.empty()) {
      comment = true;
    } else {
      if (word.empty()) word_line = line;
      word += c;
    }
  }
  end_word();
  return out;
}

bool is_flag(const std::string& w) { return w.size() > 2 && w.compare(0, 2, "--") == 0; }

bool is_literal(const std::string& v) { return v.find_first_of("$`'\"") == std::string::npos; }

enum class FlagKind { kInt, kNumber, kWord, kSwitch };

/// One launch flag that states a recipe field: where the field is, how to compare, and the recipe's value as text.
struct FieldFlag {
  const char* flag;
  const char* pointer;  ///< the recipe field's JSON pointer
  FlagKind kind;
  std::string (*recipe_value)(const Recipe&);  ///< "" when the recipe leaves the field absent
};

/// The recipe's value of layout field `F` (an integer) as text.
template <auto F>  // a pointer to an integer member of RecipeLayout
std::string layout_int(const Recipe& r) {
  return std::to_string(r.layout.*F);
}

/// The recipe's value of optimizer field `F` (a number) as its shortest round-trip text.
template <double RecipeOptimizer::*F>
std::string optimizer_number(const Recipe& r) {
  return shortest(r.optimizer.*F);
}

template <typename T>
std::string opt(const std::optional<T>& v) {
  return v ? std::to_string(*v) : "";
}

/// Megatron-LM's, slime's and torchrun's flags that state a recipe field (their names as the tools spell them).
const FieldFlag kFieldFlags[] = {
    {"--tensor-model-parallel-size", "/layout/tp", FlagKind::kInt, layout_int<&RecipeLayout::tp>},
    {"--pipeline-model-parallel-size", "/layout/pp", FlagKind::kInt, layout_int<&RecipeLayout::pp>},
    {"--num-virtual-stages-per-pipeline-rank", "/layout/vpp", FlagKind::kInt, layout_int<&RecipeLayout::vpp>},
    {"--virtual-pipeline-model-parallel-size", "/layout/vpp", FlagKind::kInt, layout_int<&RecipeLayout::vpp>},
    {"--context-parallel-size", "/layout/cp", FlagKind::kInt, layout_int<&RecipeLayout::cp>},
    {"--expert-model-parallel-size", "/layout/ep", FlagKind::kInt, layout_int<&RecipeLayout::ep>},
    {"--expert-tensor-parallel-size", "/layout/etp", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.layout.effective_etp()); }},
    {"--decoder-first-pipeline-num-layers", "/layout/layer_split/first", FlagKind::kInt,
     [](const Recipe& r) { return opt(r.layout.first_stage_layers); }},
    {"--decoder-last-pipeline-num-layers", "/layout/layer_split/last", FlagKind::kInt,
     [](const Recipe& r) { return opt(r.layout.last_stage_layers); }},
    {"--sequence-parallel", "/layout/sequence_parallel", FlagKind::kSwitch,
     [](const Recipe& r) { return std::string(r.layout.sequence_parallel ? "true" : "false"); }},
    {"--recompute-granularity", "/layout/recompute/granularity", FlagKind::kWord,
     [](const Recipe& r) { return r.layout.recompute.granularity; }},
    {"--recompute-method", "/layout/recompute/method", FlagKind::kWord,
     [](const Recipe& r) { return r.layout.recompute.method; }},
    {"--recompute-num-layers", "/layout/recompute/num_layers", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.layout.recompute.num_layers); }},
    {"--max-tokens-per-gpu", "/layout/max_tokens_per_gpu", FlagKind::kInt,
     layout_int<&RecipeLayout::max_tokens_per_gpu>},
    {"--moe-token-dispatcher-type", "/layout/dispatcher", FlagKind::kWord,
     [](const Recipe& r) { return to_string(r.layout.dispatcher); }},
    {"--global-batch-size", "/workload/global_batch", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.workload.global_batch); }},
    {"--lr", "/optimizer/lr", FlagKind::kNumber, optimizer_number<&RecipeOptimizer::lr>},
    {"--min-lr", "/optimizer/min_lr", FlagKind::kNumber, optimizer_number<&RecipeOptimizer::min_lr>},
    {"--lr-decay-style", "/optimizer/lr_decay_style", FlagKind::kWord,
     [](const Recipe& r) { return to_string(r.optimizer.lr_decay_style); }},
    {"--lr-warmup-fraction", "/optimizer/lr_warmup_fraction", FlagKind::kNumber,
     optimizer_number<&RecipeOptimizer::lr_warmup_fraction>},
    {"--weight-decay", "/optimizer/weight_decay", FlagKind::kNumber, optimizer_number<&RecipeOptimizer::weight_decay>},
    {"--adam-beta1", "/optimizer/adam_beta1", FlagKind::kNumber, optimizer_number<&RecipeOptimizer::adam_beta1>},
    {"--adam-beta2", "/optimizer/adam_beta2", FlagKind::kNumber, optimizer_number<&RecipeOptimizer::adam_beta2>},
    {"--adam-eps", "/optimizer/adam_eps", FlagKind::kNumber, optimizer_number<&RecipeOptimizer::adam_eps>},
    {"--clip-grad", "/optimizer/clip_grad", FlagKind::kNumber, optimizer_number<&RecipeOptimizer::clip_grad>},
    {"--exp-avg-dtype", "/optimizer/exp_avg_dtype", FlagKind::kWord,
     [](const Recipe& r) { return to_string(r.optimizer.exp_avg_dtype); }},
    {"--exp-avg-sq-dtype", "/optimizer/exp_avg_sq_dtype", FlagKind::kWord,
     [](const Recipe& r) { return to_string(r.optimizer.exp_avg_sq_dtype); }},
    {"--actor-num-gpus-per-node", "/gpu/per_node", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.gpu.per_node); }},
    {"--nproc-per-node", "/gpu/per_node", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.gpu.per_node); }},
    {"--nproc_per_node", "/gpu/per_node", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.gpu.per_node); }},
};

/// Whether the flag's literal `value` states the recipe's `recipe` value.
bool same_value(FlagKind kind, const std::string& value, const std::string& recipe) {
  switch (kind) {
    case FlagKind::kSwitch:
      return recipe == "true";
    case FlagKind::kWord:
      return value == recipe || (value == "flex" && recipe == "deepep");  // Megatron's flex dispatcher runs DeepEP
    case FlagKind::kInt: {
      int64_t a = 0, b = 0;
      const auto pa = std::from_chars(value.data(), value.data() + value.size(), a);
      const auto pb = std::from_chars(recipe.data(), recipe.data() + recipe.size(), b);
      return pa.ec == std::errc() && pa.ptr == value.data() + value.size() && pb.ec == std::errc() && a == b;
    }
    case FlagKind::kNumber: {
      char* end = nullptr;
      const double a = std::strtod(value.c_str(), &end);
      if (end != value.c_str() + value.size() || value.empty() || recipe.empty()) return false;
      const double b = std::strtod(recipe.c_str(), nullptr);
      return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
    }
  }
  return false;
}

/// The file line of the command's line `line` (1-based): a block scalar (`run: |`) starts on the line after its key.
int file_line(const SourceDoc& src, int line) {
  const SourceNode* n = src.node("/run");
  if (n == nullptr) return 0;
  return n->value.line + (n->value.line > n->key.line ? line - 1 : line);
}

/// Adds the disagreement of the recipe's field at `pointer` (its value `recipe_text`, "" when absent) with flag `f`
/// (written as `flag_text`): to `out.stated` when the recipe writes the field, else to `out.unstated`.
void disagreement(const SourceDoc& src, const std::string& pointer, const std::string& recipe_text, const LaunchFlag& f,
                  const std::string& flag_text, LaunchCheck& out) {
  const bool stated = src.node(pointer) != nullptr;
  const std::string value = recipe_text.empty() ? "absent"
                            : stated            ? recipe_text
                                                : recipe_text + " (not stated: the default)";
  Diagnostic d = src.at(
      pointer,
      value + ", but the run command passes " + flag_text + " (line " + std::to_string(file_line(src, f.line)) + ")",
      src.path(pointer) + (stated ? " as the command ran it, or a run command that matches the recipe"
                                  : " stated as the command ran it"));
  d.severity = "warning";
  (stated ? out.stated : out.unstated).push_back(std::move(d));
}

/// Megatron-LM's precision-aware optimizer: FP32 masters kept as BF16 parameter + remainder unless
/// --no-store-param-remainders, or masters of another dtype by --main-params-dtype.
void check_precision_aware(const Recipe& r, const SourceDoc& src, const std::vector<LaunchFlag>& flags,
                           LaunchCheck& out) {
  const LaunchFlag* aware = nullptr;
  std::string masters = "bf16_remainder";
  for (const LaunchFlag& f : flags) {
    if (f.name == "--use-precision-aware-optimizer") aware = &f;
    if (f.name == "--no-store-param-remainders") masters = "fp32";
    if (f.name == "--main-params-dtype" && f.literal && f.value != "fp32") masters = f.value;
  }
  if (aware == nullptr || to_string(r.optimizer.master_weights) == masters) return;
  disagreement(src, "/optimizer/master_weights", to_string(r.optimizer.master_weights), *aware,
               "--use-precision-aware-optimizer (" + masters + " masters)", out);
}

/// slime's --actor-num-nodes and torchrun's --nnodes: nodes x GPUs per node = gpu.count.
void check_nodes(const Recipe& r, const SourceDoc& src, const LaunchFlag& f, LaunchCheck& out) {
  if (f.name != "--actor-num-nodes" && f.name != "--nnodes") return;
  if (!f.literal || r.gpu.per_node <= 0) return;
  const int64_t nodes = (r.gpu.count + r.gpu.per_node - 1) / r.gpu.per_node;
  if (same_value(FlagKind::kInt, f.value, std::to_string(nodes)) && r.gpu.count % r.gpu.per_node == 0) return;
  disagreement(src, "/gpu/count",
               std::to_string(r.gpu.count) + " GPUs (" + std::to_string(r.gpu.per_node) + " per node)", f,
               f.name + " " + f.value, out);
}

}  // namespace

std::vector<LaunchFlag> launch_flags(const std::string& command) {
  const auto w = words(command);
  std::vector<LaunchFlag> out;
  for (size_t i = 0; i < w.size(); ++i) {
    if (!is_flag(w[i].first)) continue;
    LaunchFlag f;
    f.line = w[i].second;
    const size_t eq = w[i].first.find('=');
    if (eq != std::string::npos) {
      f.name = w[i].first.substr(0, eq);
      f.value = w[i].first.substr(eq + 1);
    } else {
      f.name = w[i].first;
      if (i + 1 < w.size() && !is_flag(w[i + 1].first)) f.value = w[++i].first;
    }
    f.literal = is_literal(f.value);
    out.push_back(std::move(f));
  }
  return out;
}

LaunchCheck check_launch_command(const Recipe& r, const SourceDoc& src) {
  LaunchCheck out;
  if (!src.value.is_object() || !src.value.contains("run") || !src.value["run"].is_string()) return out;
  const std::vector<LaunchFlag> flags = launch_flags(src.value["run"].get<std::string>());
  for (const LaunchFlag& f : flags) {
    check_nodes(r, src, f, out);
    for (const FieldFlag& row : kFieldFlags) {
      if (f.name != row.flag || !f.literal) continue;
      const std::string recipe = row.recipe_value(r);
      if (same_value(row.kind, f.value, recipe)) continue;
      disagreement(src, row.pointer, recipe, f, row.kind == FlagKind::kSwitch ? f.name : f.name + " " + f.value, out);
    }
  }
  check_precision_aware(r, src, flags, out);
  return out;
}

}  // namespace recipebench
