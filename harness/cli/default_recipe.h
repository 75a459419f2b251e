// The embedded default recipe of `recipebench run` (recipes/examples/qwen3.5-tiny-cpu.yaml, built in).
#pragma once

namespace recipebench::cli {
extern const char* const kDefaultRecipeName;  ///< its path in the source tree
extern const char* const kDefaultRecipeYaml;  ///< its text
}  // namespace recipebench::cli
