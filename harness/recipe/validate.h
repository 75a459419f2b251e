// `validate`: load -> schema -> typed recipe -> layout and result checks, for files and folders.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"

namespace recipebench {

/// The outcome of validating one recipe file.
struct ValidatedRecipe {
  std::string file;
  Diagnostics errors;            ///< empty when the recipe passed every check
  Diagnostics warnings;          ///< what was not checked and why (a model known by its stated counts only)
  /// The run command's flags that disagree with fields the recipe writes (recipe/launch_check.h), severity
  /// "warning": `validate` prints them, and `validate --strict` fails the recipe on them. Disagreements with fields
  /// the recipe leaves to their defaults are in `warnings`.
  Diagnostics launch;
  std::optional<Recipe> recipe;  ///< set when the file loaded and passed the schema (even if layout checks failed)
  std::shared_ptr<const SourceDoc> source;  ///< the loaded document with its marks (for later located checks)
  bool ok() const { return errors.empty(); }
};

/// Validates one recipe file: YAML loading (syntax, duplicate keys, core-schema typing), the recipe schema,
/// then check_model (recipe/model_check.h), check_result, check_correctness and check_layout (its checks on heads,
/// experts and layers only when the model's architecture is known), and check_launch_command (into `launch`). Never throws for bad input: problems are returned as diagnostics.
ValidatedRecipe validate_recipe_file(const std::string& file);

/// The same for recipe text already in memory (e.g. the embedded default recipe); `name` labels diagnostics.
ValidatedRecipe validate_recipe_text(const std::string& text, const std::string& name);

/// Expands PATHs: regular files are kept as given; folders are searched recursively for files with one of
/// `extensions` (sorted). The walk goes on past entries it cannot read, never skipping them without a word: a
/// folder it cannot open (no permission) is listed itself, and so is a matching entry whose type cannot be read;
/// loading them reports the reason ("cannot be read: Permission denied, expected a readable folder"). Symlinked
/// folders are not followed. Throws std::invalid_argument naming the first path that does not
/// exist or is not a regular file or folder (a FIFO, a device: "not a regular file").
std::vector<std::string> collect_files(const std::vector<std::string>& paths,
                                       const std::vector<std::string>& extensions);

}  // namespace recipebench
