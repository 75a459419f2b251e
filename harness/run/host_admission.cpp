#include "run/host_admission.h"

#include <algorithm>
#include <csignal>
#include <stdexcept>
#include <utility>

#include "plan/memory_plan.h"
#include "util/exit_code.h"
#include "util/format.h"
#include "util/host.h"
#include "util/interrupt.h"

namespace recipebench {

namespace {

/// Bytes in GB (1e9), one decimal: the memory plan's unit.
std::string gb_text(double bytes) { return fixed(bytes / 1e9, 1); }

/// How the run came to its device, for messages: "--device cpu", "bench.device cpu" or "gpu.type B200".
std::string device_source(const Admission& a) {
  const Device device = a.run.settings().device;
  if (a.request.overrides.device) return "--device " + to_string(device);
  if (a.recipe().bench.device) return "bench.device " + to_string(device);
  return "gpu.type " + a.recipe().gpu.type;
}

/// Whether `need` bytes of plan fit `available` bytes of this host with the CPU's reserve beside them (the one rule:
/// plan/memory_plan.h fits_with_reserve).
bool fits_host(double need, uint64_t available) {
  return fits_with_reserve(need, static_cast<double>(available), measured_reserve(Device::kCpu));
}

/// "" or " with its reserve of 8.6 GB (8% of the plan)" when the plan alone is within `available`.
std::string reserve_clause(double need, uint64_t available) {
  if (need > static_cast<double>(available)) return "";
  return " with a reserve of " + measured_reserve(Device::kCpu).text(need) + " beside it";
}

/// The CPU memory `ranks_here` CPU ranks of `model` need by the plan on `map` (bytes; every rank of a pipeline stage
/// holds the stage's peak).
double cpu_plan_bytes(const Admission& a, const ModelConfig& model, const RankMap& map, int64_t ranks_here) {
  const Recipe& recipe = a.recipe();
  const MemoryPlan plan = plan_memory(recipe, model, map, plan_options(a.run.settings(), Device::kCpu));
  if (ranks_here == 1) return plan.worst().peak;
  double total = 0;
  for (const RankMemory& r : plan.ranks)
    total += r.peak * static_cast<double>(recipe.layout.world() / recipe.layout.pp);
  return total;
}

/// The same for the model that runs, on the resolved run's rank map; nullopt when the layout has none.
std::optional<double> run_plan_bytes(const Admission& a, int64_t ranks_here) {
  if (!a.run.map) return std::nullopt;
  return cpu_plan_bytes(a, a.run.model.model, *a.run.map, ranks_here);
}

/// "" when `ranks` CPU ranks of the run's model fit this host (cores, and the plan's memory within `available`;
/// unknown memory is not checked), else why not, with the figures.
std::string cpu_fit_problem(const Admission& a, int64_t ranks, uint64_t available) {
  if (ranks > 1) {
    HostCapacity cap = host_capacity();
    cap.available_bytes = available;
    if (std::string p = ranks_fit_problem(static_cast<int>(ranks), cap); !p.empty()) return p;
  }
  const std::optional<double> need = run_plan_bytes(a, ranks);
  if (!need || available == 0 || fits_host(*need, available)) return "";
  return "the memory plan needs " + gb_text(*need) + " GB" +
         (ranks > 1 ? " for its " + std::to_string(ranks) + " ranks on this host" : "") +
         reserve_clause(*need, available) + ", more than the " + gb_text(static_cast<double>(available)) +
         " GB this host has available";
}

/// A SIGINT or SIGTERM noted while the run is still being admitted (a long memory plan): the process stops now,
/// exit 128 + the signal, nothing run (util/interrupt.h).
void stop_if_interrupted() {
  if (const int sig = noted_interrupt())
    throw Refusal{128 + sig,
                  std::string("recipebench run: interrupted by ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                      " before the first step; nothing was run",
                  {}};
}

/// The plan of the most layers K' in (`floor`, `k`] that split over the layout's stages (looking at most 64 below
/// `k`): {K', bytes}, or {0, 0} when none does.
std::pair<int64_t, double> plan_at_or_below(const Admission& a, int64_t k, int64_t floor, int64_t ranks) {
  for (int64_t j = k; j > floor && j > k - 64; --j) {
    stop_if_interrupted();
    try {
      const ModelConfig model = a.run.model.full.with_layers(j);
      return {j, cpu_plan_bytes(a, model, build_rank_map(a.recipe(), model), ranks)};
    } catch (const std::invalid_argument&) {  // j layers do not split over the layout's stages
    }
  }
  return {0, 0.0};
}

/// Advice that works here for a CPU run too large for this host: the most layers (--layers K) whose plan fits, or
/// "" when none does. Each K is another model, with its own rank map; the plan grows with K, so K is found by
/// bisection: O(log L) plans of at most L/2 layers, not one plan for every K below L (65,536 layers took 39 s).
std::string fewer_layers_advice(const Admission& a, int64_t ranks, uint64_t available) {
  int64_t lo = 0, hi = a.run.model.model.num_layers;  // the answer lies in (lo, hi), or is `best`
  int64_t best = 0;
  double best_need = 0;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    const auto [k, need] = plan_at_or_below(a, mid, lo, ranks);
    if (k == 0 || fits_host(need, available)) {
      if (k != 0) best = k, best_need = need;
      lo = mid;
    } else {
      hi = k;
    }
  }
  if (best == 0) return "";
  return "; --layers " + std::to_string(best) + " fits (its plan needs " + gb_text(best_need) + " GB)";
}

/// On CUDA: fewer CUDA devices than the `here` ranks this process runs or starts.
std::optional<Refusal> cuda_refusal(const Admission& a, const HostDevices& host, int64_t here, bool launched) {
  if (host.cuda_devices >= here) return std::nullopt;
  const Recipe& recipe = a.recipe();
  const int64_t world = recipe.layout.world();
  const std::string gpus = std::to_string(here) + " " + (recipe.gpu.type == "CPU" ? "" : recipe.gpu.type + " ") +
                           (here == 1 ? "GPU" : "GPUs");
  std::string advice = "recipebench run --dry-run shows its rank map and memory plan";
  if (!launched && cpu_fit_problem(a, world, host.available_bytes).empty() &&
      std::count(a.caps->devices.begin(), a.caps->devices.end(), Device::kCpu))
    advice += "; --device cpu" + (world > 1 ? " --nproc " + std::to_string(world) : std::string()) +
              " runs it on this host's CPU";
  const std::string has =
      host.cuda_devices == 0 ? std::string("no CUDA device")
                             : std::to_string(host.cuda_devices) + " CUDA device" + (host.cuda_devices == 1 ? "" : "s");
  return Refusal{kFailed,
                 "recipebench run: the run needs " + gpus + " (CUDA, from " + device_source(a) + "); this host has " +
                     has + " (" + advice + "); nothing was run",
                 {}};
}

/// On the CPU without --nproc for a multi-rank layout: the ranks to start, and whether they fit here.
Refusal ranks_refusal(const Admission& a, const HostDevices& host) {
  const int64_t world = a.recipe().layout.world();
  const std::string problem = cpu_fit_problem(a, world, host.available_bytes);
  const std::string n = std::to_string(world);
  return Refusal{kFailed,
                 "recipebench run: the layout " + a.recipe().layout.label + " needs " + n + " ranks (on the CPU, " +
                     device_source(a) + "): " +
                     (problem.empty() ? "--nproc " + n + " starts them on this host"
                                      : "they do not fit this host (" + problem +
                                            "); torchrun or srun start them on several hosts") +
                     "; nothing was run",
                 {}};
}

/// On the CPU: the plan of the `ranks` ranks here against the memory this host has available.
std::optional<Refusal> cpu_memory_refusal(const Admission& a, const HostDevices& host, int64_t ranks) {
  const std::optional<double> need = run_plan_bytes(a, ranks);
  if (!need || fits_host(*need, host.available_bytes)) return std::nullopt;
  const double per_rank = *run_plan_bytes(a, 1);
  return Refusal{kFailed,
                 "recipebench run: " + device_source(a) + ": the memory plan's peak is " + gb_text(per_rank) +
                     " GB per rank" +
                     (ranks > 1 ? " (" + std::to_string(ranks) + " ranks on this host: " + gb_text(*need) + " GB)"
                                : std::string()) +
                     reserve_clause(*need, host.available_bytes) + ", more than the " +
                     gb_text(static_cast<double>(host.available_bytes)) + " GB this host has available" +
                     fewer_layers_advice(a, ranks, host.available_bytes) + "; nothing was run",
                 {}};
}

}  // namespace

std::optional<Refusal> host_refusal(const Admission& a) {
  const RunSettings& s = a.run.settings();
  if (!a.caps || a.caps->launch != Launch::kPerRank || s.emulate_rank) return std::nullopt;
  if (!a.ranks.env) return std::nullopt;  // placing the process refuses the variables
  const RunRequest& q = a.request;
  const HostDevices host = q.host ? *q.host : host_devices();
  const int64_t world = a.recipe().layout.world();
  const bool launched = a.ranks.env->world > 1 || launched_by_recipebench();  // one rank of a launch: itself only
  const int64_t here = launched ? 1 : q.nproc ? *q.nproc : s.device == Device::kCuda ? world : 1;
  if (s.device == Device::kCuda) return cuda_refusal(a, host, here, launched);
  if (!a.caps->memory_plan) return std::nullopt;
  if (!launched && !q.nproc && world > 1) return ranks_refusal(a, host);
  if ((q.nproc && *q.nproc != world) || launched_by_recipebench() || host.available_bytes == 0)
    return std::nullopt;  // placing refuses the count; a rank of recipebench's launch was held against the host
  return cpu_memory_refusal(a, host, launched ? 1 : here);
}

}  // namespace recipebench
