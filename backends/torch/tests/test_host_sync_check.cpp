// bench.fail_on_sync's pieces that run without a GPU (train/host_sync_check.h): the failure message, libtorch's
// error recognised, the operators an exception unwinds named by the recorder, and the check doing nothing off CUDA.
// The check itself (libtorch's synchronisation-debug mode on a CUDA device) is tested on a GPU by
// tests/test_sync_gpu.cpp (CTest label cuda).
#include <catch2/catch.hpp>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "train/host_sync_check.h"

using namespace recipebench;
using namespace recipebench::train;

TEST_CASE("host_sync_message names the step, the innermost operators and libtorch's message", "[host_sync]") {
  const std::string m = host_sync_message(3, "called a synchronizing CUDA operation",
                                          {"aten::_local_scalar_dense", "aten::item", "a", "b", "c"});
  CHECK(m ==
        "step 3: fail_on_sync: a call synchronised the host with the GPU between the first forward pass and the "
        "optimizer: aten::_local_scalar_dense, called from aten::item < a < b (libtorch: called a synchronizing "
        "CUDA operation)");
  CHECK(host_sync_message(0, "x", {}).find("no operator recorded") != std::string::npos);
  // libtorch's backtrace after its first line is left out.
  CHECK(host_sync_message(2, "called a synchronizing CUDA operation\nException raised from ...", {"aten::item"}) ==
        "step 2: fail_on_sync: a call synchronised the host with the GPU between the first forward pass and the "
        "optimizer: aten::item (libtorch: called a synchronizing CUDA operation)");
}

TEST_CASE("is_host_sync_error recognises libtorch's synchronisation-debug error only", "[host_sync]") {
  CHECK(is_host_sync_error("called a synchronizing CUDA operation"));
  CHECK(is_host_sync_error("CUDA error: called a synchronizing CUDA operation\nmore"));
  CHECK_FALSE(is_host_sync_error("shape '[7]' is invalid for input of size 6"));
}

TEST_CASE("the recorder names the operators an exception unwound, innermost first, and only those",
          "[host_sync]") {
  UnwoundOpRecorder recorder;
  const auto ok = torch::ones({2, 3}).sum();  // operators that end normally are not recorded
  CHECK(ok.item<float>() == 6.0f);
  CHECK(recorder.take().empty());
  CHECK_THROWS(torch::ones({2, 3}).view({7}));  // 6 elements do not view as 7
  const std::vector<std::string> names = recorder.take();
  REQUIRE_FALSE(names.empty());
  CHECK(names.front() == "aten::view");
  CHECK(recorder.take().empty());  // take() forgets
}

TEST_CASE("off CUDA the check does nothing: the region runs, its exceptions pass unchanged", "[host_sync]") {
  const HostSyncCheck check(/*on=*/true, /*cuda=*/false);
  CHECK_FALSE(check.active());
  int runs = 0;
  check.region(4, [&] { ++runs; });
  CHECK(runs == 1);
  CHECK_THROWS_WITH(check.region(4, [] { throw std::runtime_error("called a synchronizing CUDA operation"); }),
                    "called a synchronizing CUDA operation");
  inject_host_sync(torch::Device(torch::kCPU));  // nothing to catch on the CPU: returns
}
