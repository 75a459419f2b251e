#include "console/profile_table.h"

#include <fmt/format.h>

#include <utility>

namespace recipebench {

namespace {

/// Window means (seconds per step) of the step time and of each profiled part, in the rows' order.
struct WindowMeans {
  double step = 0, gdn = 0, attention = 0, moe = 0, lm_head_loss = 0, optimizer = 0;
  int steps = 0;
};

WindowMeans window_means(const RunRecord& r) {
  WindowMeans m;
  for (const StepSample& s : r.steps) {
    if (s.step < r.options.settings.window.first || s.step > r.options.settings.window.last) continue;
    m.step += s.seconds;
    m.gdn += s.components.gdn;
    m.attention += s.components.attention;
    m.moe += s.components.moe;
    m.lm_head_loss += s.components.lm_head_loss;
    m.optimizer += s.optimizer_seconds;
    ++m.steps;
  }
  if (m.steps == 0) return m;
  for (double* x : {&m.step, &m.gdn, &m.attention, &m.moe, &m.lm_head_loss, &m.optimizer}) *x /= m.steps;
  return m;
}

}  // namespace

std::vector<ProfileRow> profile_rows(const RunRecord& record) {
  const WindowMeans m = window_means(record);
  if (m.steps == 0 || m.step <= 0) return {};
  const double other = m.step - (m.gdn + m.attention + m.moe + m.lm_head_loss + m.optimizer);
  std::vector<ProfileRow> rows;
  for (const auto& [name, seconds] : {std::pair<const char*, double>{"GDN layers", m.gdn},
                                      {"attention layers", m.attention},
                                      {"MoE blocks", m.moe},
                                      {"LM head + loss", m.lm_head_loss},
                                      {"optimizer", m.optimizer},
                                      {"other", other}})
    rows.push_back(ProfileRow{name, 1e3 * seconds, 100 * seconds / m.step});
  return rows;
}

std::string format_profile_table(const RunRecord& record) {
  const auto rows = profile_rows(record);
  if (rows.empty()) return "profile: no step in the window\n";
  std::string out = fmt::format(
      "profile, mean per step over steps {}..{} (device synchronised at every component boundary):\n"
      "{:<18} {:>10} {:>8}\n",
      record.options.settings.window.first, record.options.settings.window.last, "component", "ms/step", "%");
  double total = 0;
  for (const ProfileRow& row : rows) {
    out += fmt::format("{:<18} {:>10.1f} {:>7.1f}%\n", row.component, row.ms_per_step, row.percent);
    total += row.ms_per_step;
  }
  out += fmt::format("{:<18} {:>10.1f} {:>7.1f}%\n", "step", total, 100.0);
  return out;
}

}  // namespace recipebench
