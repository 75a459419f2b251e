// Helpers shared by the harness tests: paths into the source tree, a recipe file's errors.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "recipe/validate.h"

namespace recipebench::test {

/// Absolute path of a file in the source tree, e.g. source_path("tests/data/bad/x.yaml").
inline std::string source_path(const std::string& rel) { return std::string(RECIPEBENCH_SOURCE_DIR) + "/" + rel; }

/// A file of the field cases' inputs, e.g. case_path("plan-no-memory-headroom/recipe.yaml").
inline std::string case_path(const std::string& rel) { return source_path("tests/data/cases/" + rel); }

/// The errors validate finds in the recipe file `file`, one located line each.
inline std::vector<std::string> recipe_file_errors(const std::string& file) {
  std::vector<std::string> out;
  for (const auto& d : validate_recipe_file(file).errors) out.push_back(d.to_string());
  return out;
}

/// The three seed recipes of ../shared/seed, transcribed under recipes/.
inline std::string seed_recipe(const std::string& stem) {
  return source_path("recipes/qwen3.5-397b-a17b/b200/" + stem + ".yaml");
}

/// The whole content of a file ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace recipebench::test
