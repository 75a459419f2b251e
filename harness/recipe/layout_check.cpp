#include "recipe/layout_check.h"

#include <algorithm>
#include <array>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/format.h"

namespace recipebench {

std::vector<int64_t> stage_layer_counts(int64_t num_layers, int pp, std::optional<int> first, std::optional<int> last) {
  if (pp < 1) return {};
  if (!first && !last) {
    if (num_layers % pp != 0) return {};
    return std::vector<int64_t>(pp, num_layers / pp);
  }
  const int64_t f = first.value_or(0), l = last.value_or(0);
  if (f <= 0 || l <= 0 || pp < 2) return {};
  const int64_t middle_layers = num_layers - f - l;
  const int middle_stages = pp - 2;
  if (middle_stages == 0) {
    if (middle_layers != 0) return {};
    return {f, l};
  }
  if (middle_layers <= 0 || middle_layers % middle_stages != 0) return {};
  std::vector<int64_t> out(pp, middle_layers / middle_stages);
  out.front() = f;
  out.back() = l;
  return out;
}

int64_t rows_per_microbatch(int64_t max_tokens_per_gpu, int64_t row_tokens) {
  return row_tokens > 0 ? max_tokens_per_gpu / row_tokens : 0;
}

namespace {

std::string list(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

/// World size: TP x CP x DP x PP = GPUs, in whole nodes.
void check_world(const Recipe& r, const SourceDoc& src, Diagnostics& out) {
  const RecipeLayout& L = r.layout;
  const int64_t world = L.world();
  if (world != r.gpu.count) {
    out.push_back(src.at("/gpu/count", std::to_string(r.gpu.count) + " GPUs",
                         "TP x CP x DP x PP = " + std::to_string(L.tp) + " x " + std::to_string(L.cp) + " x " +
                             std::to_string(L.dp) + " x " + std::to_string(L.pp) + " = " + std::to_string(world) +
                             " GPUs (the layout's world size)"));
  }
  if (r.gpu.per_node > 0 && r.gpu.count % r.gpu.per_node != 0) {
    out.push_back(src.at("/gpu/per_node", std::to_string(r.gpu.per_node) + " GPUs per node",
                         "a divisor of gpu.count " + std::to_string(r.gpu.count) + " (whole nodes)"));
  }
}

/// Expert grid ("MoE parallel folding"): EDP = world / (ETP x EP x PP) whole.
void check_expert_grid(const Recipe& r, const SourceDoc& src, Diagnostics& out) {
  const RecipeLayout& L = r.layout;
  const int64_t world = L.world();
  const int etp = L.effective_etp();
  const int64_t expert_grid = static_cast<int64_t>(etp) * L.ep * L.pp;
  if (world % expert_grid != 0) {
    std::ostringstream found;
    found << "EP " << L.ep << " with ETP " << etp << (L.etp ? "" : " (= TP, etp not given)") << " and PP " << L.pp
          << " on " << world << " GPUs: EDP = " << world << " / (" << etp << " x " << L.ep << " x " << L.pp
          << ") = " << approx(static_cast<double>(world) / expert_grid);
    // Point at ETP when it was given and EP alone would fit the grid.
    const bool etp_at_fault = L.etp && world % (static_cast<int64_t>(L.ep) * L.pp) == 0;
    out.push_back(src.at(etp_at_fault ? "/layout/etp" : "/layout/ep", found.str(),
                         "a whole expert-data-parallel degree (world divisible by ETP x EP x PP = " +
                             std::to_string(expert_grid) + ")"));
  }
}

/// Experts divisible by EP (EP 1 on a dense model), heads by TP.
void check_model_divisors(const Recipe& r, const ModelConfig& m, const SourceDoc& src, Diagnostics& out) {
  const RecipeLayout& L = r.layout;
  if (m.num_experts == 0 && L.ep > 1) {
    out.push_back(src.at("/layout/ep", "EP " + std::to_string(L.ep) + " on " + m.name + ", a dense model (no experts)",
                         "EP 1 (expert parallelism splits experts)"));
  } else if (m.num_experts % L.ep != 0) {
    out.push_back(src.at("/layout/ep", "EP " + std::to_string(L.ep),
                         "a divisor of the " + std::to_string(m.num_experts) + " experts of " + m.name + " (" +
                             std::to_string(m.num_experts) + " / " + std::to_string(L.ep) + " = " +
                             approx(static_cast<double>(m.num_experts) / L.ep) + " experts per rank)"));
  }
  struct HeadCount {
    const char* what;
    int64_t n;
  };
  const HeadCount heads[] = {{"attention heads", m.num_attention_heads},
                             {"KV heads", m.num_kv_heads},
                             {"gated-delta-net key heads", m.linear_num_key_heads},
                             {"gated-delta-net value heads", m.linear_num_value_heads}};
  std::string failing;
  for (const auto& h : heads)
    if (h.n % L.tp != 0) failing += (failing.empty() ? "" : ", ") + std::to_string(h.n) + " " + h.what;
  if (!failing.empty()) {
    const bool gdn = m.family == ModelFamily::kQwen35;  // other families have no gated-delta-net heads
    out.push_back(src.at("/layout/tp",
                         "TP " + std::to_string(L.tp) + ", which does not divide the " + failing + " of " + m.name,
                         "a divisor of the attention heads (" + std::to_string(m.num_attention_heads) + ")" +
                             (gdn ? ", " : " and ") + "KV heads (" + std::to_string(m.num_kv_heads) + ")" +
                             (gdn ? " and gated-delta-net key (" + std::to_string(m.linear_num_key_heads) +
                                        ") and value heads (" + std::to_string(m.linear_num_value_heads) + ")"
                                  : std::string()) +
                             ": heads not divisible by TP cannot be split over the TP ranks"));
  }
}

/// Sequence parallel: required for MoE with TP > 1, meaningless with TP 1; it splits every row over TP.
void check_sequence_parallel(const Recipe& r, const ModelConfig* model, const SourceDoc& src, Diagnostics& out) {
  const RecipeLayout& L = r.layout;
  const bool moe = model && model->num_experts > 0;  // architecture unknown: not checked (validate's warning)
  if (moe && L.tp > 1 && !L.sequence_parallel) {
    out.push_back(src.at("/layout/sequence_parallel", "false with TP " + std::to_string(L.tp) + " on a MoE model",
                         "true (MoE with TP > 1 requires sequence parallel)"));
  }
  // Sequence parallel splits each CP rank's part of a row (row_tokens / CP) over the TP ranks (Korthikanti et
  // al. 2022).
  const bool cp_split_ok = L.cp == 1 || r.workload.row_tokens % (2 * L.cp) == 0;  // else reported at layout.cp
  const int64_t sp_divisor = static_cast<int64_t>(L.cp) * L.tp;
  if (L.sequence_parallel && L.tp > 1 && cp_split_ok && r.workload.row_tokens % sp_divisor != 0) {
    out.push_back(src.at("/workload/row_tokens",
                         std::to_string(r.workload.row_tokens) + "-token rows, not divisible by " +
                             (L.cp > 1 ? "CP x TP = " + std::to_string(sp_divisor) : "TP " + std::to_string(L.tp)) +
                             " under sequence parallel",
                         "row_tokens divisible by " + (L.cp > 1 ? "CP x TP = " : std::string("TP = ")) +
                             std::to_string(sp_divisor) +
                             " (sequence parallel splits every row's sequence over the "
                             "TP ranks)"));
  }
  if (L.tp == 1 && L.sequence_parallel) {
    out.push_back(src.at("/layout/sequence_parallel", "true with TP 1",
                         "false (sequence parallel splits activations across the TP group; with TP 1 there is none)"));
  }
}

/// Layers per pipeline stage, and VPP.
void check_pipeline(const Recipe& r, const ModelConfig& m, const SourceDoc& src, Diagnostics& out) {
  const RecipeLayout& L = r.layout;
  const int64_t layers = m.num_layers;
  const auto stages = stage_layer_counts(layers, L.pp, L.first_stage_layers, L.last_stage_layers);
  if (stages.empty()) {
    if (!L.first_stage_layers) {
      out.push_back(src.at("/layout/pp",
                           "PP " + std::to_string(L.pp) + " for " + std::to_string(layers) + " layers (" +
                               approx(static_cast<double>(layers) / L.pp) + " per stage)",
                           "a PP degree dividing " + std::to_string(layers) +
                               " layers, or layout.layer_split with first and last stage layer counts"));
    } else if (L.pp < 2) {
      out.push_back(src.at("/layout/layer_split", "a first/last stage split with PP " + std::to_string(L.pp),
                           "PP >= 2, or no layer_split"));
    } else {
      const int64_t f = *L.first_stage_layers, l = *L.last_stage_layers;
      const int64_t middle = layers - f - l;
      const int middle_stages = L.pp - 2;
      std::ostringstream found;
      found << "first " << f << " + last " << l << " of " << layers << " layers leaves " << middle << " for "
            << middle_stages << " middle stages";
      if (middle_stages > 0) found << " (" << approx(static_cast<double>(middle) / middle_stages) << " each)";
      out.push_back(src.at("/layout/layer_split", found.str(),
                           middle_stages > 0 ? "a positive whole number of layers per middle stage"
                                             : "first + last = " + std::to_string(layers) + " with PP 2"));
    }
  } else if (L.vpp > 1 && L.pp < 2) {
    out.push_back(src.at("/layout/vpp", "VPP " + std::to_string(L.vpp) + " with PP " + std::to_string(L.pp),
                         "VPP 1, or PP >= 2 (virtual pipeline stages split a pipeline's stages)"));
  } else if (L.vpp > 1) {
    for (size_t s = 0; s < stages.size(); ++s) {
      if (stages[s] % L.vpp != 0) {
        out.push_back(src.at("/layout/vpp",
                             "VPP " + std::to_string(L.vpp) + " with stage layer counts " + list(stages) + " (stage " +
                                 std::to_string(s) + " has " + std::to_string(stages[s]) + ")",
                             "a divisor of every stage's layer count"));
        break;
      }
    }
  }
}

/// Context parallel splits each row into 2 x CP chunks (load-balanced causal CP, as in Megatron-LM).
void check_context_parallel(const Recipe& r, const SourceDoc& src, Diagnostics& out) {
  const RecipeLayout& L = r.layout;
  if (L.cp > 1 && r.workload.row_tokens % (2 * L.cp) != 0) {
    out.push_back(src.at(
        "/layout/cp", "CP " + std::to_string(L.cp) + " with " + std::to_string(r.workload.row_tokens) + "-token rows",
        "a CP degree with row_tokens divisible by 2 x CP = " + std::to_string(2 * L.cp) +
            " (each row is split into 2 x CP chunks)"));
  }
}

/// Microbatches: rows per microbatch and microbatches per step per DP rank.
void check_microbatches(const Recipe& r, const SourceDoc& src, Diagnostics& out) {
  const RecipeLayout& L = r.layout;
  const int64_t row_tokens = r.workload.row_tokens;
  const int64_t rows_mb = rows_per_microbatch(L.max_tokens_per_gpu, row_tokens);
  if (rows_mb < 1) {
    out.push_back(src.at("/layout/max_tokens_per_gpu", counted(L.max_tokens_per_gpu, "token"),
                         "at least one row of " + counted(row_tokens, "token") + " (workload.row_tokens)"));
    return;
  }
  if (L.rows_per_microbatch && *L.rows_per_microbatch != rows_mb) {
    out.push_back(src.at("/layout/rows_per_microbatch", std::to_string(*L.rows_per_microbatch),
                         std::to_string(rows_mb) + " = max_tokens_per_gpu " + std::to_string(L.max_tokens_per_gpu) +
                             " / row_tokens " + std::to_string(row_tokens)));
  }
  const int64_t per_dp_rows = r.workload.global_batch;
  if (per_dp_rows % (static_cast<int64_t>(L.dp) * rows_mb) != 0) {
    out.push_back(src.at("/workload/global_batch",
                         "global batch " + std::to_string(per_dp_rows) + " over DP " + std::to_string(L.dp) + " with " +
                             std::to_string(rows_mb) + " rows per microbatch = " +
                             approx(static_cast<double>(per_dp_rows) / L.dp / rows_mb) + " microbatches per DP rank",
                         "a whole number of microbatches per DP rank (global batch divisible by DP x rows per "
                         "microbatch = " +
                             std::to_string(L.dp * rows_mb) + ")"));
  } else if (L.vpp > 1) {
    const int64_t mbs = per_dp_rows / L.dp / rows_mb;
    if (mbs < L.pp || mbs % L.pp != 0) {
      out.push_back(src.at("/layout/vpp",
                           "VPP " + std::to_string(L.vpp) + " with " + std::to_string(mbs) +
                               " microbatches per DP rank and PP " + std::to_string(L.pp),
                           "microbatches per DP rank >= PP and a multiple of PP (interleaved schedule)"));
    }
  }
}

}  // namespace

Diagnostics check_layout(const Recipe& r, const ModelConfig* model, const SourceDoc& src) {
  Diagnostics out;
  check_world(r, src, out);
  check_expert_grid(r, src, out);
  if (model) check_model_divisors(r, *model, src, out);
  check_sequence_parallel(r, model, src, out);
  if (model) check_pipeline(r, *model, src, out);
  check_context_parallel(r, src, out);
  check_microbatches(r, src, out);
  return out;
}

Diagnostics check_dispatcher_stated(const Recipe& r, const ModelConfig* model, const SourceDoc& src) {
  const bool moe = model ? model->num_experts > 0 : r.layout.ep > 1;
  if (r.layout.dispatcher_stated || !moe) return {};
  const std::string why = model ? model->name + " has " + std::to_string(model->num_experts) + " experts"
                                : "EP " + std::to_string(r.layout.ep) + " splits experts";
  return {src.at("/layout/dispatcher", "missing (" + why + ")",
                 "one of " + enum_choices<Dispatcher>() + " (the MoE token dispatcher; a dense model needs none)")};
}

std::string layout_label(const RecipeLayout& l) {
  std::string s = fmt::format("TP{} PP{}", l.tp, l.pp);
  if (l.vpp > 1) s += fmt::format(" VPP{}", l.vpp);
  if (l.cp > 1) s += fmt::format(" CP{}", l.cp);
  if (l.ep > 1) s += fmt::format(" EP{}", l.ep);
  if (l.etp && *l.etp > 1) s += fmt::format(" ETP{}", *l.etp);
  s += fmt::format(" DP{}", l.dp);
  if (l.first_stage_layers && l.last_stage_layers)
    s += fmt::format(" first {} / last {}", *l.first_stage_layers, *l.last_stage_layers);
  return s;
}

std::vector<std::string> label_disagreements(const RecipeLayout& l) {
  const std::array<std::pair<const char*, int>, 7> degrees{{{"TP", l.tp},
                                                            {"PP", l.pp},
                                                            {"VPP", l.vpp},
                                                            {"CP", l.cp},
                                                            {"EP", l.ep},
                                                            {"ETP", l.effective_etp()},
                                                            {"DP", l.dp}}};
  std::vector<std::string> out;
  std::array<bool, 7> named{};
  static const std::regex token(R"(\b(TP|PP|VPP|CP|EP|ETP|DP)([0-9]+)\b)");
  for (auto it = std::sregex_iterator(l.label.begin(), l.label.end(), token); it != std::sregex_iterator(); ++it) {
    for (size_t i = 0; i < degrees.size(); ++i) {
      if ((*it)[1].str() != degrees[i].first) continue;
      named[i] = true;
      const std::string value = (*it)[2].str();
      if (value != std::to_string(degrees[i].second))
        out.push_back(fmt::format("{}{} (layout.{} {})", degrees[i].first, value, ascii_lower(degrees[i].first),
                                  degrees[i].second));
    }
  }
  const bool names_degrees = std::find(named.begin(), named.end(), true) != named.end();
  for (const size_t i : {size_t{2}, size_t{3}})  // VPP, CP: a split the reader must not miss
    if (names_degrees && !named[i] && degrees[i].second > 1)
      out.push_back(fmt::format("no {} (layout.{} {})", degrees[i].first, ascii_lower(degrees[i].first),
                                degrees[i].second));
  return out;
}

Diagnostics check_layout_label(const Recipe& recipe, const SourceDoc& src) {
  const std::vector<std::string> problems = label_disagreements(recipe.layout);
  if (problems.empty()) return {};
  Diagnostic d = src.at("/layout/label", fmt::format("\"{}\": {}", recipe.layout.label, fmt::join(problems, ", ")),
                        "a label the layout's fields agree with (they say " + layout_label(recipe.layout) + ")");
  d.severity = "warning";
  return {d};
}

void require_layout(const Recipe& recipe, const ModelConfig* model) {
  const Diagnostics problems = check_layout(recipe, model, SourceDoc{});
  if (problems.empty()) return;
  const Diagnostic& d = problems.front();
  throw std::invalid_argument(d.path + ": " + d.found + ", expected " + d.expected);
}

}  // namespace recipebench
