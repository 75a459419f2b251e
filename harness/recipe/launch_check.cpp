#include "recipe/launch_check.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "recipe/scalar_source.h"
#include "recipe/shell_words.h"
#include "util/format.h"
#include "util/input_file.h"

namespace recipebench {

namespace {

bool is_flag(const ShellWord& w) { return w.text.size() > 2 && w.text.compare(0, 2, "--") == 0; }

enum class FlagKind { kInt, kNumber, kWord, kSwitch };

/// When a flag's row applies (docs/launch-check.md, "The flags compared").
enum class When {
  kAlways,
  kFixedBatches,  ///< Megatron-LM without --use-dynamic-batch-size: rows of row_tokens, rows_per_microbatch each
  kUnpipelined,   ///< PP 1 (TorchTitan's local batch is then the microbatch)
  kPipelined,     ///< PP > 1 (TorchTitan's pipeline microbatch)
  kNotAuto,       ///< a TorchTitan degree or batch: -1 (derived by TorchTitan) is not compared
};

/// One launch flag that states a recipe field: where the field is, how to compare, and the recipe's value as text.
struct FieldFlag {
  const char* flag;
  const char* pointer;  ///< the recipe field's JSON pointer
  FlagKind kind;
  std::string (*recipe_value)(const Recipe&);  ///< "" when the recipe leaves the field absent
  When when = When::kAlways;
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
    // A switch that states a dtype: "true" when the recipe's dtype is the switch's, else the dtype (shown).
    {kGradReduceBf16Flag, "/optimizer/grad_reduce_dtype", FlagKind::kSwitch,
     [](const Recipe& r) {
       return r.optimizer.grad_reduce_dtype == StateDtype::kBf16 ? std::string("true")
                                                                 : to_string(r.optimizer.grad_reduce_dtype);
     }},
    {kGradReduceFp32Flag, "/optimizer/grad_reduce_dtype", FlagKind::kSwitch,
     [](const Recipe& r) {
       return r.optimizer.grad_reduce_dtype == StateDtype::kFp32 ? std::string("true")
                                                                 : to_string(r.optimizer.grad_reduce_dtype);
     }},
    {"--actor-num-gpus-per-node", "/gpu/per_node", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.gpu.per_node); }},
    {"--nproc-per-node", "/gpu/per_node", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.gpu.per_node); }},
    {"--nproc_per_node", "/gpu/per_node", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.gpu.per_node); }},
    {"--seq-length", "/workload/row_tokens", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.workload.row_tokens); }, When::kFixedBatches},
    {"--micro-batch-size", "/layout/rows_per_microbatch", FlagKind::kInt,
     [](const Recipe& r) { return opt(r.layout.rows_per_microbatch); }, When::kFixedBatches},
    // TorchTitan (torchtitan/config/job_config.py: Parallelism, Training).
    {"--parallelism.tensor_parallel_degree", "/layout/tp", FlagKind::kInt, layout_int<&RecipeLayout::tp>},
    {"--parallelism.pipeline_parallel_degree", "/layout/pp", FlagKind::kInt, layout_int<&RecipeLayout::pp>},
    {"--parallelism.context_parallel_degree", "/layout/cp", FlagKind::kInt, layout_int<&RecipeLayout::cp>},
    {"--parallelism.expert_parallel_degree", "/layout/ep", FlagKind::kInt, layout_int<&RecipeLayout::ep>},
    {"--parallelism.expert_tensor_parallel_degree", "/layout/etp", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.layout.effective_etp()); }},
    {"--parallelism.data_parallel_shard_degree", "/layout/dp", FlagKind::kInt, layout_int<&RecipeLayout::dp>,
     When::kNotAuto},
    {"--training.global_batch_size", "/workload/global_batch", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.workload.global_batch); }, When::kNotAuto},
    {"--training.seq_len", "/workload/row_tokens", FlagKind::kInt,
     [](const Recipe& r) { return std::to_string(r.workload.row_tokens); }},
    {"--training.local_batch_size", "/layout/rows_per_microbatch", FlagKind::kInt,
     [](const Recipe& r) { return opt(r.layout.rows_per_microbatch); }, When::kUnpipelined},
    {"--parallelism.pipeline_parallel_microbatch_size", "/layout/rows_per_microbatch", FlagKind::kInt,
     [](const Recipe& r) { return opt(r.layout.rows_per_microbatch); }, When::kPipelined},
    {"--activation_checkpoint.mode", "/layout/recompute/granularity", FlagKind::kWord,
     [](const Recipe& r) { return r.layout.recompute.granularity; }},
};

