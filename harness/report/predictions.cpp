#include "report/predictions.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "plan/optimizer_traffic.h"

namespace recipebench {

namespace {

std::optional<double> number(const Json& j, const char* key) {
  if (j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

Json or_null(const std::optional<double>& v) { return v ? Json(*v) : Json(); }

/// The recompute as the match reads it: granularity, method and layers, or "none".
std::string recompute_key(const RecipeRecompute& r) {
  if (r.granularity.empty() || r.granularity == "none") return "none";
  return r.granularity + "/" + r.method + "/" + std::to_string(r.num_layers);
}

/// A JSON value as a difference shows it; "-" where the document leaves it out.
std::string value_text(const Json& doc, const std::string& key) {
  if (!doc.is_object() || !doc.contains(key) || doc[key].is_null()) return "-";
  return doc[key].is_string() ? doc[key].get<std::string>() : doc[key].dump();
}

/// "field: a / b" where the two texts differ, appended to `out`.
void add_difference(const std::string& field, const std::string& a, const std::string& b,
                    std::vector<std::string>& out) {
  if (a != b) out.push_back(field + ": " + a + " / " + b);
}

/// Whether `r` is generated test data (the recipe field `generated`, docs/recipe-format.md).
bool is_generated_test_data(const Recipe& r) { return r.doc.is_object() && r.doc.contains("generated"); }

/// The measured recipe of `measured` that `p` predicts the layout of: a measurement before generated test data, then
/// the latest result.measured, then by file; nullptr when none matches.
const Recipe* measured_match(const Recipe& p, const std::vector<Recipe>& measured) {
  const Recipe* best = nullptr;
  for (const Recipe& m : measured) {
    if (!m.result || !same_measured_layout(p, m)) continue;
    if (best == nullptr || std::make_tuple(!is_generated_test_data(m), m.result->measured, best->file) >
                               std::make_tuple(!is_generated_test_data(*best), best->result->measured, m.file))
      best = &m;
  }
  return best;
}

}  // namespace

bool same_measured_layout(const Recipe& p, const Recipe& m) {
  const RecipeLayout &a = p.layout, &b = m.layout;
  return p.model == m.model && p.gpu.type == m.gpu.type && p.gpu.count == m.gpu.count &&
         p.workload.row_tokens == m.workload.row_tokens && p.workload.global_batch == m.workload.global_batch &&
         p.workload.precision == m.workload.precision && p.bench.layers == m.bench.layers &&
         std::tie(a.tp, a.pp, a.vpp, a.cp, a.ep, a.dp, a.first_stage_layers, a.last_stage_layers,
                  a.max_tokens_per_gpu) == std::tie(b.tp, b.pp, b.vpp, b.cp, b.ep, b.dp, b.first_stage_layers,
                                                    b.last_stage_layers, b.max_tokens_per_gpu) &&
         a.effective_etp() == b.effective_etp() && recompute_key(a.recompute) == recompute_key(b.recompute);
}

std::vector<std::string> setup_differences(const Recipe& p, const Recipe& m) {
  std::vector<std::string> out;
  const RecipeLayout &a = p.layout, &b = m.layout;
  add_difference("layout.sequence_parallel", a.sequence_parallel ? "true" : "false",
                 b.sequence_parallel ? "true" : "false", out);
  add_difference("layout.rows_per_microbatch", a.rows_per_microbatch ? std::to_string(*a.rows_per_microbatch) : "-",
                 b.rows_per_microbatch ? std::to_string(*b.rows_per_microbatch) : "-", out);
  add_difference("layout.offload", a.offload.empty() ? "none" : a.offload, b.offload.empty() ? "none" : b.offload,
                 out);
  add_difference("layout.dispatcher", to_string(a.dispatcher), to_string(b.dispatcher), out);
  add_difference("optimizer", optimizer_state_label(p.optimizer), optimizer_state_label(m.optimizer), out);
  const Json& pb = p.doc.contains("bench") ? p.doc["bench"] : Json();
  const Json& mb = m.doc.contains("bench") ? m.doc["bench"] : Json();
  std::set<std::string> keys;
  for (const Json* bench : {&pb, &mb})
    if (bench->is_object())
      for (auto it = bench->begin(); it != bench->end(); ++it) keys.insert(it.key());
  for (const std::string& k : keys) add_difference("bench." + k, value_text(pb, k), value_text(mb, k), out);
  return out;
}

std::optional<double> PredictedEntry::error() const {
  if (!measured_tokens_per_s_per_gpu || *measured_tokens_per_s_per_gpu <= 0) return std::nullopt;
  return tokens_per_s_per_gpu / *measured_tokens_per_s_per_gpu - 1;
}

std::vector<PredictedEntry> predicted_entries(const std::vector<Recipe>& recipes,
                                              const std::vector<Recipe>& measured) {
  std::vector<PredictedEntry> out;
  for (const Recipe& r : recipes) {
    if (!r.doc.contains("prediction") || !r.doc["prediction"].is_object()) continue;
    const Json& p = r.doc["prediction"];
    PredictedEntry e;
    e.file = r.file;
    e.model = r.model;
    e.gpu_type = r.gpu.type;
    e.gpus = r.gpu.count;
    e.layout_label = r.layout.label;
    e.status = r.status;
    e.tokens_per_s_per_gpu = p.at("tokens_per_s_per_gpu").get<double>();
    e.step_seconds = p.at("step_seconds").get<double>();
    e.mfu = number(p, "mfu");
    e.usd_per_million_tokens = number(p, "usd_per_million_tokens");
    e.gpu_hours = number(p, "gpu_hours");
    e.predicted = p.at("predicted").get<std::string>();
    e.by = p.contains("by") ? p["by"].get<std::string>() : "";
    for (const Json& f : p.at("profiles")) e.profiles.push_back(f.get<std::string>());
    e.stack_factor = number(p, "stack_factor");
    if (r.result) {
      e.measured_tokens_per_s_per_gpu = r.result->tokens_per_s_per_gpu;
      e.measured_file = r.file;
    } else if (const Recipe* m = measured_match(r, measured)) {
      e.measured_tokens_per_s_per_gpu = m->result->tokens_per_s_per_gpu;
      e.measured_file = m->file;
      e.measured_differences = setup_differences(r, *m);
    }
    out.push_back(std::move(e));
  }
  std::stable_sort(out.begin(), out.end(), [](const PredictedEntry& a, const PredictedEntry& b) {
    return std::tie(a.model, a.gpu_type, b.tokens_per_s_per_gpu, a.file) <
           std::tie(b.model, b.gpu_type, a.tokens_per_s_per_gpu, b.file);
  });
  return out;
}

Json to_json(const PredictedEntry& e) {
  return Json{{"file", e.file},
              {"model", e.model},
              {"gpu_type", e.gpu_type},
              {"gpus", e.gpus},
              {"layout", e.layout_label},
              {"status", e.status},
              {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
              {"step_seconds", e.step_seconds},
              {"mfu", or_null(e.mfu)},
              {"usd_per_million_tokens", or_null(e.usd_per_million_tokens)},
              {"gpu_hours", or_null(e.gpu_hours)},
              {"predicted", e.predicted},
              {"by", e.by},
              {"profiles", e.profiles},
              {"stack_factor", or_null(e.stack_factor)},
              {"measured_tokens_per_s_per_gpu", or_null(e.measured_tokens_per_s_per_gpu)},
              {"measured_file", e.measured_file.empty() ? Json() : Json(e.measured_file)},
              {"measured_id", e.measured_id.empty() ? Json() : Json(e.measured_id)},
              {"measured_differences", e.measured_differences},
              {"error", or_null(e.error())}};
}

}  // namespace recipebench
