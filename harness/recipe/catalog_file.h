// A user's hardware catalog file (`--catalog FILE`, or the RECIPEBENCH_CATALOG environment variable), checked like a
// recipe (YAML loading, schema/catalog.schema.yaml, then the references between entries) and laid over the embedded
// catalog (catalog/hardware.h; docs/catalog.md).
#pragma once

#include <string>

#include "catalog/hardware.h"
#include "recipe/diagnostic.h"
#include "util/json.h"

namespace recipebench {

/// The environment variable that names a user's catalog file when `--catalog` is not given.
constexpr const char* kCatalogEnvironmentVariable = "RECIPEBENCH_CATALOG";

/// The catalog schema, schema/catalog.schema.yaml, embedded at build time and parsed once.
const Json& catalog_schema();

/// The embedded catalog with a user's file laid over it, or the file's problems.
struct LoadedCatalog {
  HardwareCatalog catalog;  ///< valid when `errors` is empty
  Diagnostics errors;       ///< located: file:line:column, field path, found, expected
  bool ok() const { return errors.empty(); }
};

/// Reads catalog file `file` (YAML: a `gpus` and / or an `instances` list), checks it against the catalog schema,
/// lays it over the embedded catalog (an entry replaces the one that answers to its name, any other is added) and
/// checks the result's references (an instance's GPU, a GPU's default_instance, unique names). Never throws for bad
/// input: every problem is a located diagnostic (in the embedded files when an override breaks an embedded entry's
/// reference, e.g. a GPU's default instance replaced by one of another GPU).
LoadedCatalog load_catalog_file(const std::string& file);

/// The embedded files checked against the catalog schema and read (what tests/test_catalog.cpp asserts is empty).
Diagnostics check_embedded_catalog();

}  // namespace recipebench
