// What a backend runs, declared with its registration (backend/backend.h), and the check that refuses a recipe asking
// for anything else before any rank starts (`run` and `run --dry-run`; `validate` does not depend on a backend).
#pragma once

#include <string>
#include <vector>

#include "catalog/models.h"
#include "recipe/diagnostic.h"
#include "recipe/enums.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"
#include "util/json.h"

namespace recipebench {

/// How a backend's processes are started (docs/backends.md). A closed set.
enum class Launch {
  kPerRank,  ///< recipebench is one process per rank (started by `run` itself, torchrun or srun) and trains
  kPerNode,  ///< the backend launches the recipe's own command once per node; that command starts its ranks
};

/// Over which group a backend's distributed optimizer shards one kind of parameters' optimizer state (FP32 master
/// weights, Adam moments and the gradient shard) on a run of several ranks (docs/distributed.md): none (every rank
/// holds all of it), dp (the data-parallel group), edp (the expert-data-parallel group: world / (ETP x EP x PP)
/// ranks holding the same experts). Not a recipe field: what the backend does, stated in the run record.
enum class OptimizerSharding { kNone, kDp, kEdp };
/// "none", "dp", "edp".
const char* to_string(OptimizerSharding s);

/// The values of each recipe field a backend implements. A field's value outside its list is refused by name;
/// an empty list refuses every value. Degrees are the layout's (docs/recipe-format.md).
struct BackendCapabilities {
  std::vector<int> cp;                   ///< layout.cp degrees
  std::vector<int> etp;                  ///< expert tensor-parallel degrees (layout.etp, TP when absent)
  std::vector<Dispatcher> dispatchers;   ///< layout.dispatcher
  std::vector<std::string> offload;      ///< layout.offload; "none" stands for null (no offload)
  std::vector<std::string> recompute;    ///< layout.recompute.granularity: full, selective, none
  std::vector<std::string> precisions;   ///< workload.precision: bf16, fp16, fp32, fp8, fp64
  std::vector<Device> devices;           ///< bench.device / --device
  std::vector<DataSource> data_sources;  ///< bench.data.source / --data
  /// kPerNode: the recipe's command decides the layout, so no field above is checked and no rank is started.
  Launch launch = Launch::kPerRank;
  /// Where the optimizer state of the dense (non-expert) parameters is sharded on several ranks.
  OptimizerSharding dense_optimizer_sharding = OptimizerSharding::kNone;
  /// Where the optimizer state of the routed experts is sharded on several ranks (when EDP > 1).
  OptimizerSharding expert_optimizer_sharding = OptimizerSharding::kNone;
  /// The model families a per-rank backend builds (catalog/models.h); a model of another family is refused by name
  /// before any rank starts (run/run_driver.cpp). Empty: any model (a per-node backend's command decides).
  std::vector<ModelFamily> model_families;
  /// The per-rank memory plan (harness/plan, docs/memory-plan.md) models this backend: `run` prints it before step 0.
  bool memory_plan = false;
  /// The backend can run one rank of the layout alone, its collectives stood in (`run --emulate-rank`,
  /// docs/emulation.md).
  bool emulate_rank = false;
  /// {"cp": [1], "etp": [1], "dispatcher": ["alltoall"], "offload": ["none"], ...,
  /// "optimizer_sharding": {"dense": "dp", "experts": "edp"}} for the run record
  /// (schema/run-record.schema.json: degrees as integers, the rest as their YAML names).
  Json to_json() const;
};

/// Where the run's device and data source were chosen: true when the command line overrode the recipe.
struct CapabilityOverrides {
  bool device = false, data_source = false;
};

/// One diagnostic per field of `recipe` (with the run's `device` and `data_source`) that `backend`'s `caps` do
/// not list: `file:line:col: error: layout.dispatcher: deepep, expected alltoall (what the torch backend runs)`,
/// located in `src` (the recipe's loaded document); a value from the command line is located at
/// `<command line>` with the option's name. Empty when the backend runs everything the recipe asks for.
Diagnostics check_capabilities(const std::string& backend, const BackendCapabilities& caps, const Recipe& recipe,
                               const SourceDoc& src, Device device, DataSource data_source,
                               CapabilityOverrides overrides = {});

}  // namespace recipebench
