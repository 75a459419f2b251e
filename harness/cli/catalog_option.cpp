#include "catalog_option.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

#include "recipe/catalog_file.h"
#include "util/exit_code.h"

namespace recipebench::cli {

namespace {

/// The subcommands that read the hardware catalog (GPU peaks, prices, networks).
const char* const kCatalogCommands[] = {"validate", "report", "run", "import", "compare", "predict", "plan"};

}  // namespace

void add_catalog_option(CLI::App& app, std::string& file) {
  for (const char* name : kCatalogCommands)
    app.get_subcommand(name)->add_option(
        "--catalog", file,
        std::string("A hardware catalog file (YAML, docs/catalog.md) laid over the embedded one: its GPUs and "
                    "instances add to or replace those of the same name (default: $") +
            kCatalogEnvironmentVariable + ")");
}

int apply_catalog_option(const CLI::App& app, const std::string& file) {
  bool reads_catalog = false;
  for (const char* name : kCatalogCommands) reads_catalog = reads_catalog || app.got_subcommand(name);
  if (!reads_catalog) return kOk;
  std::string path = file;
  const char* env = std::getenv(kCatalogEnvironmentVariable);
  if (path.empty() && env != nullptr) path = env;
  if (path.empty()) return kOk;
  LoadedCatalog loaded = load_catalog_file(path);
  if (!loaded.ok()) {
    for (const auto& d : loaded.errors) std::cerr << d.to_string() << "\n";
    const std::string named_by = file.empty() ? std::string(" (from $") + kCatalogEnvironmentVariable + ")" : "";
    std::cerr << "recipebench: the catalog file " << path << named_by << " has " << loaded.errors.size() << " problem"
              << (loaded.errors.size() == 1 ? "" : "s") << "; nothing was done\n";
    return kUsage;
  }
  set_hardware_catalog(std::move(loaded.catalog));
  return kOk;
}

}  // namespace recipebench::cli
