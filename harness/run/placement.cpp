#include "run/placement.h"

#include "backend/capabilities.h"
#include "util/exit_code.h"

namespace recipebench {

namespace {

/// The variables, or the refusal of malformed ones.
const RankEnv& env_or_refuse(const RankVariables& ranks) {
  if (!ranks.env) throw Refusal{kUsage, "recipebench run: rank variables: " + ranks.problem, {}};
  return *ranks.env;
}

/// This process's place from its launcher's variables (launch/launch.h) into the run's options.
void apply_rank_env(const RankEnv& ranks, RunOptions& o) {
  o.place.rank = ranks.rank;
  o.place.world = ranks.world;
  o.place.local_rank = ranks.local_rank;
  o.place.master_addr = ranks.master_addr;
  o.place.master_port = ranks.master_port;
}

/// A per-rank backend: this process joins its launcher's ranks, or starts the ranks here and returns their exit
/// code (nproc > 1, or on CUDA a multi-rank layout started without rank variables).
std::optional<int> place_ranks(const RunRequest& q, const Recipe& recipe, const RankVariables& vars, RunOptions& o,
                               const std::function<void(int status)>& on_lead_died) {
  const RankEnv& ranks = env_or_refuse(vars);
  std::optional<int> nproc = q.nproc;
  const int64_t world = recipe.layout.world();
  if (!nproc && o.settings.device == Device::kCuda && ranks.world == 1 && world > 1 && !launched_by_recipebench())
    nproc = static_cast<int>(world);
  if (nproc && *nproc > 1 && !launched_by_recipebench()) {
    const std::string n = std::to_string(*nproc);
    if (ranks.world > 1)
      throw Refusal{kUsage,
                    "recipebench run: --nproc " + n + " but this process is already rank " +
                        std::to_string(ranks.rank) + " of " + std::to_string(ranks.world) + " (" + ranks.source +
                        " variables); drop --nproc",
                    {}};
    if (*nproc != world)
      throw Refusal{kUsage,
                    "recipebench run: --nproc " + n + " but the recipe's layout " + recipe.layout.label + " needs " +
                        std::to_string(world) + " ranks (TP x CP x DP x PP)",
                    {}};
    try {
      return launch_local(*nproc, 10.0, on_lead_died, q.oversubscribe);
    } catch (const std::invalid_argument& e) {  // the ranks do not fit this host: refused before forking
      throw Refusal{kUsage, std::string("recipebench run: ") + e.what(), {}};
    }
  }
  apply_rank_env(ranks, o);
  return std::nullopt;
}

/// A per-node backend: this process is one node's launcher when it is its node's local rank 0 (or alone); any other
/// rank of a launcher returns exit code 0 at once. An import runs nothing and is placed nowhere.
std::optional<int> place_node(const RunRequest& q, const RankVariables& vars, RunOptions& o,
                              const std::vector<RunReporter*>& reporters) {
  if (q.nproc)
    throw Refusal{kUsage,
                  "recipebench run: --nproc with the " + o.settings.backend +
                      " backend, which starts no ranks (its command does); drop --nproc",
                  {}};
  if (!o.command.import_log.empty()) return std::nullopt;
  const RankEnv& ranks = env_or_refuse(vars);
  apply_rank_env(ranks, o);
  if (ranks.local_rank == 0) return std::nullopt;
  for (auto* r : reporters)
    r->message("recipebench run: rank " + std::to_string(ranks.rank) + " is local rank " +
               std::to_string(ranks.local_rank) + ": the " + o.settings.backend +
               " backend launches its command once per node, from local rank 0");
  return kOk;
}

}  // namespace

std::optional<int> place(const RunRequest& q, const Recipe& recipe, const RankVariables& ranks, RunOptions& o,
                         const std::string& record_path, const std::vector<RunReporter*>& reporters,
                         const std::function<void(int status)>& on_lead_died) {
  if (o.settings.emulate_rank) {  // one process, alone: no launcher, no rendezvous (admission checked it)
    o.place.rank = *o.settings.emulate_rank;
    o.place.world = static_cast<int>(recipe.layout.world());
    return std::nullopt;
  }
  const BackendCapabilities* caps = backend_capabilities(o.settings.backend);
  if (!caps || caps->launch != Launch::kPerNode) return place_ranks(q, recipe, ranks, o, on_lead_died);
  const auto placed = place_node(q, ranks, o, reporters);
  const std::string base = record_path.substr(0, record_path.size() - 5);  // without ".json"
  const int rank = o.place.rank;
  o.command.log_path = base + (rank == 0 ? "" : "-rank" + std::to_string(rank)) + ".log";
  return placed;
}

}  // namespace recipebench
