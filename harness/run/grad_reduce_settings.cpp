#include "run/grad_reduce_settings.h"

#include <stdexcept>

#include "layout/rank_map.h"
#include "run/setting_diagnostic.h"

namespace recipebench {

std::optional<bool> overlap_grad_reduce_applies(const Recipe& recipe, const ModelConfig& model) {
  try {
    const RankMap map = build_rank_map(recipe, model);
    return map.dp > 1 || map.edp > 1;
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

std::string grad_reduce_note(const RunOptions& o, const Recipe& recipe, bool bucket_size_given) {
  if (o.overlap_grad_reduce && o.overlap_grad_reduce_applies == false)
    return "recipebench run: bench.overlap_grad_reduce: true has no effect on " + recipe.layout.label +
           " (DP 1 and EDP 1: no gradient is reduce-scattered)";
  if (!o.overlap_grad_reduce && bucket_size_given)
    return "recipebench run: bench.grad_reduce_bucket_elements: " + std::to_string(o.grad_reduce_bucket_elements) +
           " has no effect without bench.overlap_grad_reduce: true";
  return "";
}

Diagnostics check_grad_reduce_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                       const std::optional<bool>& cli_overlap,
                                       const std::optional<int64_t>& cli_bucket) {
  Diagnostics out;
  const std::string why = runs_own_command(backend, "gradient reduction is");
  if (cli_overlap ? *cli_overlap : recipe.bench.overlap_grad_reduce.value_or(false))
    out.push_back(setting_diagnostic(src, cli_overlap.has_value(), "--overlap-grad-reduce",
                                     "/bench/overlap_grad_reduce", "true", "false or absent " + why));
  if (const auto n = cli_bucket ? cli_bucket : recipe.bench.grad_reduce_bucket_elements)
    out.push_back(setting_diagnostic(src, cli_bucket.has_value(), "--grad-reduce-bucket-elements",
                                     "/bench/grad_reduce_bucket_elements", std::to_string(*n), "absent " + why));
  return out;
}

}  // namespace recipebench
