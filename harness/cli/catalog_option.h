// `--catalog FILE` of the commands that read the hardware catalog, and the RECIPEBENCH_CATALOG environment variable
// (docs/catalog.md).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace recipebench::cli {

/// Adds `--catalog FILE` to the subcommands of `app` that read the hardware catalog (validate, report, run, import,
/// compare, predict, plan), all writing to `file`.
void add_catalog_option(CLI::App& app, std::string& file);

/// Sets the process's catalog for the parsed subcommand: the embedded catalog with `file` laid over it, else the
/// file named by RECIPEBENCH_CATALOG when set and not empty, else the embedded catalog alone. Prints each problem of
/// the file as a located diagnostic on stderr and returns kUsage (2); kOk when the catalog is set or there is no file.
/// A subcommand without the option (converge, models) reads no catalog file.
int apply_catalog_option(const CLI::App& app, const std::string& file);

}  // namespace recipebench::cli
