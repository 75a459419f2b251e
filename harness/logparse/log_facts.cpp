#include "logparse/log_facts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>

#include "logparse/line_text.h"
#include "logparse/log_reader.h"

namespace recipebench {

namespace {

/// The integer printed at `text[pos]` after any spaces (digits, thousands commas allowed, an optional '-'), and
/// its 1-based column; nullopt when none starts there.
std::optional<std::pair<int64_t, int>> int_at(const std::string& text, size_t pos) {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
  size_t end = pos;
  if (end < text.size() && text[end] == '-') ++end;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == ',')) ++end;
  while (end > pos && text[end - 1] == ',') --end;  // "48, data-parallel size": the list's comma
  if (end == pos) return std::nullopt;
  const auto v = parse_number(text.substr(pos, end - pos));
  const auto n = v ? whole_count(std::abs(*v)) : std::nullopt;  // never a cast of a double past int64
  if (!n) return std::nullopt;
  return std::make_pair(*v < 0 ? -*n : *n, static_cast<int>(pos + 1));
}

/// Sets `fact` to a positive `value` printed as `printed` at `column` of `line`.
void set(std::optional<LogFact>& fact, int64_t value, int64_t line, int column, const std::string& printed) {
  if (value >= 1) fact = LogFact{value, line, column, printed};
}

/// `key` followed by ':' in `text`, not preceded by '-' ("encoder-tensor-model-parallel size" is not
/// "tensor-model-parallel size"); sets `fact` from the integer after the colon.
void keyed(const std::string& text, const std::string& key, int64_t line, std::optional<LogFact>& fact) {
  for (size_t at = text.find(key + ":"); at != std::string::npos; at = text.find(key + ":", at + 1)) {
    if (at > 0 && text[at - 1] == '-') continue;
    if (const auto v = int_at(text, at + key.size() + 1)) set(fact, v->first, line, v->second, key);
    return;
  }
}

/// Megatron-LM's "using world size: 48, data-parallel size: 4, context-parallel size: 1, tensor-model-parallel
/// size: 2, pipeline-model-parallel size: 6" (older versions: "data-parallel-size").
void megatron_sizes(LogRunFacts& f, const std::string& text, int64_t line) {
  if (text.find("using world size:") == std::string::npos) return;
  keyed(text, "world size", line, f.world_size);
  keyed(text, "data-parallel size", line, f.dp);
  keyed(text, "data-parallel-size", line, f.dp);
  keyed(text, "context-parallel size", line, f.cp);
  keyed(text, "tensor-model-parallel size", line, f.tp);
  keyed(text, "pipeline-model-parallel size", line, f.pp);
}

/// A line of Megatron-LM's arguments block: "  global_batch_size ............................... 256".
void megatron_argument(LogRunFacts& f, const std::string& text, int64_t line) {
  size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  size_t name_end = i;
  while (name_end < text.size() && (std::isalnum(static_cast<unsigned char>(text[name_end])) || text[name_end] == '_'))
    ++name_end;
  if (name_end == i || text.compare(name_end, 2, " .") != 0) return;
  size_t value = text.find_first_not_of('.', name_end + 1);
  if (value == std::string::npos || text[value] != ' ') return;
  const std::string name = text.substr(i, name_end - i);
  const std::pair<const char*, std::optional<LogFact> LogRunFacts::*> fields[] = {
      {"world_size", &LogRunFacts::world_size},
      {"global_batch_size", &LogRunFacts::global_batch},
      {"seq_length", &LogRunFacts::row_tokens},
      {"tensor_model_parallel_size", &LogRunFacts::tp},
      {"pipeline_model_parallel_size", &LogRunFacts::pp},
      {"virtual_pipeline_model_parallel_size", &LogRunFacts::vpp},
      {"context_parallel_size", &LogRunFacts::cp},
      {"expert_model_parallel_size", &LogRunFacts::ep},
      {"data_parallel_size", &LogRunFacts::dp}};
  for (const auto& [key, field] : fields) {
    if (name != key) continue;
    const std::string rest = trim(text.substr(value));
    const auto v = int_at(text, value);
    if (v && std::to_string(v->first) == rest) set(f.*field, v->first, line, v->second, name);
    return;
  }
}

