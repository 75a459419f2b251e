#include "console/phase_profile.h"

#include <fmt/format.h>

#include <utility>

namespace recipebench {

std::optional<std::vector<PhaseRow>> phase_rows(const RunRecord& record) {
  double step = 0;
  CommWaitSeconds waits;
  int n = 0;
  for (const StepSample& s : record.steps) {
    if (s.step < record.options.settings.window.first || s.step > record.options.settings.window.last) continue;
    if (!s.comm_waits.measured) continue;
    step += s.seconds;
    waits.tp += s.comm_waits.tp;
    waits.ep += s.comm_waits.ep;
    waits.dp += s.comm_waits.dp;
    waits.pp += s.comm_waits.pp;
    ++n;
  }
  if (n == 0 || step <= 0) return std::nullopt;
  std::vector<PhaseRow> rows;
  for (const auto& [name, seconds] : {std::pair<const char*, double>{"compute and other", step - waits.sum()},
                                      {"exposed TP", waits.tp},
                                      {"exposed EP", waits.ep},
                                      {"exposed DP/EDP", waits.dp},
                                      {"pipeline waits", waits.pp}})
    rows.push_back(PhaseRow{name, 1e3 * seconds / n, 100 * seconds / step});
  return rows;
}

std::string format_phase_line(const RunRecord& record) {
  const auto rows = phase_rows(record);
  if (!rows) return "";
  std::string out = fmt::format("step phases on rank 0 (mean over steps {}..{}):", record.options.settings.window.first,
                                record.options.settings.window.last);
  for (size_t i = 0; i < rows->size(); ++i)
    out += fmt::format("{} {} {:.1f} ms ({:.1f}%)", i ? "," : "", (*rows)[i].phase, (*rows)[i].ms_per_step,
                       (*rows)[i].percent);
  return out + "\n";
}

}  // namespace recipebench
