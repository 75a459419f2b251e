#include "report/report_inputs.h"

#include <array>
#include <filesystem>

namespace fs = std::filesystem;

namespace recipebench {

YamlKind classify_yaml(const Json& doc) {
  if (!doc.is_object()) return YamlKind::kOther;
  if (doc.contains("schema_version")) return YamlKind::kRecipe;
  // The recipe schema's other required keys: two of them make a recipe whose schema_version is missing.
  static const std::array<const char*, 6> kRecipeKeys{"model", "gpu", "author", "status", "workload", "layout"};
  int recipe_keys = 0;
  for (const char* k : kRecipeKeys) recipe_keys += doc.contains(k) ? 1 : 0;
  if (recipe_keys >= 2) return YamlKind::kRecipe;
  bool catalog = !doc.empty();
  for (const auto& item : doc.items())
    catalog = catalog && (item.key() == "gpus" || item.key() == "instances" || item.key().rfind("x-", 0) == 0);
  return catalog ? YamlKind::kCatalog : YamlKind::kOther;
}

JsonKind classify_json(const Json& doc) {
  const Json schema = doc.is_object() && doc.contains("schema") ? doc["schema"] : Json();
  if (!schema.is_string()) return JsonKind::kOtherDocument;
  const std::string s = schema.get<std::string>();
  if (s.rfind("recipebench-run-record/", 0) == 0) return JsonKind::kRunRecord;
  if (s == "recipebench-leaderboard/1") return JsonKind::kEarlierReport;
  return JsonKind::kOtherDocument;
}

std::string canonical_path(const std::string& file) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(file, ec), ec);
  return ec ? file : p.string();
}

std::vector<std::string> files_named_by_recipe(const Json& doc, const std::string& recipe_file) {
  std::vector<std::string> out;
  if (!doc.is_object() || !doc.contains("model_params") || !doc["model_params"].is_object()) return out;
  const Json& config = doc["model_params"].contains("config") ? doc["model_params"]["config"] : Json();
  if (!config.is_string() || config.get<std::string>().empty()) return out;
  out.push_back(canonical_path((fs::path(recipe_file).parent_path() / config.get<std::string>()).string()));
  return out;
}

std::string not_a_recipe_reason(YamlKind kind) {
  return kind == YamlKind::kCatalog
             ? "a hardware catalog, not a recipe (give it with --catalog)"
             : "not a recipe (no schema_version, nor two of model, gpu, author, status, workload, layout)";
}

std::string skipped_note(const std::string& file, const std::string& why) { return file + ": note: skipped, " + why; }

}  // namespace recipebench
