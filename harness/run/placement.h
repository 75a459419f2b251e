// Where this process sits among a run's ranks (docs/distributed.md): an emulated rank alone, one launch per node for
// a backend that runs the recipe's own command, else the ranks of launch/launch.h (started here with --nproc, or
// joined from torchrun's / srun's variables).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "console/reporter.h"
#include "run/admission.h"

namespace recipebench {

/// Places this process: sets `o.place` (rank, world, rendezvous) from `ranks`, and for a per-node backend the log
/// path beside `record_path` (<record>.log, <record>-rank<R>.log); or starts the ranks here (--nproc N > 1, or a
/// multi-rank CUDA layout started without rank variables: one process per GPU) and returns their exit code;
/// `on_lead_died` writes the record of a rank 0 killed by a signal. Returns an exit code when this process has
/// nothing more to do (also a per-node backend's rank that is not its node's local rank 0). Throws Refusal (exit 2)
/// on malformed rank variables, --nproc that does not fit the layout or this host, or --nproc with a per-node
/// backend.
std::optional<int> place(const RunRequest& q, const Recipe& recipe, const RankVariables& ranks, RunOptions& o,
                         const std::string& record_path, const std::vector<RunReporter*>& reporters,
                         const std::function<void(int status)>& on_lead_died);

}  // namespace recipebench