/// One Megatron-LM flag that states the model's shape, and the model's value (0: the model has none).
struct ModelFlag {
  const char* flag;
  const char* field;  ///< the model's field as recipebench names it (config.json's name in parentheses)
  int64_t (*model_value)(const ModelConfig&);
};

/// Megatron-LM's model-shape flags (megatron/training/arguments.py). --ffn-hidden-size is the dense MLP's width, and
/// the experts' when --moe-ffn-hidden-size is not given: a model without dense layers compares it with the experts'.
const ModelFlag kModelFlags[] = {
    {"--num-layers", "num_layers", [](const ModelConfig& m) { return m.num_layers; }},
    {"--hidden-size", "hidden_size", [](const ModelConfig& m) { return m.hidden_size; }},
    {"--num-attention-heads", "num_attention_heads", [](const ModelConfig& m) { return m.num_attention_heads; }},
    {"--num-query-groups", "num_key_value_heads", [](const ModelConfig& m) { return m.num_kv_heads; }},
    {"--num-experts", "num_experts", [](const ModelConfig& m) { return m.num_experts; }},
    {"--moe-router-topk", "top_k (experts per token)", [](const ModelConfig& m) { return m.top_k; }},
    {"--moe-ffn-hidden-size", "expert intermediate_size", [](const ModelConfig& m) { return m.expert_ffn; }},
    {"--ffn-hidden-size", "intermediate_size",
     [](const ModelConfig& m) { return m.intermediate_size > 0 ? m.intermediate_size : m.expert_ffn; }},
    {"--moe-shared-expert-intermediate-size", "shared expert intermediate_size",
     [](const ModelConfig& m) { return m.shared_expert_ffn; }},
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

/// The flag's value as the message shows it: "4", or "$TP (= 4)" when a variable of the block gave it.
std::string shown(const LaunchFlag& f) { return f.written.empty() ? f.value : f.written + " (= " + f.value + ")"; }

/// " (line N)": the file line where the flag at byte `offset` of the run command is written, traced through the
/// scalar's style (recipe/scalar_source.h); "" when it cannot be traced.
std::string file_line(const std::vector<SourceMark>& marks, size_t offset) {
  if (offset >= marks.size()) return "";
  return " (line " + std::to_string(marks[offset].line) + ")";
}

/// Adds the disagreement of the recipe's field at `pointer` (its value `recipe_text`, "" when absent) with flag `f`
/// (written as `flag_text`, followed by its line and `why` when given): to `out.stated` when the recipe writes the
/// field, else to `out.unstated`. `expected` replaces the default expectation when given.
void disagreement(const SourceDoc& src, const std::string& pointer, const std::string& recipe_text, const LaunchFlag& f,
                  const std::string& flag_text, const std::vector<SourceMark>& marks, LaunchCheck& out,
                  const std::string& why = "", const std::string& expected = "") {
  const bool stated = src.node(pointer) != nullptr;
  const std::string value = recipe_text.empty() ? "absent"
                            : stated            ? recipe_text
                                                : recipe_text + " (not stated: the default)";
  Diagnostic d = src.at(pointer,
                        value + ", but the run command passes " + escape_controls(flag_text) +
                            file_line(marks, f.offset) + (why.empty() ? "" : ": " + why),
                        !expected.empty() ? expected
                        : stated          ? src.path(pointer) +
                                       " as the command ran it, or a run command that matches "
                                       "the recipe"
                                 : src.path(pointer) + " stated as the command ran it");
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

void unresolved_flag(const SourceDoc& src, const std::string& pointer, const LaunchFlag& f,
                     const std::vector<SourceMark>& marks, LaunchCheck& out);

/// Megatron-LM's --recompute-modules (nargs='*', read with --recompute-granularity selective only; its default
/// core_attn) against layout.recompute.modules: the same set, in any order.
void check_recompute_modules(const Recipe& r, const SourceDoc& src, const std::vector<LaunchFlag>& flags,
                             const std::vector<SourceMark>& marks, LaunchCheck& out) {
  if (r.layout.recompute.granularity != "selective") return;
  const auto f = std::find_if(flags.begin(), flags.end(),
                              [](const LaunchFlag& x) { return x.name == "--recompute-modules"; });
  if (f == flags.end()) return;
  if (!f->literal || !f->more_literal) return unresolved_flag(src, "/layout/recompute/modules", *f, marks, out);
  std::set<std::string> passed(f->more_values.begin(), f->more_values.end()), recipe;
  if (!f->value.empty()) passed.insert(f->value);
  std::string recipe_text;
  for (RecomputeModule m : r.layout.recompute.modules) {
    recipe.insert(to_string(m));
    recipe_text += (recipe_text.empty() ? "" : ", ") + to_string(m);
  }
  if (passed == recipe) return;
  std::string written = f->name + (f->value.empty() ? "" : " " + shown(*f));
  for (const std::string& v : f->more_values) written += " " + v;
  disagreement(src, "/layout/recompute/modules", "[" + recipe_text + "]", *f, written, marks, out);
}

/// slime's --actor-num-nodes and torchrun's --nnodes: nodes x GPUs per node = gpu.count. torchrun's elastic
/// MIN:MAX is compared by its MAX (the nodes it runs on when all join).
void check_nodes(const Recipe& r, const SourceDoc& src, const LaunchFlag& f, const std::vector<SourceMark>& marks,
                 LaunchCheck& out) {
  if (f.name != "--actor-num-nodes" && f.name != "--nnodes") return;
  if (!f.literal) return unresolved_flag(src, "/gpu/count", f, marks, out);
  if (r.gpu.per_node <= 0) return;
  const int64_t nodes = (r.gpu.count + r.gpu.per_node - 1) / r.gpu.per_node;
  const size_t colon = f.name == "--nnodes" ? f.value.find(':') : std::string::npos;
  const std::string most = colon == std::string::npos ? f.value : f.value.substr(colon + 1);
  if (same_value(FlagKind::kInt, most, std::to_string(nodes)) && r.gpu.count % r.gpu.per_node == 0) return;
  disagreement(src, "/gpu/count",
               std::to_string(r.gpu.count) + " GPUs (" + std::to_string(r.gpu.per_node) + " per node)", f,
               f.name + " " + shown(f), marks, out,
               colon == std::string::npos ? "" : "torchrun's elastic MIN:MAX, at most " + most + " nodes");
}

/// The flags argparse keeps: of a flag given twice in one command, the last.
std::vector<LaunchFlag> last_of_each(const std::vector<LaunchFlag>& flags) {
  std::set<std::pair<int, std::string>> seen;
  std::vector<LaunchFlag> out;
  for (auto f = flags.rbegin(); f != flags.rend(); ++f)
    if (seen.insert({f->command, f->name}).second) out.push_back(*f);
  std::reverse(out.begin(), out.end());
  return out;
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// A shell variable set in the run block: NAME=value alone on its command (or after export / declare / local /
/// readonly / typeset), or an array NAME=( ... ), at byte `offset`; `known` false when its value is an expansion the
/// check cannot resolve (or an array: its elements are read as flags instead).
struct Assignment {
  std::string name, value;
  size_t offset = 0;
  bool known = true;
  bool array = false;
};

/// The variables of one command text (the run block, or a shell's -c string within it, whose expansions the
/// enclosing text's variables set before the string resolve).
struct Scope {
  std::map<std::string, std::vector<Assignment>> vars;  ///< each name's assignments in order of offset
  const Scope* outer = nullptr;                         ///< the enclosing text's, for a -c string
  size_t outer_at = 0;                                  ///< the -c string's offset in the enclosing text

  /// The last assignment to `name` before byte `at` (else the enclosing text's before the string); nullptr if none.
  const Assignment* find(const std::string& name, size_t at) const {
    const auto it = vars.find(name);
    if (it != vars.end()) {
      const auto p = std::lower_bound(it->second.begin(), it->second.end(), at,
                                      [](const Assignment& v, size_t x) { return v.offset < x; });
      if (p != it->second.begin()) return &*(p - 1);
    }
    return outer != nullptr ? outer->find(name, outer_at) : nullptr;
  }
};

/// `text` (a word with expansions as written) with each $NAME and ${NAME} replaced by the last assignment to NAME
/// before byte `at`; nullopt when an expansion is anything else or names a variable not set (or set unknown) there,
/// `unresolved` then holding that expansion as written.
std::optional<std::string> resolve(const std::string& text, const Scope& vars, size_t at, std::string& unresolved) {
  std::string out;
  for (size_t k = 0; k < text.size(); ++k) {
    if (text[k] != '$') {
      if (text[k] == '`') return unresolved = text, std::nullopt;
      out += text[k];
      continue;
    }
    const bool braced = k + 1 < text.size() && text[k + 1] == '{';
    size_t n = k + (braced ? 2 : 1), e = n;
    while (e < text.size() && is_name_char(text[e])) ++e;
    const bool closed = !braced || (e < text.size() && text[e] == '}');
    const std::string written = text.substr(k, e - k + (braced && closed ? 1 : 0));
    if (e == n || !closed || std::isdigit(static_cast<unsigned char>(text[n])))
      return unresolved = written, std::nullopt;
    const Assignment* a = vars.find(text.substr(n, e - n), at);
    if (a == nullptr || !a->known) return unresolved = written, std::nullopt;
    out += a->value;
    k = e - (braced ? 0 : 1);
  }
  return out;
}

/// Adds the variables `commands` set, in order (see Assignment), to `scope`.
void add_assignments(const std::vector<ShellCommand>& commands, Scope& scope) {
  static const std::set<std::string> kSetters = {"export", "declare", "local", "readonly", "typeset"};
  for (const ShellCommand& c : commands) {
    if (c.array) {
      scope.vars[c.name].push_back({c.name, "", c.words.empty() ? 0 : c.words.front().offset, false, true});
      continue;
    }
    const ShellWord* program = shell_program(c);
    if (program != nullptr && (program->expanded || !kSetters.count(program->text))) continue;
    for (const ShellWord& w : c.words) {
      const size_t eq = w.text.find('=');
      if (eq == std::string::npos || eq == 0 || !std::all_of(w.text.begin(), w.text.begin() + eq, is_name_char))
        continue;
      Assignment a{w.text.substr(0, eq), w.text.substr(eq + 1), w.offset, true, false};
      std::string unresolved;
      if (w.expanded) {
        const std::optional<std::string> v = resolve(a.value, scope, w.offset, unresolved);
        a.known = v.has_value();
        a.value = v.value_or("");
      }
      scope.vars[a.name].push_back(std::move(a));
    }
  }
}

/// Sets flag `f`'s value from word `w` (its text from byte `from`), resolving the block's variables.
void set_value(LaunchFlag& f, const ShellWord& w, size_t from, const Scope& vars) {
  f.value = w.text.substr(from);
  f.literal = !w.expanded;
  if (!w.expanded) return;
  std::string unresolved;
  if (const std::optional<std::string> v = resolve(f.value, vars, w.offset, unresolved)) {
    f.written = f.value;
    f.value = *v;
    f.literal = true;
  }
}

/// The flags of simple command `c` (number `index`) of `command`, after its program (every element of an array).
void command_flags(const ShellCommand& c, int index, const Scope& vars, std::vector<LaunchFlag>& out) {
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
    f.command = index;
    const size_t eq = w[i].text.find('=');
    if (eq != std::string::npos) {
      f.name = w[i].text.substr(0, eq);
      set_value(f, w[i], eq + 1, vars);
    } else {
      f.name = w[i].text;
      f.literal = !w[i].expanded;
      if (i + 1 < w.size() && !is_flag(w[i + 1])) set_value(f, w[++i], 0, vars);
      for (; i + 1 < w.size() && !is_flag(w[i + 1]) && !f.value.empty(); ++i) {  // nargs='*': the further values
        f.more_values.push_back(w[i + 1].text);
        f.more_literal = f.more_literal && !w[i + 1].expanded;
      }
    }
    out.push_back(std::move(f));
  }
}

/// The command string a shell runs with -c (`bash -c "torchrun ..."`, `sh -lc '...'`), as a job script or a
/// launcher's command line starts one (`srun ... bash -c "..."`, `timeout 600 bash -c ...`): the word after an
/// option of letters holding 'c' that follows the program bash, sh, dash, zsh or ksh (a path's last part), the
/// command's program or one of its arguments; nullptr when `c` runs no such string.
const ShellWord* shell_c_string(const ShellCommand& c) {
  static const std::set<std::string> kShells = {"bash", "sh", "dash", "zsh", "ksh"};
  const ShellWord* program = c.array ? nullptr : shell_program(c);
  if (program == nullptr || program->expanded || is_data_command(program->text)) return nullptr;
  const ShellWord* end = c.words.data() + c.words.size();
  for (const ShellWord* shell = program; shell < end; ++shell) {
    const size_t slash = shell->text.rfind('/');
    if (shell->expanded || !kShells.count(slash == std::string::npos ? shell->text : shell->text.substr(slash + 1)))
      continue;
    for (const ShellWord* w = shell + 1; w < end; ++w) {
      const std::string& t = w->text;
      if (t.size() < 2 || t[0] != '-' || t[1] == '-' ||
          !std::all_of(t.begin() + 1, t.end(), [](char d) { return std::isalpha(static_cast<unsigned char>(d)) != 0; }))
        break;
      if (t.find('c') != std::string::npos) return w + 1 < end ? w + 1 : nullptr;
    }
  }
  return nullptr;
}

/// The arguments of the block's launch commands that are expansions the check cannot see into: a word that is not a
/// flag's value and is neither an array the block assigns (${NAME[@]}) nor a variable it resolves. Such a word may
/// pass any flag, so a flag's absence is not read as a switch left off while one exists.
std::vector<std::string> opaque_arguments(const std::vector<ShellCommand>& commands, const Scope& vars) {
  std::vector<std::string> out;
  for (const ShellCommand& c : commands) {
    const ShellWord* program = c.array ? nullptr : shell_program(c);
    if (!c.array && (program == nullptr || program->expanded || is_data_command(program->text))) continue;
    const size_t first = c.array ? 0 : static_cast<size_t>(program - c.words.data()) + 1;
    if (const ShellWord* inner = shell_c_string(c)) {  // a shell's -c string: its own commands' arguments
      const std::vector<ShellCommand> inner_commands = shell_commands(inner->text);
      Scope scope{{}, &vars, inner->offset};
      add_assignments(inner_commands, scope);
      for (std::string& o : opaque_arguments(inner_commands, scope)) out.push_back(std::move(o));
      if (!inner->expanded) continue;
    }
    for (size_t i = first; i < c.words.size(); ++i) {
      const ShellWord& w = c.words[i];
      const bool value = i > first && is_flag(c.words[i - 1]) && c.words[i - 1].text.find('=') == std::string::npos;
      if (!w.expanded || is_flag(w) || value) continue;
      const std::string& t = w.text;  // ${NAME[@]} or ${NAME[*]}: an array the block assigns is read
      const bool whole_array = t.size() > 6 && t.compare(0, 2, "${") == 0 &&
                               (t.compare(t.size() - 4, 4, "[@]}") == 0 || t.compare(t.size() - 4, 4, "[*]}") == 0);
      const Assignment* a = whole_array ? vars.find(t.substr(2, t.size() - 6), w.offset) : nullptr;
      std::string unresolved;
      if (!(a != nullptr && a->array) && !resolve(t, vars, w.offset, unresolved)) out.push_back(t);
    }
  }
  return out;
}

/// Reads the flags of `text` into `out`: the run block itself (`text` is `block`), or a shell's -c string within it
/// whose word starts at byte `base` of the block (`vars.outer`: the enclosing text's variables, which the enclosing
/// shell expands; each flag's offset is then found in the block from `base` on, as written). Simple commands are
/// numbered from `next`; -c strings are read to a depth of 4.
void read_flags(const std::string& block, const std::string& text, size_t base, Scope vars, int& next, int depth,
                std::vector<LaunchFlag>& out) {
  const std::vector<ShellCommand> commands = shell_commands(text);
  add_assignments(commands, vars);
  size_t cursor = base;
  for (const ShellCommand& c : commands) {
    const size_t first = out.size();
    command_flags(c, next++, vars, out);
    for (size_t i = first; i < out.size() && &text != &block; ++i) {
      const size_t at = block.find(out[i].name, cursor);
      out[i].offset = at == std::string::npos ? base : at;
      cursor = at == std::string::npos ? cursor : at + 1;
    }
    const ShellWord* inner = depth < 4 ? shell_c_string(c) : nullptr;
    if (inner != nullptr)
      read_flags(block, inner->text, &text == &block ? inner->offset : base, Scope{{}, &vars, inner->offset}, next,
                 depth + 1, out);
  }
}

}  // namespace

std::vector<LaunchFlag> launch_flags(const std::string& command) {
  std::vector<LaunchFlag> out;
  int next = 0;
  read_flags(command, command, 0, Scope{}, next, 0, out);
  std::vector<size_t> breaks;  // the offsets of the line ends: a flag's line by binary search
  for (size_t k = command.find('\n'); k != std::string::npos; k = command.find('\n', k + 1)) breaks.push_back(k);
  for (LaunchFlag& f : out)
    f.line = 1 + static_cast<int>(std::lower_bound(breaks.begin(), breaks.end(), f.offset) - breaks.begin());
  return out;
}

namespace {

/// What the whole run block says beyond single flags.
struct BlockFacts {
  bool dynamic_batches = false;  ///< --use-dynamic-batch-size (slime)
  bool megatron = false;         ///< passes a Megatron-LM parallel-size or batch flag
  std::vector<std::string> opaque;
};

BlockFacts block_facts(const std::string& command, const std::vector<LaunchFlag>& flags) {
  static const std::set<std::string> kMegatron = {"--tensor-model-parallel-size",
                                                  "--pipeline-model-parallel-size",
                                                  "--expert-model-parallel-size",
                                                  "--context-parallel-size",
                                                  "--global-batch-size",
                                                  "--micro-batch-size",
                                                  "--seq-length",
                                                  "--num-layers"};
  BlockFacts b;
  for (const LaunchFlag& f : flags) {
    b.dynamic_batches = b.dynamic_batches || f.name == "--use-dynamic-batch-size";
    b.megatron = b.megatron || kMegatron.count(f.name) > 0;
  }
  const std::vector<ShellCommand> commands = shell_commands(command);
  Scope vars;
  add_assignments(commands, vars);
  b.opaque = opaque_arguments(commands, vars);
  return b;
}

/// Whether row `row` applies to this recipe and command (When), given the flag's value.
bool row_applies(const FieldFlag& row, const Recipe& r, const BlockFacts& b, const LaunchFlag& f) {
  switch (row.when) {
    case When::kAlways:
      return true;
    case When::kFixedBatches:
      return !b.dynamic_batches && !row.recipe_value(r).empty();
    case When::kUnpipelined:
      return r.layout.pp == 1 && !row.recipe_value(r).empty();
    case When::kPipelined:
      return r.layout.pp > 1 && !row.recipe_value(r).empty();
    case When::kNotAuto:
      return python_int(f.value) != std::optional<int64_t>(-1);
  }
  return true;
}

/// A compared flag whose value is a variable the block does not set: said, not compared (a warning).
void unresolved_flag(const SourceDoc& src, const std::string& pointer, const LaunchFlag& f,
                     const std::vector<SourceMark>& marks, LaunchCheck& out) {
  Diagnostic d =
      src.at(pointer,
             "not compared: the run command passes " + escape_controls(f.name + " " + f.value) +
                 file_line(marks, f.offset) + ", a value not set literally earlier in the run block",
             "a literal value, or NAME=value earlier in the run block, to compare with " + src.path(pointer));
  d.severity = "warning";
  out.unstated.push_back(std::move(d));
}

/// The recipe's model against Megatron-LM's model-shape flags, located at model_params.config (else model).
void check_model_flags(const ModelConfig& m, const SourceDoc& src, const LaunchFlag& f,
                       const std::vector<SourceMark>& marks, LaunchCheck& out) {
  const std::string pointer = src.node("/model_params/config") ? "/model_params/config" : "/model";
  for (const ModelFlag& row : kModelFlags) {
    if (f.name != row.flag) continue;
    if (!f.literal) return unresolved_flag(src, pointer, f, marks, out);
    const int64_t want = row.model_value(m);
    if (want <= 0 && f.name != "--num-experts") return;  // the model has no such width (a dense model's experts)
    if (same_value(FlagKind::kInt, f.value, std::to_string(want))) return;
    disagreement(src, pointer, "the model's " + std::string(row.field) + " " + std::to_string(want), f,
                 f.name + " " + shown(f), marks, out, "",
                 "a model (" + src.path(pointer) + ") as the command ran it, or a run command that matches the model");
  }
}

/// Megatron-LM's older VPP spelling: --num-layers-per-virtual-pipeline-stage N is VPP = layers / PP / N (layers
/// from --num-layers, else the model's; PP from the command, else the recipe's).
void check_vpp_layers(const Recipe& r, const ModelConfig* m, const SourceDoc& src, const std::vector<LaunchFlag>& flags,
                      const std::vector<SourceMark>& marks, LaunchCheck& out) {
  const LaunchFlag* per = nullptr;
  int64_t layers = m ? m->num_layers : 0, pp = r.layout.pp;  // 0: not known
  for (const LaunchFlag& f : flags) {
    if (f.name == "--num-layers-per-virtual-pipeline-stage") per = &f;
    if (f.name == "--num-layers" && f.literal) layers = python_int(f.value).value_or(0);
    if (f.name == "--pipeline-model-parallel-size" && f.literal) pp = python_int(f.value).value_or(0);
  }
  if (per == nullptr) return;
  if (!per->literal) return unresolved_flag(src, "/layout/vpp", *per, marks, out);
  const int64_t n = python_int(per->value).value_or(0);
  if (layers <= 0 || pp <= 0 || n <= 0) return;
  const std::string sum = std::to_string(layers) + " layers / PP " + std::to_string(pp) + " / " + per->value;
  const bool whole = layers % (pp * n) == 0;
  if (whole && layers / (pp * n) == r.layout.vpp) return;
  disagreement(src, "/layout/vpp", std::to_string(r.layout.vpp), *per, per->name + " " + shown(*per), marks, out,
               sum + (whole ? " = VPP " + std::to_string(layers / (pp * n)) : ", not a whole VPP"));
}

/// A Megatron-LM switch the recipe sets that the command leaves out (absent is off in Megatron-LM), unless an
/// argument the check cannot see into (an unresolved expansion) could pass it.
void check_absent_switches(const Recipe& r, const SourceDoc& src, const std::vector<LaunchFlag>& flags,
                           const BlockFacts& b, LaunchCheck& out) {
  if (!b.megatron || !b.opaque.empty()) return;
  struct Switch {
    const char* flag;
    const char* pointer;
    bool recipe_on;
    const char* recipe_text;
  };
  const Switch switches[] = {
      {"--sequence-parallel", "/layout/sequence_parallel", r.layout.sequence_parallel, "true"},
      {"--use-precision-aware-optimizer", "/optimizer/master_weights",
       to_string(r.optimizer.master_weights) == "bf16_remainder", "bf16_remainder"},
  };
  for (const Switch& s : switches) {
    const bool passed = std::any_of(flags.begin(), flags.end(), [&](const LaunchFlag& f) { return f.name == s.flag; });
    if (!s.recipe_on || passed) continue;
    const bool stated = src.node(s.pointer) != nullptr;
    Diagnostic d = src.at(
        s.pointer,
        std::string(s.recipe_text) + ", but the run command does not pass " + s.flag + " (Megatron-LM: absent is off)",
        src.path(s.pointer) + " as the command ran it, or " + s.flag + " in the run command");
    d.severity = "warning";
    (stated ? out.stated : out.unstated).push_back(std::move(d));
  }
}

}  // namespace

LaunchCheck check_launch_command(const Recipe& r, const SourceDoc& src, const ModelConfig* model) {
  LaunchCheck out;
  if (!src.value.is_object() || !src.value.contains("run") || !src.value["run"].is_string()) return out;
  const std::string command = src.value["run"].get<std::string>();
  const std::vector<LaunchFlag> flags = last_of_each(launch_flags(command));
  const std::vector<SourceMark> marks = scalar_source_marks(src, "/run");
  const BlockFacts facts = block_facts(command, flags);
  for (const LaunchFlag& f : flags) {
    check_nodes(r, src, f, marks, out);
    if (model != nullptr) check_model_flags(*model, src, f, marks, out);
    for (const FieldFlag& row : kFieldFlags) {
      if (f.name != row.flag || !row_applies(row, r, facts, f)) continue;
      if (!f.literal) {
        unresolved_flag(src, row.pointer, f, marks, out);
        continue;
      }
      const std::string recipe = row.recipe_value(r);
      if (same_value(row.kind, f.value, recipe)) continue;
      disagreement(src, row.pointer, recipe, f, row.kind == FlagKind::kSwitch ? f.name : f.name + " " + shown(f), marks,
                   out);
    }
  }
  check_precision_aware(r, src, flags, marks, out);
  check_recompute_modules(r, src, flags, marks, out);
  check_vpp_layers(r, model, src, flags, marks, out);
  check_absent_switches(r, src, flags, facts, out);
  return out;
}

}  // namespace recipebench
