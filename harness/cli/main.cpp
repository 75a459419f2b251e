// recipebench: validate training recipes, run them, and rank them into leaderboards.
#include <CLI/CLI.hpp>

#include <iostream>

#include "backend/backend.h"
#include "backends/command/command_backend.h"
#include "backends/torch/torch_backend_registration.h"
#include "catalog_option.h"
#include "commands.h"
#include "subcommand_hint.h"

int main(int argc, char** argv) {
  using namespace recipebench;
  using namespace recipebench::cli;
  CLI::App app{"recipebench " RECIPEBENCH_VERSION ": reproducible benchmarks of LLM training recipes"};
  app.require_subcommand(1);
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
  add_run_command(app, run);
  add_compare_command(app, run);
  add_converge_command(app, run);
  add_import_command(app, run);
  add_predict_command(app, run);
  add_plan_command(app, run);
  std::string catalog_file;  // --catalog FILE of the commands that read the hardware catalog (docs/catalog.md)
  add_catalog_option(app, catalog_file);
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
  if (argc > 1)
    if (const auto unknown = unknown_subcommand_message(argv[1], names)) {
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
