// Consistency of a recipe's reported result with the metric definitions (docs/metrics.md).
#pragma once

#include <optional>
#include <string>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"

namespace recipebench {

/// The $/GPU-hour a recipe is priced at, and where it comes from.
struct Price {
  double usd_per_gpu_hour = 0;
  std::string source;  ///< "recipe (gpu.usd_per_gpu_hour)", "catalog: AWS p6-b200.48xlarge $113.9328 / 8 GPUs", ...
};

/// Price of a recipe: the recipe's own gpu.usd_per_gpu_hour, else its catalog instance, else the catalog's
/// default instance of its GPU type. nullopt when none applies.
std::optional<Price> recipe_price(const Recipe& r);

/// The problem of a gpu.type that is neither CPU, a catalog GPU by name or alias, nor a family that memory_gb
/// singles out (resolve_gpu, catalog/hardware.h): located at gpu.type, naming the family's members when `type` is
/// one ("'A100' with memory_gb 60, which is not one of A100 40GB, A100 80GB"), else the catalog's GPUs. nullopt when
/// the type is known. Needs only the two fields: validate runs it also when the schema check fails.
std::optional<Diagnostic> gpu_type_problem(const std::string& type, double memory_gb, const SourceDoc& src);

/// Checks the catalog references (instance, GPU; the model is check_model's, recipe/model_check.h) and, when the recipe has a result: the window lies
/// inside the steps; window_tokens = window steps x global batch x row tokens; $/1M tokens and MFU
/// recomputed from tokens/s/GPU with the catalog agree to the printed precision of the recipe's figure;
/// active_params.count equals N_active of `model`. `model` is the model that ran (run_model(r), recipe/run_model.h: a
/// proxy's bench.layers counted; a ModelFamily::kStated model's stated N), nullptr when the recipe's model is unknown. Locations come from `src`.
Diagnostics check_result(const Recipe& r, const ModelConfig* model, const SourceDoc& src);

}  // namespace recipebench
