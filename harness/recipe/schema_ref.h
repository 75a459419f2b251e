// Following local "$ref"s ("#/definitions/x") inside a JSON Schema held as a JSON value.
#pragma once

#include <string>

#include "util/json.h"

namespace recipebench {

/// The schema `s` refers to after following up to 16 local "$ref"s from `root` (s itself when it has none).
/// J is Json or const Json. Throws nlohmann::json::out_of_range for a reference that names nothing.
template <typename J>
J& resolve_schema_ref(J& root, J& s) {
  J* cur = &s;
  for (int i = 0; i < 16 && cur->is_object() && cur->contains("$ref"); ++i) {
    std::string ref = (*cur)["$ref"].template get<std::string>();
    if (ref.rfind("#", 0) == 0) ref = ref.substr(1);
    cur = &root.at(Json::json_pointer(ref));
  }
  return *cur;
}

}  // namespace recipebench
