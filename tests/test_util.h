// Helpers shared by the harness tests: paths into the source tree.
#pragma once

#include <string>

namespace recipebench::test {

/// Absolute path of a file in the source tree, e.g. source_path("tests/data/bad/x.yaml").
inline std::string source_path(const std::string& rel) { return std::string(RECIPEBENCH_SOURCE_DIR) + "/" + rel; }

/// The three seed recipes of ../shared/seed, transcribed under recipes/.
inline std::string seed_recipe(const std::string& stem) {
  return source_path("recipes/qwen3.5-397b-a17b/b200/" + stem + ".yaml");
}

}  // namespace recipebench::test
