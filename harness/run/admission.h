// Admission: the checks a resolved run (settings/resolved_run.h) passes before any rank starts, as one list run by
// one loop (docs/architecture.md, "From YAML to leaderboard"). Each check looks at the request, the recipe, the
// resolved run, the backend's capability table and the launcher's rank variables, and either lets the run go on or
// returns its refusal: the located diagnostics to show, the one-line reason and the exit code. Nothing here starts
// a rank, makes a backend or writes a file.
#pragma once

#include <optional>
#include <string>

#include "backend/capabilities.h"
#include "launch/launch.h"
#include "recipe/diagnostic.h"
#include "recipe/validate.h"
#include "run/run_driver.h"
#include "settings/resolved_run.h"

namespace recipebench {

/// A run stopped before it started: the located diagnostics (shown first), the one-line reason and the exit code
/// (util/exit_code.h: kFailed for what the recipe asks, kUsage for the command line). Thrown by the run driver's
/// steps and caught by run_recipe, which shows it; no run record is written.
struct Refusal {
  int code = 0;
  std::string message;
  Diagnostics diagnostics;
};

/// The launcher's rank variables (launch/launch.h rank_env), read once per run: `env` when they parse, else
/// `problem` (placing the process refuses it; the other checks take the process for a lone one).
struct RankVariables {
  std::optional<RankEnv> env;
  std::string problem;
  /// This process's world by its variables (1 when they do not parse).
  int world() const { return env ? env->world : 1; }
};
/// Reads this process's rank variables.
RankVariables read_rank_variables();

/// What every admission check sees.
struct Admission {
  const RunRequest& request;
  const ValidatedRecipe& validated;
  const ResolvedRun& run;
  const BackendCapabilities* caps;  ///< the backend's capability table; nullptr when no backend has that name
  const RankVariables& ranks;
  const Recipe& recipe() const { return *validated.recipe; }
};

/// When a check applies: to every run, a dry run too, or only to a run that starts.
enum class AdmissionStage { kAlways, kStart };

/// One check of the list.
struct AdmissionCheck {
  const char* name;  ///< what it refuses, for the reader: "model family", "host"
  AdmissionStage stage;
  std::optional<Refusal> (*check)(const Admission&);
};

/// The checks, in the order they run: the model family a per-rank backend builds, the backend's capability table
/// (its command settings, the switches a per-node backend would ignore, the log format), the switch conflicts,
/// --emulate-rank, an imported log of another run; then, for a run that starts, what this host cannot run (run/
/// host_admission.h), the backend in this build, the record's folder.
const std::vector<AdmissionCheck>& admission_checks();

/// Runs every check of `stage` (kAlways ones only for a dry run) in order; throws the first Refusal.
void admit(const Admission& a, bool dry_run);

}  // namespace recipebench
