#include "report/predictions.h"

#include <algorithm>
#include <tuple>

namespace recipebench {

namespace {

std::optional<double> number(const Json& j, const char* key) {
  if (j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

Json or_null(const std::optional<double>& v) { return v ? Json(*v) : Json(); }

}  // namespace

std::optional<double> PredictedEntry::error() const {
  if (!measured_tokens_per_s_per_gpu || *measured_tokens_per_s_per_gpu <= 0) return std::nullopt;
  return tokens_per_s_per_gpu / *measured_tokens_per_s_per_gpu - 1;
}

std::vector<PredictedEntry> predicted_entries(const std::vector<Recipe>& recipes) {
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
    if (r.result) e.measured_tokens_per_s_per_gpu = r.result->tokens_per_s_per_gpu;
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
              {"error", or_null(e.error())}};
}

}  // namespace recipebench
