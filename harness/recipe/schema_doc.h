// docs/recipe-format.md generated from the recipe schema, so the field reference never drifts from it.
#pragma once

#include <string>

#include "util/json.h"

namespace recipebench {

/// Markdown reference of every field of `schema` (a draft-04 schema as JSON): one table per mapping, in schema
/// order, with the dotted field path, type (enums and ranges spelled out), whether it is required, and the
/// description. Local "$ref"s are followed; a description beside a $ref takes precedence.
std::string schema_markdown(const Json& schema);

}  // namespace recipebench
