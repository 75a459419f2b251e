#include "console/emulation_table.h"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "backend/profile.h"

#include "util/format.h"

namespace recipebench {

namespace {
constexpr const char* kOps[] = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send", "recv"};

std::string joined(const Json& a, const char* sep) {
  std::string s;
  for (const Json& v : a) s += (s.empty() ? "" : sep) + (v.is_string() ? v.get<std::string>() : v.dump());
  return s;
}

std::string place_text(const Json& e) {
  const Json& c = e["coordinates"];
  return fmt::format("tp {}, cp {}, dp {}, pp {}, etp {}, ep {}, edp {}; {}", c["tp"].dump(), c["cp"].dump(),
                     c["dp"].dump(), c["pp"].dump(), c["etp"].dump(), c["ep"].dump(), c["edp"].dump(),
                     e["stage_kind"].get<std::string>());
}

std::string layers_text(const Json& e) {
  std::string s;
  for (const Json& lr : e["layers"]) {
    const int64_t first = lr["first"], count = lr["count"];
    s += fmt::format("{}{}{} (virtual stage {})", s.empty() ? "" : ", ", first,
                     count > 1 ? fmt::format("-{}", first + count - 1) : std::string(), lr["virtual_stage"].dump());
  }
  return fmt::format("  layers {}: {} of the stage's {}\n", s, e["layers_run"].dump(), e["stage_layers"].dump());
}

std::string traffic_table(const Json& groups) {
  if (groups.empty()) return "";
  std::string s = fmt::format("  {:<22} {:<14}", "traffic per step", "members");
  for (const char* op : kOps) s += fmt::format(" {:>20}", op);
  s += "\n";
  for (const Json& g : groups) {
    s += fmt::format("  {:<22} {:<14}", joined(g["kinds"], ", "), joined(g["members"], " "));
    for (const char* op : kOps) {
      const Json& o = g["ops"].contains(op) ? g["ops"][op] : Json();
      s += fmt::format(" {:>20}", o.is_null() ? std::string("-")
                                              : fmt::format("{} ({:.3g})", bytes_text(o["bytes_per_step"].get<double>()),
                                                            o["calls_per_step"].get<double>()));
    }
    s += "\n";
  }
  return s + "  (bytes per step as nccl-tests counts an operation's size, calls per step in brackets)\n";
}
/// With --profile: the step's time by component (rows) and phase (columns), ms per step, then the mean pass per
/// kind and virtual stage.
std::string component_table(const Json& e) {
  const Json& per = e["components_per_step"];
  std::string s = fmt::format("  {:<22}", "ms per step");
  for (int ph = 0; ph < kPassPhases; ++ph) s += fmt::format(" {:>10}", to_string(PassPhase(ph)));
  s += fmt::format(" {:>10}\n", "total");
  for (int k = 0; k < kProfileComponents; ++k) {
    const char* name = to_string(ProfileComponent(k));
    std::string row = fmt::format("  {:<22}", name);
    double total = 0;
    for (int ph = 0; ph < kPassPhases; ++ph) {
      const Json& cells = per.contains(to_string(PassPhase(ph))) ? per[to_string(PassPhase(ph))] : Json::object();
      const double v = cells.value(name, 0.0);
      total += v;
      row += v > 0 ? fmt::format(" {:>10.2f}", v * 1e3) : fmt::format(" {:>10}", "-");
    }
    if (total > 0) s += row + fmt::format(" {:>10.2f}\n", total * 1e3);
  }
  s += fmt::format("  {:<22} {:>43.2f}\n", "optimizer step", e["window"].value("optimizer_seconds", 0.0) * 1e3);
  // The mean pass of each kind and virtual stage: what the step-time model's pipeline takes (docs/emulation.md).
  std::map<std::pair<std::string, int>, std::pair<double, int>> mean;
  for (const Json& p : e["passes"]) {
    auto& m = mean[{p["kind"].get<std::string>(), p["virtual_stage"].get<int>()}];
    m.first += p["seconds"].get<double>(), ++m.second;
  }
  for (const auto& [key, m] : mean)
    s += fmt::format("  {} pass of virtual stage {}: {:.2f} ms (mean of {} microbatches)\n", key.first, key.second,
                     m.first / m.second * 1e3, m.second);
  return s;
}
}  // namespace

std::string format_emulation(const RunRecord& r) {
  const Json& e = r.emulation;
  if (e.is_null()) return "";
  std::string s = fmt::format("emulated rank {} of {}: {} on {} (ran on {}); {}\n", e["rank"].dump(),
                              e["world"].dump(), e["layout"].get<std::string>(), e["gpu"].get<std::string>(),
                              r.device_name(), place_text(e));
  s += layers_text(e);
  if (e.contains("window"))
    s += fmt::format("  window {}..{}: mean step {:.4f} s: compute {:.4f} s, the stand-in's operations {:.4f} s\n",
                     r.options.settings.window.first, r.options.settings.window.last,
                     e["window"]["mean_step_seconds"].get<double>(), e["window"].value("compute_seconds", 0.0),
                     e["window"].value("stand_in_seconds", 0.0));
  if (e.contains("peak_memory_bytes") && !e["peak_over_plan"].is_null())
    s += fmt::format("  peak memory {:.2f} GB, planned {:.2f} GB for this rank ({:.2f}x the plan{})\n",
                     e["peak_memory_bytes"].get<double>() / 1e9, e["planned_peak_bytes"].get<double>() / 1e9,
                     e["peak_over_plan"].get<double>(),
                     // On the CPU the peak is the process's resident memory (getrusage), libtorch's own included.
                     r.options.settings.device == Device::kCpu
                         ? "; on the CPU the peak is the whole process's resident memory, libtorch's own included, "
                           "which the plan does not count: a small plan's ratio says little"
                         : "");
  if (e.contains("components_per_step")) s += component_table(e);
  if (e.contains("traffic_per_step")) s += traffic_table(e["traffic_per_step"]);
  return s;
}

}  // namespace recipebench
