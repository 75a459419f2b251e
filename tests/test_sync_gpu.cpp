// bench.fail_on_sync on one GPU (docs/distributed.md, "Host synchronisation"): the one-GPU step of the 35B-A3B proxy
// recipe (its 4 layers: Gated DeltaNet, gated attention, sparse MoE with grouped-GEMM experts, the chunked LM loss;
// built from tests/data/gpu/qwen3.5-35b-a3b-4-layers-64-experts.json, the 35B-A3B widths with 64 of its 256 experts, so
// that the run fits an 80 GB GPU: the memory plan's peak 50.0 GB, against 93.5 GB at 256 experts) runs with libtorch's
// CUDA synchronisation-debug mode at error from its first forward pass to the optimizer's gradient norm, and completes:
// nothing there makes the host wait for the GPU. The negative control injects a .item() on a CUDA tensor into that
// region at step 1 (RECIPEBENCH_INJECT_SYNC_STEP): with the check the run fails there, its record naming the operator
// and the step; without it the same run completes (so the failure is the check's). [sync] runs libtorch operations
// (bench.kernels ops); [sync-fused] the fused CUDA kernels. [sync-ep2]: the 2-GPU EP2 proxy with bench.ep_dispatch
// fixed_capacity runs under the check and completes, and with host_splits (which reads the all-to-all's split sizes on
// the host) the run is refused before it starts. Without a GPU (nvidia-smi finds none), or with fewer than 2 for
// [sync-ep2], it exits 77, which CTest reports as skipped, never passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "record/run_record.h"
#include "record/run_record_check.h"

using namespace recipebench;
namespace fs = std::filesystem;

namespace {

constexpr int kSkip = 77;
const fs::path kOut = RECIPEBENCH_TEST_OUT;

struct GpuRun {
  int exit_code = -1;
  RunRecord record;
};

/// The proxy's model: the 35B-A3B widths at 4 layers and 64 experts (fits an H100's 80 GB as an H200's 141 GB).
const std::string kProxyConfig =
    std::string(RECIPEBENCH_SOURCE_DIR) + "/tests/data/gpu/qwen3.5-35b-a3b-4-layers-64-experts.json";

/// One 3-step run of the proxy recipe `recipe` (under recipes/qwen3.5-35b-a3b/h200/, built from kProxyConfig) on the
/// GPU into kOut/name with
/// `extra` arguments and `env` assignments (prefixed to the command); returns its exit code and its record (the only
/// .json in the folder; with `want_record` false none is looked for). `log`: set to the command's output.
GpuRun run_proxy(const std::string& name, const std::string& extra, const std::string& env = "",
                 const std::string& recipe = "proxy4l-1gpu-bf16.yaml", bool want_record = true,
                 std::string* log = nullptr) {
  const fs::path dir = kOut / name;
  fs::remove_all(dir);
  const std::string cmd = env + " " + RECIPEBENCH_BINARY + " run " + RECIPEBENCH_SOURCE_DIR +
                          "/recipes/qwen3.5-35b-a3b/h200/" + recipe + " --model-config " + kProxyConfig +
                          " --device cuda --steps 3 --window 1:2 " + extra +
                          " --out " + dir.string() + " > " + dir.string() + ".log 2>&1";
  INFO(cmd << "\n(output: " << dir.string() << ".log)");
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  GpuRun r;
  r.exit_code = WEXITSTATUS(status);
  if (log) {
    std::ifstream in(dir.string() + ".log");
    std::stringstream s;
    s << in.rdbuf();
    *log = s.str();
  }
  if (!want_record) return r;
  REQUIRE(fs::exists(dir));
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") {
      r.record = RunRecord::from_json(read_json_file(e.path().string()), e.path().string());
      return r;
    }
  FAIL("no run record in " << dir);
  return r;
}

