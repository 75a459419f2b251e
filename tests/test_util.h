// Helpers shared by the harness tests: paths into the source tree.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace recipebench::test {

/// Absolute path of a file in the source tree, e.g. source_path("tests/data/bad/x.yaml").
inline std::string source_path(const std::string& rel) { return std::string(RECIPEBENCH_SOURCE_DIR) + "/" + rel; }

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
