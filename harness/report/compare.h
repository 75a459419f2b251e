// Two leaderboard entries side by side: the fields that describe how each was run (layout degrees, recompute,
// dispatcher, max tokens per GPU, stack versions, env) with the differences marked, and the ratios of their
// figures. Used by `recipebench compare A B` and by the leaderboard page (docs/report.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/leaderboard.h"

namespace recipebench {

/// One described field of an entry: section ("layout", "hardware", "workload", "stack", "env", "source"),
/// name within it ("tp", "pytorch", "NCCL_NVLS_ENABLE") and its value as text.
struct EntryField {
  std::string section, name, value;
};

/// The fields of `e` in display order. Layout: label, TP, PP, VPP, CP, EP, ETP, DP, sequence parallel, max tokens
/// per GPU, rows per microbatch, recompute, offload, dispatcher, layer split; then hardware, workload (its rows'
/// kind among them), a run record's settings (each member of its `settings` block: seed, the switches, device,
/// window; objects flattened as "data.source"), stack
/// versions (the recipe's stack, or for run records the measured environment's versions), env variables, source.
std::vector<EntryField> entry_fields(const LeaderboardEntry& e);

/// One of an entry's figures (measured or computed): key as in leaderboard.json, label with unit, value if known.
struct EntryFigure {
  std::string key, label;
  std::optional<double> value;
};

/// tokens/s/GPU, $ / 1M tokens, MFU (fraction), step-time CV (%), GPU-hours, in that order.
std::vector<EntryFigure> entry_figures(const LeaderboardEntry& e);

struct ComparedField {
  std::string section, name, a, b;  ///< "—" where an entry lacks the field
  bool differs = false;
};
struct ComparedFigure {
  std::string key, label;
  std::optional<double> a, b;
  std::optional<double> ratio;  ///< b / a, when both are known and a != 0
};

/// A and B side by side. Fields are matched by section and name: A's order, then B's fields A lacks.
struct Comparison {
  std::string a_id, b_id, a_file, b_file;
  std::vector<ComparedField> fields;
  std::vector<ComparedFigure> figures;
  size_t differences() const;
};

Comparison compare_entries(const LeaderboardEntry& a, const LeaderboardEntry& b);

/// What tells each of `entries` (one group's) apart from the others that share its layout label, for its bar's
/// label (docs/report.md): for each other entry of its label, the first field in which the two differ, tried in
/// this order: the layout's fields, the source's kind (recipe, or run record and its backend), then hardware,
/// workload, settings, stack, env and author (never the file or date); those fields as "name value" joined by ", ",
/// at most `max_parts`; the entry's id when they differ in nothing else.
/// Empty for an entry whose layout label no other entry has. One string per entry, in the entries' order.
std::vector<std::string> distinguishing_text(const std::vector<LeaderboardEntry>& entries, size_t max_parts = 2);

/// The comparison as terminal text: figures with B/A ratios, then every field (a "*" marks a difference).
std::string comparison_to_text(const Comparison& c);

/// Sets a run record's entry's settings (details.measurement.settings) to the block as the record's file wrote it,
/// `record_doc["settings"]`, instead of as read back with the defaults filled in: a setting an older record lacks
/// then shows as "—" and differs from a record that states it. No change when the document has no settings object.
void use_settings_as_written(LeaderboardEntry& e, const Json& record_doc);

/// What makes two runs' loss curves not comparable step by step, from their records' `settings` blocks: "the runs'
/// seeds differ (1234, 7): ..." and "the runs' rows differ (...)"; empty when neither differs or a block is absent.
std::vector<std::string> settings_warnings(const Json& a_settings, const Json& b_settings);

/// The warning when `a` and `b` are one input: the same file by two paths (or the same path), or two files of the
/// same bytes ("A and B are the same file (runs/r.json): an input compared with itself agrees by construction");
/// nullopt when they differ or cannot be read (reading them reports why).
std::optional<std::string> same_input_warning(const std::string& a, const std::string& b);

/// A figure as the page and the terminal show it: tokens/s/GPU "1,232.5", $ "$3.21", MFU "5.4%", CV "2.72%",
/// GPU-hours "22.49"; "—" when unknown.
std::string format_figure(const std::string& key, const std::optional<double>& v);

}  // namespace recipebench