/// The items of a Python list "['pp', 'tp']" or "[2, 4]" starting at `text[open]` ('['), unquoted; `end` is set
/// past the ']'. Empty when the list is empty or not closed.
std::vector<std::pair<std::string, size_t>> list_items(const std::string& text, size_t open, size_t& end) {
  std::vector<std::pair<std::string, size_t>> items;
  const size_t close = text.find(']', open);
  if (close == std::string::npos) return items;
  end = close + 1;
  for (size_t start = open + 1; start < close;) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos || comma > close) comma = close;
    size_t b = start;
    while (b < comma && (text[b] == ' ' || text[b] == '\'' || text[b] == '"')) ++b;
    size_t e = comma;
    while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\'' || text[e - 1] == '"')) --e;
    if (e > b) items.emplace_back(text.substr(b, e - b), b);
    start = comma + 1;
  }
  return items;
}

/// TorchTitan's "Building 3-D device mesh with ['pp', 'dp_shard', 'tp'], [2, 4, 2]": a dimension it does not
/// name is 1. World size and DP only when every name is one of pp, dp_replicate, dp_shard, cp, tp (an expert
/// mesh borrows its dimensions from the others).
void torchtitan_mesh(LogRunFacts& f, const std::string& text, int64_t line) {
  const size_t at = text.find("device mesh with [");
  if (at == std::string::npos) return;
  size_t end = 0;
  const auto names = list_items(text, text.find('[', at), end);
  const size_t dims_open = text.find('[', end);
  if (dims_open == std::string::npos) return;
  const auto dims = list_items(text, dims_open, end);
  if (names.size() != dims.size()) return;
  int64_t world = 1, dp = 1;
  bool known = true;
  const int column = static_cast<int>(dims_open + 1);
  for (size_t i = 0; i < names.size(); ++i) {
    const auto v = int_at(dims[i].first, 0);
    if (!v) return;
    const std::string& n = names[i].first;
    const int at_dim = static_cast<int>(dims[i].second + 1);
    world *= v->first;
    if (n == "tp") set(f.tp, v->first, line, at_dim, "device mesh tp");
    if (n == "pp") set(f.pp, v->first, line, at_dim, "device mesh pp");
    if (n == "cp") set(f.cp, v->first, line, at_dim, "device mesh cp");
    if (n == "dp_replicate" || n == "dp_shard") dp *= v->first;
    known = known && (n == "tp" || n == "pp" || n == "cp" || n == "dp_replicate" || n == "dp_shard");
  }
  if (!known) return;
  set(f.world_size, world, line, column, "device mesh (world size: the product of its dimensions)");
  set(f.dp, dp, line, column, "device mesh dp (dp_replicate x dp_shard)");
}

/// The last `phrase` of the line followed by an integer ("global batch size 64"), not by ':' (Megatron-LM's step
/// line says "global batch size: 64"); the last, as in Megatron-LM's "batch size rampup starting from global batch
/// size 32 to global batch size 512".
void phrase_number(const std::string& text, const std::string& phrase, int64_t line, std::optional<LogFact>& fact) {
  const size_t at = text.rfind(phrase + " ");
  if (at == std::string::npos) return;
  const size_t digit = at + phrase.size() + 1;
  if (digit >= text.size() || !std::isdigit(static_cast<unsigned char>(text[digit]))) return;
  if (const auto v = int_at(text, digit)) set(fact, v->first, line, v->second, phrase);
}

/// TorchTitan's job config as it prints it ("Running with args: {..., 'parallelism': {'tensor_parallel_degree':
/// 2, ...}, 'training': {'global_batch_size': 64, 'seq_len': 8192, ...}}"): positive values only (-1 is "the
/// rest of the GPUs").
void torchtitan_config(LogRunFacts& f, const std::string& text, int64_t line) {
  if (text.find("_degree':") == std::string::npos && text.find("'seq_len':") == std::string::npos) return;
  const std::pair<const char*, std::optional<LogFact> LogRunFacts::*> fields[] = {
      {"tensor_parallel_degree", &LogRunFacts::tp},      {"pipeline_parallel_degree", &LogRunFacts::pp},
      {"context_parallel_degree", &LogRunFacts::cp},     {"expert_parallel_degree", &LogRunFacts::ep},
      {"global_batch_size", &LogRunFacts::global_batch}, {"seq_len", &LogRunFacts::row_tokens}};
  for (const auto& [key, field] : fields) {
    const std::string quoted = std::string("'") + key + "':";
    const size_t at = text.find(quoted);
    if (at == std::string::npos) continue;
    if (const auto v = int_at(text, at + quoted.size())) set(f.*field, v->first, line, v->second, key);
  }
}

