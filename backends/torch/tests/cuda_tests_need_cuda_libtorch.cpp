// test_torch_cuda where libtorch has no CUDA (Debian's libtorch 1.13 is CPU-only): the GPU tests
// (backends/torch/tests/*_cuda.cpp) cannot run on any device of such a build, so they are not compiled. This stand-in
// exits 77, which CTest reports as skipped (SKIP_RETURN_CODE), never passed (docs/testing.md, "Labels").
#include <cstdio>

int main() {
  std::puts("libtorch without CUDA: the GPU tests of backends/torch/tests/*_cuda.cpp are built only against a CUDA "
            "libtorch: skipped");
  return 77;
}
