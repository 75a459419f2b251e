#include "backend/capabilities.h"

#include <algorithm>
#include <type_traits>

namespace recipebench {

namespace {

template <typename T>
std::string name_of(const T& v) {
  if constexpr (std::is_same_v<T, int>)
    return std::to_string(v);
  else if constexpr (std::is_same_v<T, std::string>)
    return v;
  else
    return to_string(v);
}

template <typename T>
Json names(const std::vector<T>& values) {
  Json out = Json::array();
  for (const auto& v : values) {
    if constexpr (std::is_same_v<T, int>)
      out.push_back(v);
    else
      out.push_back(name_of(v));
  }
  return out;
}

/// "alltoall", "full or none", "nothing" (an empty list).
template <typename T>
std::string choices(const std::vector<T>& values) {
  if (values.empty()) return "nothing";
  std::string out;
  for (size_t i = 0; i < values.size(); ++i)
    out += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + name_of(values[i]);
  return out;
}

/// Appends a diagnostic when `value` is not among `allowed`.
struct Checker {
  const std::string& backend;
  const SourceDoc& src;
  Diagnostics& out;

  template <typename T>
  void field(const std::string& pointer, const T& value, const std::vector<T>& allowed, const std::string& note = "") {
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
    out.push_back(src.at(pointer, name_of(value) + note, expected(allowed)));
  }
  template <typename T>
  void option(const std::string& flag, const T& value, const std::vector<T>& allowed) {
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
    out.push_back(Diagnostic{"<command line>", 0, 0, flag, name_of(value), expected(allowed)});
  }
  template <typename T>
  std::string expected(const std::vector<T>& allowed) const {
    return choices(allowed) + " (what the " + backend + " backend runs)";
  }
};

}  // namespace

const char* to_string(OptimizerSharding s) {
  switch (s) {
    case OptimizerSharding::kDp:
      return "dp";
    case OptimizerSharding::kEdp:
      return "edp";
    case OptimizerSharding::kNone:
      break;
  }
  return "none";
}

Json BackendCapabilities::to_json() const {
  return Json{{"cp", names(cp)},
              {"etp", names(etp)},
              {"dispatcher", names(dispatchers)},
              {"offload", names(offload)},
              {"recompute", names(recompute)},
              {"precision", names(precisions)},
              {"device", names(devices)},
              {"data_source", names(data_sources)},
              {"emulate_rank", emulate_rank},
              {"optimizer_sharding", Json{{"dense", to_string(dense_optimizer_sharding)},
                                          {"experts", to_string(expert_optimizer_sharding)}}}};
}

Diagnostics check_capabilities(const std::string& backend, const BackendCapabilities& caps, const Recipe& recipe,
                               const SourceDoc& src, Device device, DataSource data_source,
                               CapabilityOverrides overrides) {
  Diagnostics out;
  Checker c{backend, src, out};
  const RecipeLayout& l = recipe.layout;
  c.field("/layout/cp", l.cp, caps.cp);
  c.field("/layout/etp", l.effective_etp(), caps.etp, l.etp ? "" : " (layout.etp absent: ETP = TP)");
  c.field("/layout/dispatcher", l.dispatcher, caps.dispatchers);
  c.field("/layout/offload", l.offload.empty() ? std::string("none") : l.offload, caps.offload);
  c.field("/layout/recompute/granularity", l.recompute.granularity, caps.recompute);
  c.field("/workload/precision", recipe.workload.precision, caps.precisions);
  if (overrides.device)
    c.option("--device", device, caps.devices);
  else
    c.field("/bench/device", device, caps.devices, recipe.bench.device ? "" : " (bench.device absent)");
  if (overrides.data_source)
    c.option("--data", data_source, caps.data_sources);
  else
    c.field("/bench/data/source", data_source, caps.data_sources, recipe.bench.data.source ? "" : " (absent)");
  return out;
}

}  // namespace recipebench
