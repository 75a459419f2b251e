// recipebench: validate training recipes, run them, and rank them into leaderboards.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backends/command/command_backend.h"
#include "backends/torch/torch_backend_registration.h"
#include "catalog_option.h"
#include "commands.h"
#include "subcommand_hint.h"

namespace {

/// Each subcommand's long options, for unknown_option_message (subcommand_hint.h).
std::map<std::string, std::vector<recipebench::cli::OptionSpec>> options_of(const CLI::App& app) {
  std::map<std::string, std::vector<recipebench::cli::OptionSpec>> out;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    auto& list = out[sub->get_name()];
    for (const CLI::Option* o : sub->get_options())
      for (const std::string& l : o->get_lnames()) list.push_back({"--" + l, o->get_items_expected_min() > 0});
    if (std::none_of(list.begin(), list.end(), [](const auto& o) { return o.name == "--help"; }))
      list.push_back({"--help", false});
  }
  return out;
}

/// `recipebench help [SUBCOMMAND]`: the program's help, or the subcommand's (as `SUBCOMMAND --help`). An exit code.
int print_help(const CLI::App& app, const std::vector<std::string>& names, const std::string& subcommand) {
  using namespace recipebench;
  using namespace recipebench::cli;
  if (subcommand.empty()) {
    std::cout << app.help();
    return kOk;
  }
  if (std::find(names.begin(), names.end(), subcommand) == names.end()) {
    const auto unknown = unknown_subcommand_message(subcommand, names);
    std::cerr << (unknown ? *unknown : "recipebench help: " + subcommand + ", expected a subcommand") << "\n";
    return kUsage;
  }
  std::cout << app.get_subcommand(subcommand)->help();
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace recipebench;
  using namespace recipebench::cli;
  CLI::App app{"recipebench " RECIPEBENCH_VERSION ": reproducible benchmarks of LLM training recipes"};
  app.require_subcommand(1);
  app.footer("Help on one subcommand: recipebench help SUBCOMMAND (or recipebench SUBCOMMAND --help)");
  app.set_version_flag("--version,-V", "recipebench " RECIPEBENCH_VERSION " (commit " RECIPEBENCH_GIT_COMMIT ")");
#ifdef RECIPEBENCH_HAVE_TORCH
  register_torch_backend();
#else
  register_backend("torch", torch_backend_capabilities(), nullptr);  // declared: dry runs check against it
#endif
  register_command_backend();
  std::function<int()> run;
  add_validate_command(app, run);
  add_report_command(app, run);
  add_models_command(app, run);
  add_run_command(app, run, {argv + 1, argv + argc});
  add_compare_command(app, run);
  add_converge_command(app, run);
  add_import_command(app, run);
  add_predict_command(app, run);
  add_plan_command(app, run);
  std::string catalog_file;  // --catalog FILE of the commands that read the hardware catalog (docs/catalog.md)
  add_catalog_option(app, catalog_file);
  app.failure_message(command_line_failure);  // CLI11's refusals at <command line> (subcommand_hint.h)
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
  if (argc > 1 && std::string(argv[1]) == "help") return print_help(app, names, argc > 2 ? argv[2] : "");
  if (argc > 1)
    if (const auto unknown = unknown_subcommand_message(argv[1], names)) {
      std::cerr << *unknown << "\n";
      return kUsage;
    }
  if (argc > 2)
    if (const auto unknown = unknown_option_message(argv[1], {argv + 2, argv + argc}, options_of(app))) {
      std::cerr << *unknown << "\n";
      return kUsage;
    }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsage;
  }
  try {
    if (const int rc = apply_catalog_option(app, catalog_file); rc != kOk) return rc;
    return run();
  } catch (const std::exception& e) {
    std::cerr << "recipebench: error: " << e.what() << "\n";
    return kFailed;
  }
}
