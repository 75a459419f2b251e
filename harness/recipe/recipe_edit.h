// A recipe's text edited in place: one block replaced or added, every other line kept as written (comments, order,
// quoting). Used by `recipebench converge --write-recipe` for the correctness.convergence block.
#pragma once

#include <string>

#include "util/json.h"

namespace recipebench {

/// `text` (the recipe file `file`) with correctness.convergence set to `block` (written as block-style YAML,
/// recipe/yaml_write.h): an existing convergence block is replaced at its indentation; a correctness block without
/// one gets it as its last member; a recipe without a correctness block gets one at its end, whose `result` is the
/// convergence check's and whose `summary` says so. Throws InputError, located at the field, when the block cannot
/// be edited as text (a flow-style `{...}` mapping, or a block reached through an alias or merge key); the caller
/// then shows the block to paste. The result is not validated here.
std::string set_convergence_block(const std::string& text, const std::string& file, const Json& block);

}  // namespace recipebench
