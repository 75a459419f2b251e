// Precompiled header of the harness's test binaries: the harness's (harness/util/precompiled.h) and Catch2's
// single header. Not used by tests/main.cpp (recipebench_catch_main), which defines CATCH_CONFIG_MAIN before it.
#pragma once

#include "util/precompiled.h"

#include <catch2/catch.hpp>
