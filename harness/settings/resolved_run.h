// The resolved run (docs/architecture.md, "The resolved run"): what a run of a recipe works out once, from the
// recipe and the command line's overlay, and hands on to every part that needs it: `run` and `run --dry-run`,
// `--emulate-rank`, `predict`, `plan`, `validate`'s memory check and the backends' `environment` and `run`. None of
// them merges settings, derives the model that runs or builds its rank map again.
#pragma once

#include <optional>
#include <string>

#include "layout/rank_map.h"
#include "recipe/recipe.h"
#include "recipe/run_model.h"
#include "settings/run_options.h"
#include "settings/switches.h"

namespace recipebench {

/// One run, resolved: the merged settings (the recipe's bench block, then the command line's overlay, by the
/// switch table), what each switch does on the layout (`options.effects`), the model that runs and its rank map (or
/// why the layout does not hold for it). `recipe` is the validated recipe, owned by the caller; `options.place` is
/// filled in by the run driver once the process is placed among the ranks.
struct ResolvedRun {
  const Recipe* recipe = nullptr;
  RunOptions options;
  RunModel model;
  /// The rank map of `model.model` under the recipe's layout (layout/rank_map.h); nullopt when the layout does not
  /// hold for the model that runs, or the model is known by its counts only: `map_problem` then says why.
  std::optional<RankMap> map;
  std::string map_problem;
  /// The first problem of the layout rules (recipe/layout_check.h require_layout) for the model that runs, which may
  /// differ from the one validate checked (--layers, --model-config): "<field path>: <found>, expected <expected>";
  /// empty when the layout holds. A backend that builds the model refuses a run with one.
  std::string layout_problem;

  const RunSettings& settings() const { return options.settings; }
  /// The context the switch table's rules read (no-effect notes, conflicts, effects).
  SwitchContext switch_context() const { return SwitchContext{*recipe, options.settings, map}; }
};

/// Lays one bench block's settings outside the switch table onto `o` (backend, window, layers, device, seed, data,
/// log format, timeout): the recipe's block first, then the command line's overlay.
void apply_bench_fields(const RecipeBench& bench, RunOptions& o);

/// The merged settings of a run of `recipe` under the command line's `overlay`: the device of recipe_device
/// (bench.device, else the one gpu.type names), the bench fields of both blocks, every switch merged by the table
/// (settings/switches.h merge_switches); --data (overlay.data.path) reads rows from a file.
RunOptions merged_options(const Recipe& recipe, const RecipeBench& overlay);

/// Completes a run of `recipe` (validated) with `options` (merged) and `model` (the model that runs): its rank map,
/// or the reason there is none (build_rank_map's message; "its layers are not known" for a model of stated counts),
/// the layout rules for that model, and the switches' layout effects. Throws nothing on a layout that does not hold:
/// that is `map_problem` / `layout_problem`.
ResolvedRun resolve_run(const Recipe& recipe, RunOptions options, RunModel model);

}  // namespace recipebench
