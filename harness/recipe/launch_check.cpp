#include "recipe/launch_check.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "recipe/scalar_source.h"
#include "recipe/shell_words.h"
#include "util/format.h"
#include "util/input_file.h"

namespace recipebench {

namespace {

bool is_flag(const ShellWord& w) { return w.text.size() > 2 && w.text.compare(0, 2, "--") == 0; }

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

/// `text` read as Python's int() reads a command-line value (argparse's type=int): blanks around it, a sign ('+'
/// or '-'), decimal digits with single '_' between them; nullopt when it is not such an integer or exceeds int64.
std::optional<int64_t> python_int(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\n\r\f\v");
  if (first == std::string::npos) return std::nullopt;
  const size_t last = text.find_last_not_of(" \t\n\r\f\v");
  std::string digits;
  size_t k = first;
  const bool negative = text[k] == '-';
  if (text[k] == '+' || text[k] == '-') ++k;
  for (; k <= last; ++k) {
    const char c = text[k];
    const bool digit = c >= '0' && c <= '9';
    const bool joiner = c == '_' && !digits.empty() && k < last && text[k + 1] >= '0' && text[k + 1] <= '9';
    if (!digit && !joiner) return std::nullopt;
    if (digit) digits += c;
  }
  int64_t v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return std::nullopt;
  return negative ? -v : v;
}

/// Whether the flag's literal `value` states the recipe's `recipe` value.
bool same_value(FlagKind kind, const std::string& value, const std::string& recipe) {
  switch (kind) {
    case FlagKind::kSwitch:
      return recipe == "true";
    case FlagKind::kWord:
      return value == recipe || (value == "flex" && recipe == "deepep");  // Megatron's flex dispatcher runs DeepEP
    case FlagKind::kInt: {
      const std::optional<int64_t> a = python_int(value), b = python_int(recipe);
      return a && b && *a == *b;
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

/// " (line N)": the file line where the flag at byte `offset` of the run command is written, traced through the
/// scalar's style (recipe/scalar_source.h); "" when it cannot be traced.
std::string file_line(const std::vector<SourceMark>& marks, size_t offset) {
  if (offset >= marks.size()) return "";
  return " (line " + std::to_string(marks[offset].line) + ")";
}

/// Adds the disagreement of the recipe's field at `pointer` (its value `recipe_text`, "" when absent) with flag `f`
/// (written as `flag_text`): to `out.stated` when the recipe writes the field, else to `out.unstated`.
void disagreement(const SourceDoc& src, const std::string& pointer, const std::string& recipe_text, const LaunchFlag& f,
                  const std::string& flag_text, const std::vector<SourceMark>& marks, LaunchCheck& out) {
  const bool stated = src.node(pointer) != nullptr;
  const std::string value = recipe_text.empty() ? "absent"
                            : stated            ? recipe_text
                                                : recipe_text + " (not stated: the default)";
  Diagnostic d =
      src.at(pointer, value + ", but the run command passes " + escape_controls(flag_text) + file_line(marks, f.offset),
             src.path(pointer) + (stated ? " as the command ran it, or a run command that matches the recipe"
                                         : " stated as the command ran it"));
  d.severity = "warning";
  (stated ? out.stated : out.unstated).push_back(std::move(d));
}

/// Megatron-LM's precision-aware optimizer: FP32 masters kept as BF16 parameter + remainder unless
/// --no-store-param-remainders, or masters of another dtype by --main-params-dtype.
void check_precision_aware(const Recipe& r, const SourceDoc& src, const std::vector<LaunchFlag>& flags,
                           const std::vector<SourceMark>& marks, LaunchCheck& out) {
  const LaunchFlag* aware = nullptr;
  std::string masters = "bf16_remainder";
  for (const LaunchFlag& f : flags) {
    if (f.name == "--use-precision-aware-optimizer") aware = &f;
    if (f.name == "--no-store-param-remainders") masters = "fp32";
    if (f.name == "--main-params-dtype" && f.literal && f.value != "fp32") masters = f.value;
  }
  if (aware == nullptr || to_string(r.optimizer.master_weights) == masters) return;
  disagreement(src, "/optimizer/master_weights", to_string(r.optimizer.master_weights), *aware,
               "--use-precision-aware-optimizer (" + masters + " masters)", marks, out);
}

/// slime's --actor-num-nodes and torchrun's --nnodes: nodes x GPUs per node = gpu.count.
void check_nodes(const Recipe& r, const SourceDoc& src, const LaunchFlag& f, const std::vector<SourceMark>& marks,
                 LaunchCheck& out) {
  if (f.name != "--actor-num-nodes" && f.name != "--nnodes") return;
  if (!f.literal || r.gpu.per_node <= 0) return;
  const int64_t nodes = (r.gpu.count + r.gpu.per_node - 1) / r.gpu.per_node;
  if (same_value(FlagKind::kInt, f.value, std::to_string(nodes)) && r.gpu.count % r.gpu.per_node == 0) return;
  disagreement(src, "/gpu/count",
               std::to_string(r.gpu.count) + " GPUs (" + std::to_string(r.gpu.per_node) + " per node)", f,
               f.name + " " + f.value, marks, out);
}

/// The flags argparse keeps: of a flag given twice in one command, the last.
std::vector<LaunchFlag> last_of_each(const std::vector<LaunchFlag>& flags) {
  std::vector<LaunchFlag> out;
  for (size_t i = 0; i < flags.size(); ++i) {
    bool overridden = false;
    for (size_t j = i + 1; j < flags.size() && !overridden; ++j)
      overridden = flags[j].command == flags[i].command && flags[j].name == flags[i].name;
    if (!overridden) out.push_back(flags[i]);
  }
  return out;
}

/// Line (1-based) of byte `offset` of `text`.
int line_of(const std::string& text, size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

/// The flags of simple command `c` (number `index`) of `command`, after its program (every element of an array).
void command_flags(const std::string& command, const ShellCommand& c, int index, std::vector<LaunchFlag>& out) {
  const std::vector<ShellWord>& w = c.words;
  size_t first = 0;  // an array's elements are all arguments
  if (!c.array) {
    const ShellWord* program = shell_program(c);
    if (program == nullptr || program->expanded || is_data_command(program->text)) return;
    first = static_cast<size_t>(program - w.data()) + 1;
  }
  for (size_t i = first; i < w.size(); ++i) {
    if (!is_flag(w[i])) continue;
    LaunchFlag f;
    f.offset = w[i].offset;
    f.line = line_of(command, f.offset);
    f.command = index;
    f.literal = !w[i].expanded;
    const size_t eq = w[i].text.find('=');
    if (eq != std::string::npos) {
      f.name = w[i].text.substr(0, eq);
      f.value = w[i].text.substr(eq + 1);
    } else {
      f.name = w[i].text;
      if (i + 1 < w.size() && !is_flag(w[i + 1])) {
        f.value = w[++i].text;
        f.literal = !w[i].expanded;
      }
    }
    out.push_back(std::move(f));
  }
}

}  // namespace

std::vector<LaunchFlag> launch_flags(const std::string& command) {
  std::vector<LaunchFlag> out;
  const std::vector<ShellCommand> commands = shell_commands(command);
  for (size_t i = 0; i < commands.size(); ++i) command_flags(command, commands[i], static_cast<int>(i), out);
  return out;
}

LaunchCheck check_launch_command(const Recipe& r, const SourceDoc& src) {
  LaunchCheck out;
  if (!src.value.is_object() || !src.value.contains("run") || !src.value["run"].is_string()) return out;
  const std::vector<LaunchFlag> flags = last_of_each(launch_flags(src.value["run"].get<std::string>()));
  const std::vector<SourceMark> marks = scalar_source_marks(src, "/run");
  for (const LaunchFlag& f : flags) {
    check_nodes(r, src, f, marks, out);
    for (const FieldFlag& row : kFieldFlags) {
      if (f.name != row.flag || !f.literal) continue;
      const std::string recipe = row.recipe_value(r);
      if (same_value(row.kind, f.value, recipe)) continue;
      disagreement(src, row.pointer, recipe, f, row.kind == FlagKind::kSwitch ? f.name : f.name + " " + f.value, marks,
                   out);
    }
  }
  check_precision_aware(r, src, flags, marks, out);
  return out;
}

}  // namespace recipebench
