// `recipebench run [RECIPE] [--backend B] [--steps N] [--window A:B] [--out DIR] [--layers N] [--device D] ...`
#include <CLI/CLI.hpp>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "catalog/hardware.h"
#include "catalog/hf_config.h"
#include "catalog/models.h"
#include "commands.h"
#include "default_recipe.h"
#include "layout/rank_map.h"
#include "recipe/result_check.h"
#include "recipe/validate.h"
#include "run/backend.h"
#include "run/launch.h"
#include "run/run_record.h"
#include "util/atomic_file.h"
#include "util/format.h"
#include "util/host.h"

namespace recipebench::cli {

namespace {

Json host_environment() {
  struct utsname u {};
  uname(&u);
  return Json{{"host", host_name()},
              {"os", std::string(u.sysname) + " " + u.release + " " + u.machine},
              {"cpu_cores", static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN))},
              {"compiler", std::string("g++ ") + __VERSION__},
              {"recipebench_version", RECIPEBENCH_VERSION},
              {"recipebench_commit", RECIPEBENCH_GIT_COMMIT},
              {"build_type", RECIPEBENCH_BUILD_TYPE}};
}

/// "5:19" -> {5, 19}; throws CLI::ValidationError otherwise.
StepWindow parse_window(const std::string& s) {
  const auto colon = s.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument(s);
    return StepWindow{std::stoi(s.substr(0, colon)), std::stoi(s.substr(colon + 1))};
  } catch (const std::exception&) {
    throw CLI::ValidationError("--window", "expected FIRST:LAST step numbers, e.g. 5:19, got '" + s + "'");
  }
}

void apply_bench_block(const Json& bench, RunOptions& o) {
  if (!bench.is_object()) return;
  if (bench.contains("backend")) o.backend = bench["backend"].get<std::string>();
  if (bench.contains("steps")) o.steps = bench["steps"].get<int>();
  if (bench.contains("window")) o.window = StepWindow{bench["window"][0].get<int>(), bench["window"][1].get<int>()};
  if (bench.contains("layers")) o.layers = bench["layers"].get<int64_t>();
  if (bench.contains("device")) o.device = bench["device"].get<std::string>();
  if (bench.contains("seed")) o.seed = bench["seed"].get<uint64_t>();
  if (bench.contains("deterministic")) o.deterministic = bench["deterministic"].get<bool>();
  if (bench.contains("data") && bench["data"].is_object()) {
    const Json& d = bench["data"];
    if (d.contains("source")) o.data_source = d["source"].get<std::string>();
    if (d.contains("path")) o.data_path = d["path"].get<std::string>();
    if (d.contains("supervised_token_ratio")) o.supervised_token_ratio = d["supervised_token_ratio"].get<double>();
    if (d.contains("min_row_tokens")) o.min_row_tokens = d["min_row_tokens"].get<int64_t>();
  }
}

RunMetrics compute_metrics(const RunRecord& rec, const Recipe& recipe, const ModelConfig& model, int devices) {
  std::vector<double> seconds;
  std::vector<int64_t> tokens;
  RunMetrics m;
  for (const auto& s : rec.steps) {
    seconds.push_back(s.seconds);
    tokens.push_back(s.tokens);
    m.peak_memory_bytes = std::max(m.peak_memory_bytes, s.peak_memory_bytes);
  }
  m.window = window_metrics(seconds, tokens, rec.options.window, devices);
  m.active_params = count_params(model).active;
  if (const GpuSpec* gpu = rec.options.device == "cuda" ? find_gpu(recipe.gpu.type) : nullptr) {
    m.peak_flops = gpu->peak_bf16_flops;
    m.mfu = mfu_6n(static_cast<double>(m.active_params), m.window.tokens_per_s_per_gpu, m.peak_flops);
    if (auto price = recipe_price(recipe)) {
      m.usd_per_gpu_hour = price->usd_per_gpu_hour;
      m.price_source = price->source;
      m.usd_per_million_tokens = usd_per_million_tokens(price->usd_per_gpu_hour, m.window.tokens_per_s_per_gpu);
    }
  }
  m.gpu_hours = gpu_hours(devices, rec.wall_seconds);
  // Harness overhead: loop time outside the steps and their data preparation, per step of the window, as a
  // fraction of the window's step time (the tail of step i is recorded with step i + 1).
  double overhead = 0;
  for (int i = rec.options.window.first + 1; i <= rec.options.window.last; ++i) overhead += rec.steps[i].overhead_seconds;
  const int tails = rec.options.window.last - rec.options.window.first;
  m.harness_overhead_fraction = tails > 0 ? overhead / tails / m.window.mean_step_seconds : 0.0;
  return m;
}

}  // namespace

