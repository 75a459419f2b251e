#include "recipe/run_model.h"

namespace recipebench {

std::optional<RunModel> run_model(const Recipe& recipe, const std::optional<int64_t>& layers,
                                  const ModelConfig* widths) {
  const ModelConfig* full = widths ? widths : find_model(recipe.model);
  if (!full) return std::nullopt;
  RunModel m{*full, *full};
  if (const auto n = layers ? layers : recipe.bench.layers) m.model = full->with_layers(*n);
  return m;
}

}  // namespace recipebench
