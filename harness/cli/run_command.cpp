// `recipebench run [RECIPE] [--backend B] [--steps N] [--window A:B] [--out DIR] [--layers N] [--device D] ...`:
// parses the command line into a RunRequest and hands it to the run driver (run/run_driver.h) with the
// run-record writer and the console's progress table as reporters.
#include <CLI/CLI.hpp>

#include <memory>

#include "commands.h"
#include "default_recipe.h"
#include "run/console_reporter.h"
#include "run/record_writer.h"
#include "run/run_driver.h"

namespace recipebench::cli {

StepWindow parse_window(const std::string& s) {
  const auto colon = s.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument(s);
    return StepWindow{std::stoi(s.substr(0, colon)), std::stoi(s.substr(colon + 1))};
  } catch (const std::exception&) {
    throw CLI::ValidationError("--window", "expected FIRST:LAST step numbers, e.g. 5:19, got '" + s + "'");
  }
}

namespace {

/// What CLI11 fills in; turned into a RunRequest once parsing is done.
struct Args {
  std::string recipe;
  std::optional<std::string> window, device, kernels, ep_dispatch;
  bool fail_on_sync = false;
  CLI::Option* fail_on_sync_flag = nullptr;  ///< counted: set means the command line overrides bench.fail_on_sync
  RunRequest request;
};

void add_options(CLI::App& cmd, Args& a) {
  RunRequest& q = a.request;
  cmd.add_option("recipe", a.recipe, "Recipe file (default: the embedded " + std::string(kDefaultRecipeName) + ")");
  cmd.add_option("--backend", q.backend, "Backend (default: the recipe's bench.backend, else torch)");
  cmd.add_option("--steps", q.steps, "Steps to run (default 20)")->check(CLI::PositiveNumber);
  cmd.add_option("--window", a.window, "Timed window FIRST:LAST, both included (default 5:19)");
  cmd.add_option("--out", q.out_dir, "Folder for the run record (default reports/runs)");
  cmd.add_option("--layers", q.layers, "Decoder layers of a proxy run (default: the model's)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--device", a.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd.add_option("--seed", q.seed, "Data and initialisation seed");
  cmd.add_option("--deterministic", q.deterministic,
                 "true: the same bits for the same seed (default: the recipe's bench.deterministic, else true); "
                 "false allows faster non-deterministic kernels");
  cmd.add_option("--kernels", a.kernels,
                 "fused: the backend's fused CUDA kernels where they apply; ops: libtorch operations everywhere, the "
                 "reference path (default: the recipe's bench.kernels, else fused)")
      ->check(CLI::IsMember({"fused", "ops"}));
  cmd.add_option("--overlap-grad-reduce", q.overlap_grad_reduce,
                 "true: reduce-scatter the gradients in buckets during the last microbatch's backward pass (default: "
                 "the recipe's bench.overlap_grad_reduce, else false)");
  cmd.add_option("--overlap-param-gather", q.overlap_param_gather,
                 "true (or no value): defer the distributed optimizer's parameter all-gather into the next step's "
                 "forward passes, each module waiting for its own buckets (default: the recipe's "
                 "bench.overlap_param_gather, else false; no effect with DP 1 and EDP 1)")
      ->expected(0, 1)
      ->default_str("true");
  cmd.add_option("--overlap-p2p-comm", q.overlap_p2p_comm,
                 "true: post the pipeline's receives ahead, so each transfer overlaps the passes before its own "
                 "(default: the recipe's bench.overlap_p2p_comm, else false; no effect with PP 1)");
  cmd.add_option("--overlap-tp-comm", q.overlap_tp_comm,
                 "true: each column-parallel region's backward reduce-scatters its input gradient while it computes "
                 "its weight gradients, the shared expert's forward one while the routed experts compute (default: "
                 "the recipe's bench.overlap_tp_comm, else false; no effect with TP 1)");
  cmd.add_option("--grad-reduce-bucket-elements", q.grad_reduce_bucket_elements,
                 "Gradient elements per bucket with --overlap-grad-reduce true (default: the recipe's "
                 "bench.grad_reduce_bucket_elements, else 40000000)")
      ->check(CLI::Range(int64_t{1}, int64_t{2147483647}));
  a.fail_on_sync_flag = cmd.add_flag(
      "--fail-on-sync", a.fail_on_sync,
      "Fail the run on a call that makes the host wait for the GPU between a step's first forward pass and the "
      "optimizer (CUDA's synchronisation-debug mode; --fail-on-sync=false turns off the recipe's "
      "bench.fail_on_sync; default: the recipe's, else false)");
  cmd.add_option("--ep-dispatch", a.ep_dispatch,
                 "Expert-parallel dispatcher of the MoE layers: host_splits (split sizes read on the host) or "
                 "fixed_capacity (fixed blocks per peer, no host synchronisation; default: the recipe's "
                 "bench.ep_dispatch, else host_splits)")
      ->check(CLI::IsMember({"host_splits", "fixed_capacity"}));
  cmd.add_option("--model-config", q.model_config,
                 "Hugging Face config.json of the model to build instead of the registry's widths");
  cmd.add_flag("--profile", q.profile,
               "Synchronise between forward, backward and optimizer to time each phase (adds device syncs)");
  cmd.add_option("--nproc", q.nproc,
                 "Ranks to start on this host (one process each; CPU: Gloo). Without it the rank comes from "
                 "torchrun-style (RANK, WORLD_SIZE...) or Slurm variables (docs/distributed.md)")
      ->check(CLI::Range(1, 1024));
  cmd.add_option("--format", q.log_format,
                 "Command backend: how to read its step lines, megatron, torchtitan, hf or regex:<pattern> "
                 "(default: the recipe's bench.log_format, else detected)");
  cmd.add_option("--timeout", q.timeout_seconds,
                 "Command backend: stop the command's process group after this many seconds (default: the "
                 "recipe's bench.timeout_seconds, else none)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--data", q.data_path, "Pre-tokenized rows file (docs/data-format.md) instead of synthetic rows");
  cmd.add_flag("--dry-run", q.dry_run,
               "Print the rank map (each rank's TP, CP, DP, PP, ETP, EP, EDP coordinates, layers per virtual stage, "
               "microbatches, schedule) and exit; needs no GPU and runs nothing");
}

}  // namespace

void add_run_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand("run", "Run a recipe's training steps on a backend and write a run record");
  auto a = std::make_shared<Args>();
  add_options(*cmd, *a);
  cmd->callback([&run, a] {
    RunRequest q = a->request;
    if (a->window) q.window = parse_window(*a->window);
    if (a->device) q.device = parse_enum<Device>(*a->device);  // one of them: CLI11 checked it
    if (a->kernels) q.kernels = parse_enum<Kernels>(*a->kernels);
    if (a->ep_dispatch) q.ep_dispatch = parse_enum<EpDispatch>(*a->ep_dispatch);
    if (a->fail_on_sync_flag->count() > 0) q.fail_on_sync = a->fail_on_sync;
    if (a->recipe.empty()) {
      q.recipe_path = std::string("<embedded>/") + kDefaultRecipeName;
      q.recipe_text = std::string(kDefaultRecipeYaml);
    } else {
      q.recipe_path = a->recipe;
    }
    q.build = BuildInfo{RECIPEBENCH_VERSION, RECIPEBENCH_GIT_COMMIT, RECIPEBENCH_BUILD_TYPE};
    run = [q]() -> int {
      RecordWriter writer;
      ConsoleReporter console;
      return run_recipe(q, {&writer, &console}).exit_code;
    };
  });
}

}  // namespace recipebench::cli
