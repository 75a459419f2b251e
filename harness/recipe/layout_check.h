// Layout arithmetic checks (docs/layout-arithmetic.md), in one place, with messages that state the arithmetic.
#pragma once

#include <vector>

#include "catalog/models.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"

namespace recipebench {

/// Decoder layers of each pipeline stage: `num_layers / pp` each, or `first` and `last` given and the rest
/// split evenly over the pp - 2 middle stages. Returns an empty vector when the split does not add up.
std::vector<int64_t> stage_layer_counts(int64_t num_layers, int pp, std::optional<int> first, std::optional<int> last);

/// Rows per microbatch = max_tokens_per_gpu / row_tokens (whole rows; dynamic batching packs rows
/// first-fit up to max_tokens_per_gpu). 0 when a row does not fit.
int64_t rows_per_microbatch(int64_t max_tokens_per_gpu, int64_t row_tokens);

/// Every layout check of docs/layout-arithmetic.md that needs no result: world size, GPUs per node, expert grid
/// (EDP whole, experts divisible by EP), heads divisible by TP, sequence parallel rules, layer split and
/// VPP (VPP > 1 needs PP >= 2), rows divisible by CP x TP under sequence parallel,
/// microbatches per DP rank. `model` may be null (architecture unknown: the checks on its heads, experts
/// and layers are not made; validate warns of it, recipe/model_check.h).
/// Locations come from `src`, the document the recipe was built from.
Diagnostics check_layout(const Recipe& recipe, const ModelConfig* model, const SourceDoc& src);

/// layout.dispatcher is stated where it has a meaning: for a model with experts (`model` known with experts), or
/// EP > 1 when the architecture is unknown. A dense model needs none (docs/recipe-format.md). Checked on a
/// written recipe only (validate): a recipe built in code carries its dispatcher.
Diagnostics check_dispatcher_stated(const Recipe& recipe, const ModelConfig* model, const SourceDoc& src);

/// The layout as its fields say it: "TP<tp> PP<pp>", " VPP<vpp>" and " CP<cp>" above 1, " EP<ep>" above 1,
/// " ETP<etp>" where stated above 1, " DP<dp>", and " first F / last L" for a stated uneven split (e.g. "TP2 PP8
/// VPP2 EP8 DP4 first 6 / last 6"). plan names its proposals by it; predict shows it in place of layout.label.
std::string layout_label(const RecipeLayout& l);

/// Where layout.label contradicts the layout's fields: each degree the label names (TP, PP, VPP, CP, EP, ETP, DP
/// followed by a number, as a word) that differs from its field ("DP4 (layout.dp 2)"), and "no CP" / "no VPP" where
/// the label names degrees but not a CP or VPP above 1 that the fields set. Empty when the label agrees or names no
/// degree. ETP is held to layout.etp (TP when not stated).
std::vector<std::string> label_disagreements(const RecipeLayout& l);

/// validate's warning where layout.label disagrees with the fields (label_disagreements), located at /layout/label:
/// found the label and its disagreements, expected a label of the fields (layout_label). Empty when it agrees.
Diagnostics check_layout_label(const Recipe& recipe, const SourceDoc& src);

/// check_layout without a source document, for a backend before it starts (a recipe built in code, or the model a
/// run actually builds: --layers, --model-config). Throws std::invalid_argument with the first problem as
/// "<field path>: <found>, expected <expected>".
void require_layout(const Recipe& recipe, const ModelConfig* model);

}  // namespace recipebench
