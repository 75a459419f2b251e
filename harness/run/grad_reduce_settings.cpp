#include "run/grad_reduce_settings.h"

#include <stdexcept>

#include "layout/rank_map.h"

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
  const std::string why = " (the " + backend +
                          " backend runs the recipe's own command: its gradient reduction is the "
                          "command's)";
  if (cli_overlap ? *cli_overlap : recipe.bench.overlap_grad_reduce.value_or(false)) {
    const std::string expected = "false or absent" + why;
    out.push_back(cli_overlap ? Diagnostic{"<command line>", 0, 0, "--overlap-grad-reduce", "true", expected}
                              : src.at("/bench/overlap_grad_reduce", "true", expected));
  }
  if (cli_bucket || recipe.bench.grad_reduce_bucket_elements) {
    const std::string n = std::to_string(cli_bucket ? *cli_bucket : *recipe.bench.grad_reduce_bucket_elements);
    const std::string expected = "absent" + why;
    out.push_back(cli_bucket ? Diagnostic{"<command line>", 0, 0, "--grad-reduce-bucket-elements", n, expected}
                             : src.at("/bench/grad_reduce_bucket_elements", n, expected));
  }
  return out;
}

}  // namespace recipebench