void add_run_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand("run", "Run a recipe's training steps on a backend and write a run record");
  struct Args {
    std::string recipe;
    std::optional<std::string> backend, window, device, data, model_config;
    std::optional<int> steps, nproc;
    std::optional<int64_t> layers;
    std::optional<uint64_t> seed;
    std::optional<bool> deterministic;
    bool profile = false, dry_run = false;
    std::string out = "reports/runs";
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("recipe", a->recipe, "Recipe file (default: the embedded " + std::string(kDefaultRecipeName) + ")");
  cmd->add_option("--backend", a->backend, "Backend (default: the recipe's bench.backend, else torch)");
  cmd->add_option("--steps", a->steps, "Steps to run (default 20)")->check(CLI::PositiveNumber);
  cmd->add_option("--window", a->window, "Timed window FIRST:LAST, both included (default 5:19)");
  cmd->add_option("--out", a->out, "Folder for the run record (default reports/runs)");
  cmd->add_option("--layers", a->layers, "Decoder layers of a proxy run (default: the model's)")->check(CLI::PositiveNumber);
  cmd->add_option("--device", a->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--seed", a->seed, "Data and initialisation seed");
  cmd->add_option("--deterministic", a->deterministic,
                  "true: the same bits for the same seed (default: the recipe's bench.deterministic, else true); "
                  "false allows faster non-deterministic kernels");
  cmd->add_option("--model-config", a->model_config,
                  "Hugging Face config.json of the model to build instead of the registry's widths");
  cmd->add_flag("--profile", a->profile,
                "Synchronise between forward, backward and optimizer to time each phase (adds device syncs)");
  cmd->add_option("--nproc", a->nproc,
                  "Ranks to start on this host (one process each; CPU: Gloo). Without it the rank comes from "
                  "torchrun-style (RANK, WORLD_SIZE...) or Slurm variables (docs/distributed.md)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--data", a->data, "Pre-tokenized rows file (docs/data-format.md) instead of synthetic rows");
  cmd->add_flag("--dry-run", a->dry_run,
                "Print the rank map (each rank's TP, CP, DP, PP, ETP, EP, EDP coordinates, layers per virtual stage, "
                "microbatches, schedule) and exit; needs no GPU and runs nothing");
  cmd->callback([&run, a] {
    run = [a]() -> int {
      const auto launch = std::chrono::system_clock::now();
      const auto launch_steady = std::chrono::steady_clock::now();
      // 1. The recipe, validated.
      std::string path = a->recipe;
      ValidatedRecipe v;
      if (path.empty()) {
        path = std::string("<embedded>/") + kDefaultRecipeName;
        v = validate_recipe_text(kDefaultRecipeYaml, path);
      } else {
        if (!std::filesystem::exists(path)) {
          std::cerr << "recipebench run: no such recipe file: " << path << "\n";
          return kUsage;
        }
        v = validate_recipe_file(path);
      }
      for (const auto& d : v.errors) std::cerr << d.to_string() << "\n";
      if (!v.ok()) {
        std::cerr << "recipebench run: the recipe failed validation; nothing was run\n";
        return kFailed;
      }
      const Recipe& recipe = *v.recipe;

      // 2. Effective settings: the recipe's bench block, then the command line.
      RunOptions o;
      apply_bench_block(recipe.doc.value("bench", Json()), o);
      if (a->backend) o.backend = *a->backend;
      if (a->steps) o.steps = *a->steps;
      if (a->window) o.window = parse_window(*a->window);
      if (a->layers) o.layers = *a->layers;
      if (a->device) o.device = *a->device;
      if (a->seed) o.seed = *a->seed;
      if (a->deterministic) o.deterministic = *a->deterministic;
      o.profile = a->profile;
      if (a->data) {
        o.data_source = "file";
        o.data_path = *a->data;
      }
      if (!o.window.inside(o.steps) || o.window.steps() < 2) {
        std::cerr << "recipebench run: window " << o.window.first << ".." << o.window.last
                  << " must lie inside steps 0.." << o.steps - 1 << " and hold at least 2 steps\n";
        return kUsage;
      }
      std::optional<ModelConfig> base;
      if (a->model_config) {
        try {
          base = load_hf_config(*a->model_config);
        } catch (const std::invalid_argument& e) {
          std::cerr << "recipebench run: " << e.what() << "\n";
          return kFailed;
        }
      } else if (const ModelConfig* m = find_model(recipe.model)) {
        base = *m;
      } else {
        std::cerr << "recipebench run: unknown model '" << recipe.model << "' (give --model-config)\n";
        return kFailed;
      }
      const ModelConfig* registered = &*base;
      const ModelConfig model = o.layers ? registered->with_layers(*o.layers) : *registered;
      if (a->dry_run) {
        try {
          std::printf("recipebench run --dry-run: %s\n  model %s (%lld layers), %s\n%s", path.c_str(), model.name.c_str(),
                      static_cast<long long>(model.num_layers), recipe.layout.label.c_str(),
                      format_rank_map(build_rank_map(recipe, model)).c_str());
        } catch (const std::invalid_argument& e) {
          std::cerr << "recipebench run --dry-run: " << e.what() << "\n";
          return kFailed;
        }
        return kOk;
      }
      auto backend = make_backend(o.backend);
      if (!backend) {
        std::string names;
        for (const auto& n : backend_names()) names += (names.empty() ? "" : ", ") + n;
        std::cerr << "recipebench run: no backend '" << o.backend << "' in this build (available: "
                  << (names.empty() ? "none: configure with libtorch for the torch backend" : names) << ")\n";
        return kUsage;
      }

      // 3. Ranks: start them here (--nproc), or find this process's rank in the environment.
      RankEnv ranks;
      try {
        ranks = rank_env();
      } catch (const std::invalid_argument& e) {
        std::cerr << "recipebench run: rank variables: " << e.what() << "\n";
        return kUsage;
      }
      // On CUDA one process per GPU: a multi-rank layout started without rank variables launches its ranks here.
      if (!a->nproc && o.device == "cuda" && ranks.world == 1 && recipe.layout.world() > 1 &&
          !launched_by_recipebench())
        a->nproc = static_cast<int>(recipe.layout.world());
      if (a->nproc && *a->nproc > 1 && !launched_by_recipebench()) {
        if (ranks.world > 1) {
          std::cerr << "recipebench run: --nproc " << *a->nproc << " but this process is already rank " << ranks.rank
                    << " of " << ranks.world << " (" << ranks.source << " variables); drop --nproc\n";
          return kUsage;
        }
        if (*a->nproc != recipe.layout.world()) {
          std::cerr << "recipebench run: --nproc " << *a->nproc << " but the recipe's layout " << recipe.layout.label
                    << " needs " << recipe.layout.world() << " ranks (TP x CP x DP x PP)\n";
          return kUsage;
        }
        return launch_local(*a->nproc);
      }
      o.rank = ranks.rank;
      o.world = ranks.world;
      o.local_rank = ranks.local_rank;
      o.master_addr = ranks.master_addr;
      o.master_port = ranks.master_port;
      const bool lead = o.rank == 0;  // only rank 0 prints progress and writes the run record

      RunRecord rec;
      rec.recipe_path = path;
      rec.recipe_sha256 = a->recipe.empty() ? sha256_hex(kDefaultRecipeYaml) : sha256_file(path);
      rec.recipe = recipe.doc;
      rec.options = o;
      rec.model_name = model.name;
      rec.model_layers = model.num_layers;
      rec.model_layers_full = registered->num_layers;
      if (a->model_config) rec.model_config = Json{{"path", *a->model_config}, {"sha256", sha256_file(*a->model_config)}};
      rec.started_at = utc_timestamp(launch);
      rec.environment = host_environment();
      const std::string stem = std::filesystem::path(path).stem().string();
      const std::string record_path = a->out + "/" + stem + "-" + utc_timestamp(launch, "%Y%m%dT%H%M%SZ") + ".json";

      // The recipe's environment variables, set in this process before the backend starts (the CUDA caching
      // allocator reads PYTORCH_CUDA_ALLOC_CONF at its first use). Values that need a shell ($...) are skipped.
      Json applied_env = Json::object();
      if (recipe.doc.contains("env") && recipe.doc["env"].is_object()) {
        for (const auto& [k, v] : recipe.doc["env"].items()) {
          const std::string value = v.get<std::string>();
          if (value.find('$') != std::string::npos) {
            std::fprintf(stderr, "recipebench run: env %s needs a shell to expand (%s); not set\n", k.c_str(), value.c_str());
            continue;
          }
          setenv(k.c_str(), value.c_str(), 1);
          applied_env[k] = value;
        }
      }
      rec.environment["recipe_env_applied"] = applied_env;
      int devices = 1;
      // "4 of 40 layers" for a proxy with fewer layers than the model; "6 layers; the model has 4" for more.
      const long long run_layers = model.num_layers, full_layers = registered->num_layers;
      const std::string depth = run_layers <= full_layers
                                    ? std::to_string(run_layers) + " of " + std::to_string(full_layers) + " layers"
                                    : std::to_string(run_layers) + " layers; the model has " +
                                          std::to_string(full_layers);
      if (lead) std::printf("recipebench run: %s\n  model %s (%s), backend %s, device %s, %d steps, window %d..%d\n",
                  path.c_str(), model.name.c_str(), depth.c_str(), o.backend.c_str(), o.device.c_str(), o.steps,
                  o.window.first, o.window.last);
      if (lead) std::printf("%6s %10s %10s %12s %10s %12s\n", "step", "time (s)", "loss", "tokens/s", "grad norm", "peak mem");
      std::fflush(stdout);
      bool secondary = false, started = false;
      try {
        const BackendEnvironment env = backend->environment(recipe, o);
        started = true;
        devices = std::max(1, env.device_count);
        rec.environment["device"] = Json{{"name", env.device_name},
                                         {"count", env.device_count},
                                         {"memory_bytes", env.device_memory_bytes},
                                         {"driver", env.driver},
                                         {"cuda", env.cuda},
                                         {"nccl", env.nccl},
                                         {"libtorch", env.libtorch}};
        backend->run(recipe, model, o, [&](const StepSample& s) {
          rec.steps.push_back(s);
          if (!lead) return;
          std::printf("%3d/%-3d %9.3f %10.4f %12s %10.3f %10.2f GB%s\n", s.step + 1, o.steps, s.seconds, s.loss,
                      fixed(s.tokens / s.seconds / devices, 0).c_str(), s.grad_norm, s.peak_memory_bytes / 1e9,
                      (s.step >= o.window.first && s.step <= o.window.last) ? "" : "  (not timed)");
          std::fflush(stdout);
        });
        if (static_cast<int>(rec.steps.size()) != o.steps)
          throw RunError("the backend ran " + std::to_string(rec.steps.size()) + " of " + std::to_string(o.steps) + " steps");
        rec.status = "complete";
      } catch (const RunError& e) {
        rec.status = "failed";
        rec.error = Json{{"step", e.step() >= 0 ? Json(e.step()) : Json(nullptr)}, {"message", e.what()}};
        // Another rank failed first and shows its message; this rank only stops (rank 0 still writes the record).
        // A refusal before the run (the same check fails on every rank) is shown by rank 0 only.
        secondary = e.secondary() || (!lead && !started);
        if (!lead) {
          if (!secondary) std::cerr << "recipebench run: rank " << o.rank << " failed: " << e.what() << "\n";
          return kFailed;
        }
      }
      if (!lead) return kOk;
      rec.finished_at = utc_timestamp(std::chrono::system_clock::now());
      rec.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - launch_steady).count();
      if (rec.status == "complete") rec.metrics = compute_metrics(rec, recipe, model, devices);
      write_file_atomic(record_path, rec.to_json().dump(2) + "\n");

      if (rec.status != "complete") {
        if (!secondary)
          std::cerr << "recipebench run: failed: " << rec.error["message"].get<std::string>() << "\n";
        std::cerr << "  run record (status failed): " << record_path << "\n";
        return kFailed;
      }

      const RunMetrics& m = *rec.metrics;
      std::printf("window %d..%d: %s tokens/s/GPU, step-time CV %.2f%%, mean step %.3f s", o.window.first,
                  o.window.last, fixed(m.window.tokens_per_s_per_gpu, 1).c_str(), m.window.step_time_cv_percent,
                  m.window.mean_step_seconds);
      if (m.mfu) std::printf(", MFU %.1f%%", 100 * *m.mfu);
      if (m.usd_per_million_tokens) std::printf(", $%.2f / 1M tokens", *m.usd_per_million_tokens);
      if (m.peak_memory_bytes) std::printf(", peak memory %.1f GB", m.peak_memory_bytes / 1e9);
      std::printf(", harness overhead %.3f%% of step time", 100 * m.harness_overhead_fraction);
      std::printf("\nrun record: %s\n", record_path.c_str());
      return kOk;
    };
  });
}

}  // namespace recipebench::cli
