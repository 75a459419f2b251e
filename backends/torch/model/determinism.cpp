#include "model/determinism.h"

#include <ATen/Context.h>

#include <cstdlib>
#include <cstring>

namespace recipebench::torch_model {

void set_deterministic(bool on) {
  if (on) {
    const char* ws = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    if (!ws || (std::strcmp(ws, ":4096:8") != 0 && std::strcmp(ws, ":16:8") != 0))
      setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/1);
  }
  at::globalContext().setDeterministicAlgorithms(on, /*warn_only=*/on);
  at::globalContext().setDeterministicCuDNN(on);
  if (on) at::globalContext().setBenchmarkCuDNN(false);
}

}  // namespace recipebench::torch_model
