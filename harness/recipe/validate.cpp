#include "recipe/validate.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>

#include "catalog/models.h"
#include "metrics/metrics.h"
#include "recipe/bounds_check.h"
#include "recipe/correctness_check.h"
#include "recipe/launch_check.h"
#include "recipe/layout_check.h"
#include "recipe/model_check.h"
#include "recipe/result_check.h"
#include "recipe/run_model.h"
#include "recipe/schema_check.h"
#include "recipe/source_doc.h"
#include "util/format.h"

namespace fs = std::filesystem;

namespace recipebench {

namespace {

ValidatedRecipe check_document(ValidatedRecipe out, std::shared_ptr<const SourceDoc> source);

/// bench.window against bench.steps by the one window rule `run` applies (metrics.h window_problem), with run's
/// defaults for what the recipe leaves out (RunSettings: 20 steps, window 5..19). Located at bench.window when the
/// window is given (at bench.steps when only the step count makes it not fit).
void check_bench_window(const Recipe& r, const SourceDoc& src, Diagnostics& out) {
  const int steps = r.bench.steps.value_or(20);
  const StepWindow w = r.bench.window.value_or(StepWindow{5, 19});
  const std::string problem = window_problem(w, steps);
  if (problem.empty()) return;
  const size_t comma = problem.find(", expected ");
  const bool window_itself = w.first < 0 || w.first > w.last || w.steps() < kMinWindowSteps;
  const bool at_window = r.bench.window && (window_itself || !r.bench.steps);
  out.push_back(
      src.at(at_window ? "/bench/window" : "/bench/steps", problem.substr(0, comma), problem.substr(comma + 11)));
}

/// The warning that gpu.type named a family its memory singled out (resolve_gpu, catalog/hardware.h).
Diagnostic gpu_type_resolved(const Recipe& r, const SourceDoc& src) {
  Diagnostic d = src.at(
      "/gpu/type", r.gpu.type_written + " with memory_gb " + shortest(r.gpu.memory_gb) + ", read as " + r.gpu.type,
      "the GPU's catalog name (" + r.gpu.type + "; the one GPU of that family and memory, docs/catalog.md)");
  d.severity = "warning";
  return d;
}

/// Diagnostics in the order of the places they point at.
void sort_by_place(Diagnostics& d) {
  std::stable_sort(d.begin(), d.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
}

/// gpu.type's problem (gpu_type_problem, recipe/result_check.h) from the document itself, for a document that
/// failed the schema elsewhere: added unless the schema already reported gpu.type or gpu.memory_gb.
void add_gpu_type_problem(const SourceDoc& src, Diagnostics& errors) {
  const Json& doc = src.value;
  if (!doc.is_object() || !doc.contains("gpu") || !doc["gpu"].is_object()) return;
  const Json& g = doc["gpu"];
  if (!g.contains("type") || !g["type"].is_string()) return;
  for (const auto& d : errors)
    if (d.path == "gpu.type" || d.path == "gpu.memory_gb") return;
  const double memory_gb = g.contains("memory_gb") && g["memory_gb"].is_number() ? g["memory_gb"].get<double>() : 0;
  if (auto d = gpu_type_problem(g["type"].get<std::string>(), memory_gb, src)) errors.push_back(std::move(*d));
}

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
  if (!out.errors.empty()) {  // with the checks that need only their own fields, so one pass reports them all
    add_gpu_type_problem(src, out.errors);
    sort_by_place(out.errors);
    return out;
  }

  try {
    out.recipe = recipe_from_json(src.value, out.file);
  } catch (const FieldError& e) {
    out.errors.push_back(src.at(e.pointer, e.found, e.expected));
    return out;
  }
  // Figures and layer arithmetic follow the model that ran: bench.layers (a proxy run's layer count) when given.
  ModelCheck mc = check_model(*out.recipe, src);
  out.errors = std::move(mc.errors);
  out.warnings = std::move(mc.warnings);
  const ModelConfig* model = mc.ran ? &mc.ran->model : nullptr;
  const ModelConfig* architecture = model && model->architecture_known() ? model : nullptr;
  for (auto& d : check_result(*out.recipe, model, src)) out.errors.push_back(std::move(d));
  for (auto& d : check_correctness(*out.recipe, src)) out.errors.push_back(std::move(d));
  for (auto& d : check_layout(*out.recipe, architecture, src)) out.errors.push_back(std::move(d));
  for (auto& d : check_dispatcher_stated(*out.recipe, architecture, src)) out.errors.push_back(std::move(d));
  for (auto& d : check_layout_label(*out.recipe, src)) out.warnings.push_back(std::move(d));
  if (!out.recipe->gpu.type_written.empty()) out.warnings.push_back(gpu_type_resolved(*out.recipe, src));
  LaunchCheck launch = check_launch_command(*out.recipe, src, architecture);
  out.launch = std::move(launch.stated);
  for (auto& d : launch.unstated) out.warnings.push_back(std::move(d));
  check_bench_window(*out.recipe, src, out.errors);
  for (auto& d : check_bounds(*out.recipe, model, src)) out.errors.push_back(std::move(d));
  sort_by_place(out.errors);
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
      // A folder walk lists every entry it cannot read rather than skipping it without a word: a folder it cannot
      // open (permissions) is listed itself, so loading it reports why; a matching entry whose type cannot be read
      // (or a FIFO, a device) is listed, and refused on load; symlinked folders are not followed (no loops).
      std::vector<std::string> found;
      std::vector<fs::path> folders{fs::path(p)};
      while (!folders.empty()) {
        const fs::path dir = folders.back();
        folders.pop_back();
        std::error_code dir_ec;
        fs::directory_iterator it(dir, dir_ec), end;
        if (dir_ec) {
          found.push_back(dir.string());
          continue;
        }
        for (; !dir_ec && it != end; it.increment(dir_ec)) {
          std::error_code entry_ec;
          const bool link = it->is_symlink(entry_ec);
          if (it->is_directory(entry_ec)) {
            if (!link) folders.push_back(it->path());
            continue;
          }
          if (wanted(it->path())) found.push_back(it->path().string());
        }
        if (dir_ec) found.push_back(dir.string());  // stopped part way: loading the folder says why
      }
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
