// A JSON document written as block-style YAML (yaml-cpp's emitter): the recipes `recipebench plan` proposes.
#pragma once

#include <string>

#include "util/json.h"

namespace recipebench {

/// `doc` as YAML: objects as block mappings in their key order, arrays of scalars in flow style ([1, 2]), other
/// arrays as block sequences, strings quoted where YAML would read them as something else, null as `null`,
/// numbers as JSON prints them. Read back by parse_yaml (recipe/source_doc.h) it gives `doc` again.
std::string yaml_text(const Json& doc);

}  // namespace recipebench
