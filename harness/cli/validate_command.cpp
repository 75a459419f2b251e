// `recipebench validate PATH... [--format text|json]`
#include <CLI/CLI.hpp>

#include <iostream>

#include "commands.h"
#include "plan/memory_check.h"
#include "recipe/validate.h"

namespace recipebench::cli {

void add_validate_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand("validate", "Check recipes: schema, layout arithmetic and result consistency");
  auto paths = std::make_shared<std::vector<std::string>>();
  auto format = std::make_shared<std::string>("text");
  auto strict = std::make_shared<bool>(false);
  cmd->add_option("paths", *paths, "Recipe files, or folders searched recursively for *.yaml / *.yml")->required();
  cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--strict", *strict,
                "A recipe whose per-rank memory plan does not fit the GPU is an error (default: a warning); "
                "docs/memory-plan.md");
  cmd->callback([&run, paths, format, strict] {
    run = [paths, format, strict]() -> int {
      std::vector<std::string> files;
      try {
        files = collect_files(*paths, {".yaml", ".yml"});
      } catch (const std::invalid_argument& e) {
        std::cerr << "recipebench validate: " << e.what() << "\n";
        return kUsage;
      }
      if (files.empty()) {
        std::cerr << "recipebench validate: no *.yaml or *.yml files under the given paths\n";
        return kUsage;
      }
      size_t failed = 0, errors = 0;
      Json report = Json::array();
      for (const auto& f : files) {
        ValidatedRecipe v = validate_recipe_file(f);
        Diagnostics warnings;
        if (v.ok())
          if (auto d = check_memory_fits(*v.recipe, f)) {
            d->severity = *strict ? "error" : "warning";
            (*strict ? v.errors : warnings).push_back(*d);
          }
        failed += v.ok() ? 0 : 1;
        errors += v.errors.size();
        if (*format == "json") {
          Json errs = Json::array();
          for (const auto& d : v.errors) errs.push_back(d.to_json());
          Json warns = Json::array();
          for (const auto& d : warnings) warns.push_back(d.to_json());
          report.push_back(Json{{"file", f}, {"ok", v.ok()}, {"errors", errs}, {"warnings", warns}});
        } else {
          for (const auto& d : v.errors) std::cout << d.to_string() << "\n";
          for (const auto& d : warnings) std::cout << d.to_string() << "\n";
        }
      }
      const std::string summary = std::to_string(files.size()) + " recipe" + (files.size() == 1 ? "" : "s") + ": " +
                                  std::to_string(files.size() - failed) + " passed, " + std::to_string(failed) +
                                  " failed (" + std::to_string(errors) + " error" + (errors == 1 ? "" : "s") + ")";
      if (*format == "json") {
        std::cout << Json{{"files", report},
                          {"summary", Json{{"recipes", files.size()},
                                           {"passed", files.size() - failed},
                                           {"failed", failed},
                                           {"errors", errors},
                                           {"text", summary}}}}
                         .dump(2)
                  << "\n";
      } else {
        std::cout << summary << "\n";
      }
      return failed ? kFailed : kOk;
    };
  });
}

}  // namespace recipebench::cli
