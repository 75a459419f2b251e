// An emulated rank (`recipebench run --emulate-rank R`, docs/emulation.md): the run driver's part. This process runs
// rank R of the recipe's layout alone, at the model's real widths, its collectives stood in by the backend; its
// record (status emulated) says which rank it stood for, where it sits in the layout, the layers it ran, the
// memory plan of that rank and, per step, what each of its groups would have moved. Never ranked as a measurement.
#pragma once

#include <optional>
#include <string>

#include "catalog/models.h"
#include "layout/rank_map.h"
#include "plan/memory_plan.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "record/run_record.h"
#include "settings/run_options.h"

namespace recipebench {

/// The located refusal of `--emulate-rank` / `--layers` against the rank map of the model that runs (at
/// "<command line>", field --emulate-rank or --layers), or nullopt when they hold: the rank must be one of the
/// layout's (0 .. world-1), the layers between VPP and its stage's layers.
std::optional<Diagnostic> emulation_diagnostic(const RunSettings& s, const RankMap& map, const std::string& layout);

/// The rank map an emulated run builds: `map` with the emulated rank's stage cut to settings.emulated_stage_layers
/// (layout/rank_map.h keep_stage_layers) when set. Throws std::invalid_argument like keep_stage_layers.
RankMap emulated_rank_map(RankMap map, const RunSettings& s);

/// The record's `emulation` block before step 0: the rank, its coordinates and layers (schema/run-record.schema.json),
/// the layers its stage has in the layout, the GPU it stands for (gpu.type), the memory plan's peak for its pipeline
/// rank (bytes, `plan` made on `emulated_rank_map`) and what was stood in.
Json emulation_block(const Recipe& recipe, const RankMap& full, const RankMap& ran, const MemoryPlan& plan,
                     const RunSettings& s);

/// Completes the block from the record's steps: over the timed window, the mean step seconds, of which the stand-in's
/// own operations (the steps' comm_waits) and the rest (compute), the measured peak memory (bytes) against the plan
/// (measured / planned), and each group's traffic per step (bytes, the window's mean); with --profile also the
/// optimizer's seconds per step, each pass of the schedule (kind, virtual stage, microbatch: its mean seconds by
/// phase and component, backend/profile.h) and the step's components by phase (seconds per step). Nothing for a
/// record without a block or without window steps.
void summarise_emulation(RunRecord& rec);

}  // namespace recipebench
