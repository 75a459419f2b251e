// The JSON value type used across the harness: insertion-ordered so written files keep a readable field order.
#pragma once

#include <nlohmann/json.hpp>

namespace recipebench {
using Json = nlohmann::ordered_json;
}
