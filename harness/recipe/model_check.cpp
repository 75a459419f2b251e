#include "recipe/model_check.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <vector>

#include "catalog/models.h"
#include "util/format.h"

namespace recipebench {

namespace {

std::string registry_names() {
  std::string names;
  for (const auto& m : model_registry()) names += (names.empty() ? "" : ", ") + m.name;
  return names;
}

/// Edit distance of two names, case-insensitive (Levenshtein).
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same =
          std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// "; did you mean Qwen3.5-397B-A17B?" when a registry name is within 2 edits of `name`, else empty.
std::string near_registry_name(const std::string& name) {
  for (const auto& m : model_registry())
    if (distance(name, m.name) <= 2) return "; did you mean " + m.name + "?";
  return "";
}

/// Stated counts need their source; a stated total is at least the stated active count.
void check_stated_fields(const Recipe& r, const std::optional<RunModel>& ran, const SourceDoc& src, Diagnostics& out) {
  if (r.model_params) {
    const RecipeModelParams& p = *r.model_params;
    if ((p.active || p.total) && p.source.empty())
      out.push_back(src.at_key("/model_params", "stated counts without model_params.source",
                               "model_params.source: where the counts come from (a model card, a paper)"));
    if (p.active && p.total && *p.total < *p.active)
      out.push_back(src.at("/model_params/total", with_commas(*p.total),
                           "at least model_params.active (" + with_commas(*p.active) + ")"));
  }
  if (!ran || ran->counts_from != CountsFrom::kStated) return;
  const std::optional<int64_t> result_n = r.result ? r.result->active_params : std::nullopt;
  const bool result_source = r.result && !r.result->active_params_source.empty();
  const bool params_source = r.model_params && !r.model_params->source.empty();
  if (result_n && !result_source && !params_source)
    out.push_back(src.at_key("/result/active_params", "count " + with_commas(*result_n) + " without its source",
                             "result.active_params.source (or model_params.source): where N comes from, since " +
                                 r.model + " is outside the registry"));
  const std::optional<int64_t> params_n = r.model_params ? r.model_params->active : std::nullopt;
  if (result_n && params_n && *result_n != *params_n && !r.bench.layers)
    out.push_back(src.at("/result/active_params/count", with_commas(*result_n),
                         with_commas(*params_n) + ", model_params.active (the same model: they must agree)"));
  if (!result_n && r.bench.layers)
    out.push_back(
        src.at("/bench/layers",
               std::to_string(*r.bench.layers) + " layers of " + r.model + ", known by model_params.active only",
               "result.active_params.count (N of the layers that ran) or model_params.config"));
}

/// Stated counts of a model the formula counts must be the formula's.
void check_against_formula(const Recipe& r, const RunModel& ran, const SourceDoc& src, Diagnostics& out) {
  if (ran.counts_from == CountsFrom::kStated || !r.model_params) return;
  const ParamCounts c = count_params(ran.full);
  const std::string why = " (" + ran.counts_note + "; docs/metrics.md)";
  if (r.model_params->active && *r.model_params->active != c.active)
    out.push_back(src.at("/model_params/active", with_commas(*r.model_params->active), with_commas(c.active) + why));
  if (r.model_params->total && *r.model_params->total != c.total)
    out.push_back(src.at("/model_params/total", with_commas(*r.model_params->total), with_commas(c.total) + why));
}

/// What is not checked for a model known by its stated counts.
Diagnostic not_checked_warning(const Recipe& r, const RunModel& ran, const SourceDoc& src) {
  Diagnostic d = src.at("/model",
                        "'" + r.model + "' is outside the registry, known by its stated counts only (" +
                            ran.counts_note + ")" + near_registry_name(r.model),
                        "model_params.config (a Hugging Face config.json) to check the layout arithmetic on its "
                        "heads, experts and layers (layout.tp, ep, pp, vpp, layer_split, sequence_parallel); not "
                        "checked");
  d.severity = "warning";
  return d;
}

}  // namespace

ModelCheck check_model(const Recipe& r, const SourceDoc& src) {
  ModelCheck out;
  try {
    out.ran = run_model(r);
  } catch (const std::invalid_argument& e) {
    out.errors.push_back(src.at("/model_params/config", e.what(),
                                "a Hugging Face config.json recipebench counts (docs/hf-config-fields.md)"));
    return out;
  }
  if (!out.ran) {
    out.errors.push_back(src.at(
        "/model", "unknown model '" + r.model + "'",
        "a registry model (" + registry_names() +
            "), or the model's parameter counts: model_params.config (a Hugging Face config.json), or stated counts "
            "with their source (model_params.active and source, or result.active_params count and source; "
            "docs/metrics.md)"));
    return out;
  }
  check_stated_fields(r, out.ran, src, out.errors);
  check_against_formula(r, *out.ran, src, out.errors);
  if (!out.ran->model.architecture_known()) out.warnings.push_back(not_checked_warning(r, *out.ran, src));
  return out;
}

}  // namespace recipebench
