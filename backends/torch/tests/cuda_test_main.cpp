// main() of test_torch_cuda, the libtorch tests that need a GPU: without a CUDA device it exits 77, which CTest
// reports as skipped (SKIP_RETURN_CODE), never passed. With one, bench.deterministic's default is applied first (as
// a run does, before the first GPU matmul).
#define CATCH_CONFIG_RUNNER
#include <torch/cuda.h>

#include <catch2/catch.hpp>

#include <cstdio>

#include "model/determinism.h"

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  recipebench::torch_model::set_deterministic(true);
  return Catch::Session().run(argc, argv);
}
