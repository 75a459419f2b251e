#include "recipe/validate.h"

#include <algorithm>
#include <memory>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "catalog/models.h"
#include "recipe/layout_check.h"
#include "recipe/result_check.h"
#include "recipe/schema_check.h"
#include "recipe/source_doc.h"

namespace fs = std::filesystem;

namespace recipebench {

namespace {

ValidatedRecipe check_document(ValidatedRecipe out, std::shared_ptr<const SourceDoc> source);

}  // namespace

ValidatedRecipe validate_recipe_file(const std::string& file) {
  ValidatedRecipe out;
  out.file = file;
  try {
    return check_document(out, std::make_shared<const SourceDoc>(load_yaml_file(file)));
  } catch (const InputError& e) {
    out.errors.push_back(e.diagnostic());
    return out;
  }
}

ValidatedRecipe validate_recipe_text(const std::string& text, const std::string& name) {
  ValidatedRecipe out;
  out.file = name;
  try {
    return check_document(out, std::make_shared<const SourceDoc>(parse_yaml(text, name)));
  } catch (const InputError& e) {
    out.errors.push_back(e.diagnostic());
    return out;
  }
}

namespace {

ValidatedRecipe check_document(ValidatedRecipe out, std::shared_ptr<const SourceDoc> source) {
  const SourceDoc& src = *source;
  out.source = source;
  static const SchemaChecker checker(recipe_schema());
  out.errors = checker.check(src);
  if (!out.errors.empty()) return out;

  try {
    out.recipe = recipe_from_json(src.value, out.file);
  } catch (const FieldError& e) {
    out.errors.push_back(src.at(e.pointer, e.found, e.expected));
    return out;
  }
  const ModelConfig* model = find_model(out.recipe->model);
  for (auto& d : check_result(*out.recipe, model, src)) out.errors.push_back(std::move(d));
  // The layout's layer arithmetic follows the run's depth: bench.layers (a proxy run's layer count) when given.
  std::optional<ModelConfig> proxy;
  if (model && out.recipe->bench.layers) proxy = model->with_layers(*out.recipe->bench.layers);
  for (auto& d : check_layout(*out.recipe, proxy ? &*proxy : model, src)) out.errors.push_back(std::move(d));
  std::stable_sort(out.errors.begin(), out.errors.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  return out;
}

}  // namespace

std::vector<std::string> collect_files(const std::vector<std::string>& paths, const std::vector<std::string>& extensions) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::recursive_directory_iterator(p)) {
        if (!entry.is_regular_file()) continue;
        const std::string ext = entry.path().extension().string();
        if (std::find(extensions.begin(), extensions.end(), ext) != extensions.end()) found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else {
      throw std::invalid_argument("no such file or folder: " + p);
    }
  }
  return out;
}

}  // namespace recipebench
