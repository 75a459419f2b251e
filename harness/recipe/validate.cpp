#include "recipe/validate.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>

#include "catalog/models.h"
#include "recipe/correctness_check.h"
#include "recipe/layout_check.h"
#include "recipe/result_check.h"
#include "recipe/run_model.h"
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
  // Figures and layer arithmetic follow the model that ran: bench.layers (a proxy run's layer count) when given.
  const std::optional<RunModel> ran = run_model(*out.recipe);
  const ModelConfig* model = ran ? &ran->model : nullptr;
  for (auto& d : check_result(*out.recipe, model, src)) out.errors.push_back(std::move(d));
  for (auto& d : check_correctness(*out.recipe, src)) out.errors.push_back(std::move(d));
  for (auto& d : check_layout(*out.recipe, model, src)) out.errors.push_back(std::move(d));
  std::stable_sort(out.errors.begin(), out.errors.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  return out;
}

}  // namespace

std::vector<std::string> collect_files(const std::vector<std::string>& paths,
                                       const std::vector<std::string>& extensions) {
  auto wanted = [&](const fs::path& p) {
    return std::find(extensions.begin(), extensions.end(), p.extension().string()) != extensions.end();
  };
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (fs::is_directory(st)) {
      // A folder walk goes on past entries it cannot enter or read (permissions, symlink loops): such an entry
      // is listed anyway when its name matches, so loading it reports why; only regular files otherwise.
      std::vector<std::string> found;
      fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        std::error_code entry_ec;
        const bool regular = it->is_regular_file(entry_ec);
        if (!wanted(it->path())) continue;
        if (regular || entry_ec)
          found.push_back(it->path().string());
        else if (!it->is_directory(entry_ec))
          found.push_back(it->path().string());  // a FIFO, device...: refused on load
      }
      if (ec) out.push_back(p);  // the folder itself could not be read: loading it says why
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(st)) {
      out.push_back(p);
    } else if (fs::exists(st)) {
      throw std::invalid_argument(p + ": not a regular file");
    } else if (ec && ec != std::errc::no_such_file_or_directory) {
      throw std::invalid_argument(p + ": " + ec.message());
    } else {
      throw std::invalid_argument("no such file or folder: " + p);
    }
  }
  return out;
}

}  // namespace recipebench
