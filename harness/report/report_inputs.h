// What each file `report` walks into is, decided before it is read as a recipe or a run record (docs/reports.md,
// "What report reads"): a folder of the documented layout holds recipes, run records and the files recipes name
// (a model_params.config), and may hold anything else; only recipes and run records are inputs.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "util/json.h"

namespace recipebench {

/// What a YAML document found by report or validate is.
enum class YamlKind {
  kRecipe,   ///< has schema_version, or two of the recipe's other required top-level keys (a recipe, maybe a bad one)
  kCatalog,  ///< a hardware catalog file (gpus: / instances: only): given with --catalog, never ranked
  kOther,    ///< anything else (a mapping without recipe keys, a list, a scalar)
};

/// Classifies a parsed YAML document by its top-level keys (schema/recipe.schema.yaml `required`,
/// schema/catalog.schema.yaml `properties`).
YamlKind classify_yaml(const Json& doc);

/// What a JSON document found by report is, by its top-level "schema".
enum class JsonKind {
  kRunRecord,      ///< "recipebench-run-record/..." (any version: a record of another version is refused when read)
  kEarlierReport,  ///< "recipebench-leaderboard/1": report's own output
  kOtherDocument,  ///< another recipebench document (a prediction) or a JSON without "schema" (a config.json)
};

/// Classifies a parsed JSON document.
JsonKind classify_json(const Json& doc);

/// The files the recipe `doc` (read from `recipe_file`) names that report must not read as inputs: its
/// model_params.config, resolved against the recipe's folder (docs/recipe-format.md), as weakly canonical paths.
/// Empty when it names none; never throws.
std::vector<std::string> files_named_by_recipe(const Json& doc, const std::string& recipe_file);

/// The weakly canonical form of `file` (for comparing paths given different ways); `file` itself when that fails.
std::string canonical_path(const std::string& file);

/// Why a YAML of `kind` (not kRecipe) is skipped: "a hardware catalog, not a recipe (give it with --catalog)", "not a
/// recipe (...)".
std::string not_a_recipe_reason(YamlKind kind);

/// A one-line note for a skipped file: `<file>: note: skipped, <why>`.
std::string skipped_note(const std::string& file, const std::string& why);

}  // namespace recipebench
