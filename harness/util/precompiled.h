// Precompiled header of the harness's targets (the library, the CLI; tests/precompiled.h adds Catch2 for the
// tests): the third-party and standard headers nearly every translation unit parses, nlohmann/json alone ~1.5 s of
// g++ per file on the 2-core machines (docs/testing.md, "Build time"). CMake force-includes it
// (target_precompile_headers); never included directly, and it holds no project header.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>
