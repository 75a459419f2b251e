#include "recipe/correctness_check.h"

#include <string>

#include "util/format.h"

namespace recipebench {

namespace {
constexpr const char* kBlock = "/correctness/convergence";

/// "15 pointwise failures over 20 steps" ("over 20 steps" only when steps is given).
std::string failures_text(int64_t failures, const Json& c) {
  std::string s = std::to_string(failures) + " pointwise failure" + (failures == 1 ? "" : "s");
  if (c.contains("steps") && c["steps"].is_number_integer())
    s += " over " + c["steps"].dump() + (c["steps"].get<int64_t>() == 1 ? " step" : " steps");
  return s;
}
}  // namespace

Diagnostics check_correctness(const Recipe& recipe, const SourceDoc& src) {
  Diagnostics out;
  const Json& doc = recipe.doc;
  if (!doc.contains("correctness") || !doc["correctness"].is_object()) return out;
  const Json& cb = doc["correctness"];
  if (!cb.contains("convergence") || !cb["convergence"].is_object()) return out;
  const Json& c = cb["convergence"];
  const std::string result = c.value("result", "");
  const std::string at_result = std::string(kBlock) + "/result";
  const int64_t failures = c.contains("pointwise_failures") && c["pointwise_failures"].is_number_integer()
                               ? c["pointwise_failures"].get<int64_t>()
                               : 0;
  if (c.contains("steps") && c["steps"].is_number_integer() && failures > c["steps"].get<int64_t>())
    out.push_back(src.at(std::string(kBlock) + "/pointwise_failures", std::to_string(failures),
                         "at most steps (" + c["steps"].dump() + ")"));
  const int64_t steps = c.contains("steps") && c["steps"].is_number_integer() ? c["steps"].get<int64_t>() : 0;
  if (result == "pass" && steps > 0 && steps < kMinComparedSteps)
    out.push_back(src.at(at_result, "pass",
                         "fail: " + counted(steps, "step") + " compared, fewer than " +
                             std::to_string(kMinComparedSteps) + " (docs/correctness.md)"));
  if (result == "pass" && !pointwise_failures_pass(failures, steps))
    out.push_back(src.at(at_result, "pass", "fail: " + failures_text(failures, c)));
  if (result == "pass" && c.contains("correlation") && c["correlation"].is_number() &&
      c["correlation"].get<double>() < kPassCorrelation)
    out.push_back(src.at(at_result, "pass",
                         "fail: correlation " + shortest(c["correlation"].get<double>()) + " of the loss curves, below " +
                             shortest(kPassCorrelation) + " (docs/correctness.md)"));
  if (recipe.status == "verified" && (result == "fail" || result == "not_run"))
    out.push_back(src.at(at_result, result, "pass: a recipe of status verified carries a passed convergence check"));
  return out;
}

}  // namespace recipebench
