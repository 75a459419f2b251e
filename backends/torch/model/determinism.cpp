#include "model/determinism.h"

#include <ATen/Context.h>
#include <torch/version.h>

#include <cstdlib>
#include <cstring>

namespace recipebench::torch_model {

void set_deterministic(bool on) {
  if (on) {
    const char* ws = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    if (!ws || (std::strcmp(ws, ":4096:8") != 0 && std::strcmp(ws, ":16:8") != 0))
      setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/1);
  }
  at::globalContext().setDeterministicAlgorithms(on, /*warn_only=*/false);
  at::globalContext().setDeterministicCuDNN(on);
  if (on) at::globalContext().setBenchmarkCuDNN(false);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  // libtorch >= 2.1 also fills every new uninitialised tensor with NaN in deterministic mode (a write per
  // allocation); nothing here reads memory it did not write, so that costs time and buys nothing.
  at::globalContext().setDeterministicFillUninitializedMemory(false);
#endif
}

}  // namespace recipebench::torch_model