/// The whole check on one kernels path: a clean run, the injected synchronisation caught, and the same injection
/// ignored without the check.
void check_kernels(const std::string& kernels) {
  const std::string k = "--kernels " + kernels + " ";
  const GpuRun clean = run_proxy(kernels + "-clean", k + "--fail-on-sync");
  INFO("clean run: " << (clean.record.error ? clean.record.error->message : ""));
  CHECK(clean.exit_code == 0);
  CHECK(clean.record.complete());
  CHECK(clean.record.steps.size() == 3);
  CHECK(clean.record.options.settings.fail_on_sync);

  const std::string inject = "RECIPEBENCH_INJECT_SYNC_STEP=1";
  const GpuRun caught = run_proxy(kernels + "-injected", k + "--fail-on-sync", inject);
  CHECK(caught.exit_code == 1);
  REQUIRE(caught.record.status == RunStatus::kFailed);
  REQUIRE(caught.record.error);
  CHECK(caught.record.error->step == 1);
  const std::string message = caught.record.error->message;
  INFO(message);
  CHECK(message.find("step 1: fail_on_sync:") != std::string::npos);
  CHECK(message.find("aten::item") != std::string::npos);
  CHECK(message.find("called a synchronizing CUDA operation") != std::string::npos);
  CHECK(caught.record.steps.size() == 1);  // step 0 ran under the check

  const GpuRun unchecked = run_proxy(kernels + "-injected-unchecked", k, inject);
  CHECK(unchecked.exit_code == 0);
  CHECK(unchecked.record.complete());
  CHECK_FALSE(unchecked.record.options.settings.fail_on_sync);
}

}  // namespace

TEST_CASE("the one-GPU step does not synchronise the host (libtorch operations); an injected .item() is caught",
          "[sync]") {
  check_kernels("ops");
}

TEST_CASE("the one-GPU step does not synchronise the host (fused CUDA kernels); an injected .item() is caught",
          "[sync-fused]") {
  check_kernels("fused");
}

TEST_CASE(
    "the 2-GPU EP2 step does not synchronise the host with the fixed-capacity dispatcher; host_splits is "
    "refused under the check",
    "[sync-ep2]") {
  const std::string recipe = "proxy4l-2gpu-ep2-bf16.yaml";
  const GpuRun fixed = run_proxy("ep2-fixed-capacity", "--ep-dispatch fixed_capacity --fail-on-sync", "", recipe);
  INFO("fixed_capacity run: " << (fixed.record.error ? fixed.record.error->message : ""));
  CHECK(fixed.exit_code == 0);
  CHECK(fixed.record.complete());
  CHECK(fixed.record.steps.size() == 3);
  CHECK(fixed.record.options.settings.fail_on_sync);
  CHECK(fixed.record.options.settings.ep_dispatch == EpDispatch::kFixedCapacity);
  CHECK(fixed.record.options.place.world == 2);

  std::string log;
  const GpuRun host = run_proxy("ep2-host-splits", "--ep-dispatch host_splits --fail-on-sync", "", recipe, false, &log);
  INFO(log);
  CHECK(host.exit_code == 2);  // a usage refusal, before any rank starts
  CHECK(log.find("--fail-on-sync: true, expected false or absent with bench.ep_dispatch host_splits on EP 2") !=
        std::string::npos);
  CHECK(log.find("use --ep-dispatch fixed_capacity") != std::string::npos);
}

/// GPUs nvidia-smi lists (0 when it fails).
int gpu_count() {
  std::FILE* p = popen("nvidia-smi -L 2>/dev/null | grep -c '^GPU'", "r");
  if (!p) return 0;
  int n = 0;
  if (std::fscanf(p, "%d", &n) != 1) n = 0;
  pclose(p);
  return n;
}

int main(int argc, char** argv) {
  const int gpus = gpu_count();
  if (gpus == 0) {
    std::puts("no GPU (nvidia-smi): skipped");
    return kSkip;
  }
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).find("[sync-ep2]") != std::string::npos && gpus < 2) {
      std::printf("%d GPU (nvidia-smi), the EP2 test needs 2: skipped\n", gpus);
      return kSkip;
    }
  fs::create_directories(kOut);
  return Catch::Session().run(argc, argv);
}
