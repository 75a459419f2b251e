// Registers the libtorch backend under the name "torch". No libtorch here, so the CLI can include it cheaply.
#pragma once

namespace recipebench {

/// Adds the torch backend to the backend registry (run/backend.h).
void register_torch_backend();

}  // namespace recipebench
