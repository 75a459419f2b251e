// The final parameters of a run as the one-rank model's, for the parity tests (RunHooks::dump_params_path).
#pragma once

#include <string>

#include "rank/model_builder.h"
#include "rank/run_context.h"

namespace recipebench::train {

/// Rank 0 writes every parameter of the one-rank model, float64 (exact for FP32 and BF16 parameters too), one after the other in its parameters() order, to
/// `path`. Each parameter comes from rank 0's pipeline (DP rank 0, TP rank 0): the stage holding it sends it to
/// rank 0; the expert shards of the stage's EP group and the TP shards of its TP groups are gathered first (every
/// rank of the stage takes part), so the file has the one-rank model's layout. Beside it, `path`.names holds one line
/// per parameter: its one-rank name and its element count (the parity tests name the parameters that differ). A
/// collective: every rank calls it. Throws RunError when the stage's parameters do not match the one-rank map or the
/// file cannot be written.
void dump_parameters(const std::string& path, const RankModel& model, const RunContext& ctx);

}  // namespace recipebench::train