/// The Hugging Face Trainer's "  Total train batch size (w. parallel, distributed & accumulation) = 64".
void trainer_batch(LogRunFacts& f, const std::string& text, int64_t line) {
  const std::string key = "Total train batch size";
  const size_t at = text.find(key);
  if (at == std::string::npos) return;
  const size_t eq = text.find('=', at);
  if (eq == std::string::npos) return;
  if (const auto v = int_at(text, eq + 1)) set(f.global_batch, v->first, line, v->second, key);
}

/// "the recipe's layout.pp at recipe.yaml:61:7" (or "..., absent: 1, under layout at ..." for a field the recipe
/// leaves out).
std::string recipe_field(const std::string& pointer, const std::string& path, const SourceDoc* source) {
  std::string s = "the recipe's " + path;
  if (!source) return s;
  const SourceMark m = source->mark(pointer);
  if (!source->node(pointer)) s += " (absent: its default)";
  return s + " at " + source->file + ":" + std::to_string(m.line) + ":" + std::to_string(m.column);
}

}  // namespace

void LogRunFacts::read(const std::string& text, int64_t line) {
  megatron_sizes(*this, text, line);
  if (text.find(" .") != std::string::npos) megatron_argument(*this, text, line);
  torchtitan_mesh(*this, text, line);
  phrase_number(text, "global batch size", line, global_batch);
  phrase_number(text, "sequence length", line, row_tokens);
  torchtitan_config(*this, text, line);
  trainer_batch(*this, text, line);
}

Diagnostics check_log_against_recipe(const ParsedLog& log, const std::string& log_file, const Recipe& recipe,
                                     const SourceDoc* recipe_source, StepWindow window) {
  const LogRunFacts& f = log.facts;
  const RecipeLayout& l = recipe.layout;
  struct Check {
    const std::optional<LogFact>& fact;
    int64_t recipe_value;
    const char* pointer;
  };
  const Check checks[] = {{f.world_size, recipe.gpu.count, "/gpu/count"},
                          {f.global_batch, recipe.workload.global_batch, "/workload/global_batch"},
                          {f.row_tokens, recipe.workload.row_tokens, "/workload/row_tokens"},
                          {f.tp, l.tp, "/layout/tp"},
                          {f.pp, l.pp, "/layout/pp"},
                          {f.vpp, l.vpp, "/layout/vpp"},
                          {f.cp, l.cp, "/layout/cp"},
                          {f.ep, l.ep, "/layout/ep"},
                          {f.dp, l.dp, "/layout/dp"}};
  Diagnostics out;
  const auto field_path = [](const char* pointer) {
    std::string p = pointer + 1;
    for (char& c : p)
      if (c == '/') c = '.';
    return p;
  };
  for (const Check& c : checks) {
    if (!c.fact || c.fact->value == c.recipe_value) continue;
    out.push_back(Diagnostic{
        log_file, static_cast<int>(c.fact->line), c.fact->column, c.fact->printed, std::to_string(c.fact->value),
        std::to_string(c.recipe_value) + " (" + recipe_field(c.pointer, field_path(c.pointer), recipe_source) + ")"});
  }
  const size_t steps = std::min(log.printed.size(), log.step_lines.size());
  const auto differs = [&](size_t i) {
    const std::optional<int64_t>& batch = log.printed[i].global_batch;
    return batch && *batch != recipe.workload.global_batch;
  };
  bool window_differs = false;
  for (int i = std::max(0, window.first); i <= window.last && static_cast<size_t>(i) < steps; ++i)
    window_differs = window_differs || differs(static_cast<size_t>(i));
  for (size_t i = 0; window_differs && i < steps; ++i) {
    if (!differs(i)) continue;
    const int64_t batch = *log.printed[i].global_batch;
    out.push_back(Diagnostic{log_file, static_cast<int>(log.step_lines[i]), 1, "global batch size",
                             std::to_string(batch) + " (step " + std::to_string(i) + "'s line)",
                             std::to_string(recipe.workload.global_batch) + " (" +
                                 recipe_field("/workload/global_batch", "workload.global_batch", recipe_source) + ")"});
    break;
  }
  return out;
}

}  // namespace recipebench
