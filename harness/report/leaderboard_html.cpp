// The leaderboard as one self-contained HTML page, rendered from kainjow mustache data (the template, CSS and
// script are in leaderboard_template.cpp). Every input string goes through mustache's HTML escaping; only
// http(s) URLs become links (page_text.h); SVG and JSON blocks are built by report code that escapes them.
#include <kainjow/mustache.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>
#include <stdexcept>

#include "report/board_views.h"
#include "report/compare.h"
#include "report/leaderboard.h"
#include "report/leaderboard_template.h"
#include "report/page_text.h"
#include "report/svg_chart.h"
#include "util/format.h"
#include "util/input_file.h"

namespace recipebench {

namespace mu = kainjow::mustache;

namespace {

std::string text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "—";
  return v.dump();
}

/// A count from a record and its noun ("1 step", "20 steps"); a value that is not a whole number as text() gives it.
std::string counted_text(const Json& v, const std::string& noun) {
  return v.is_number_integer() ? counted(v.get<int64_t>(), noun) : text(v) + " " + noun + "s";
}

std::string pct(double fraction, int decimals) { return fixed(100.0 * fraction, decimals) + "%"; }

/// "+12.3%" / "-4.0%": a change as a signed percentage.
std::string signed_pct(double fraction) { return fmt::format("{:+.1f}%", 100 * fraction); }


std::string humanize(const std::string& key) {
  std::string s = key;
  for (auto& c : s)
    if (c == '_') c = ' ';
  return s;
}

/// Number text for data-* sort keys: full precision, empty when unknown.
/// Seven significant digits: enough to order any two entries a page tells apart (a board of 1,000 stays small).
std::string raw(const std::optional<double>& v) { return v ? fmt::format("{:.7g}", *v) : std::string(); }

/// A group's entries whose recipe YAML the page shows in full (recipe_block), as the seed's page shows its three;
/// the others link their copy (a board of 500 stays under 2 MB: tests/browser/big_board.test.js).
constexpr int kInlineYamlRanks = 3;

/// Notes as paragraphs: a single line break (the YAML's wrapping) becomes a space, a blank line stays.
std::string unwrapped(const std::string& notes) {
  std::string out;
  for (size_t i = 0; i < notes.size(); ++i) {
    const bool lone =
        notes[i] == '\n' && (i + 1 >= notes.size() || notes[i + 1] != '\n') && (i == 0 || notes[i - 1] != '\n');
    out += lone ? ' ' : notes[i];
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

/// One row of a facts list: label, text, and optionally a note, a link (http(s) only) or code styling.
mu::data fact(const std::string& label, const std::string& value, const std::string& note = "",
              const std::string& href = "", bool code = false) {
  mu::data f;
  f.set("label", label);
  f.set("text", value);
  if (!note.empty()) f.set("note", note);
  if (!href.empty() && is_http_url(href)) f.set("href", href);
  if (code) f.set("code", mu::data::type::bool_true);
  return f;
}

/// The author's fact as the seed page writes it: the name, then "(cite)" linking to author.url (http(s) only).
mu::data author_fact(const LeaderboardEntry& e) {
  mu::data f = fact("Author", e.author);
  if (is_http_url(e.author_url)) f.set("cite", e.author_url);
  return f;
}

/// A fact's value when `v` is a number: `digits` decimals; else empty.
std::string number_text(const Json& v, int digits) { return v.is_number() ? fixed(v.get<double>(), digits) : ""; }

/// What the stack itself printed beside our figures (a command's or an imported log's run: log.printed, the
/// window's means), and why its MFU differs from ours (docs/metrics.md, "MFU").
void printed_facts(const LeaderboardEntry& e, const Json& log, mu::data& facts) {
  const Json& p = log.value("printed", Json::object());
  if (!p.is_object()) return;
  std::string said;
  if (p.contains("mfu") && p["mfu"].is_number()) said = "MFU " + pct(p["mfu"].get<double>(), 1);
  if (const std::string t = number_text(p.value("tflops_per_gpu", Json()), 1); !t.empty())
    said += (said.empty() ? "" : ", ") + t + " TFLOP/s per GPU";
  if (said.empty()) return;
  std::string ours = e.mfu ? "ours: MFU " + pct(*e.mfu, 1) + " by 6 x N_active; " : "";
  facts << fact("Stack-reported", said,
                ours + "the stack's own FLOPs count (attention and other terms included, its own peak), window mean "
                       "of what the log printed; not comparable across stacks");
}

void measurement_facts(const LeaderboardEntry& e, mu::data& facts) {
  const Json& m = e.details["measurement"];
  const bool from_log = m.contains("log") && m["log"].is_object();
  if (from_log) {
    // The stack that trained is the recipe's, at the commit it names; recipebench only ran it or read its log.
    const Json& stack = e.details.value("stack", Json::object());
    const std::string framework = stack.is_object() ? stack.value("framework", std::string()) : "";
    facts << fact("Trained by", (framework.empty() ? "the recipe's stack (its Stack below)" : framework) +
                                    (e.commit.empty() ? "" : ", commit " + e.commit),
                  "the recipe's stack; timed by its own log");
    facts << fact("Recorded by", e.recorded_by,
                  (e.backend.rfind("import", 0) == 0 ? "parsed the log" : "ran the command and parsed its log") +
                      std::string(" with ") + text(m["log"].value("parser", Json("?"))) +
                      "; not the stack that trained");
    printed_facts(e, m["log"], facts);
  } else {
    facts << fact("Measured by", "recipebench, backend " + e.backend + ", on " + e.hardware);
  }
  facts << fact("Mean step time", fixed(m.value("mean_step_seconds", 0.0), 3) + " s");
  if (m.value("peak_memory_bytes", Json(0)).is_number() && m.value("peak_memory_bytes", 0.0) > 0) {
    const double gb = m["peak_memory_bytes"].get<double>() / 1e9;
    facts << fact("Peak memory", fixed(gb, 1) + " GB" +
                                     (e.gpu_memory_gb > 0 ? " of " + shortest(e.gpu_memory_gb) + " GB (headroom " +
                                                                fixed(e.gpu_memory_gb - gb, 1) + " GB)"
                                                          : ""),
                  "the most any GPU held during the run");
  }
  if (m.contains("final_loss") && m["final_loss"].is_number())
    facts << fact("Final loss", fixed(m["final_loss"].get<double>(), 4));
  else if (from_log)
    facts << fact("Final loss", "not in the log");
  if (from_log) return;  // recipebench's build is not the run's environment
  std::string versions;
  for (const EntryField& f : entry_fields(e))
    if (f.section == "stack") versions += (versions.empty() ? "" : "; ") + f.name + " " + f.value;
  facts << fact("Environment", versions, "this build of recipebench measured it");
}

void correctness_facts(const Json& c, mu::data& facts) {
  if (c.contains("summary")) facts << fact("Correctness", text(c.value("result", Json())) + " — " + text(c["summary"]));
  if (c.contains("convergence")) {
    const Json& cv = c["convergence"];
    facts << fact("Convergence check", "correlation " + text(cv.value("correlation", Json())) +
                                           ", final loss difference " +
                                           text(cv.value("final_loss_difference", Json())) + ", " +
                                           counted_text(cv.value("pointwise_failures", Json()), "pointwise failure") +
                                           " over " + counted_text(cv.value("steps", Json()), "step"));
  }
  if (c.contains("component_tests") && c["component_tests"].is_array())
    for (const auto& t : c["component_tests"])
      facts << fact("Component test", text(t.value("test", Json())) + ": " + text(t.value("gpu", Json())) + ", " +
                                          text(t.value("date", Json())) + ". Shape: " + text(t.value("shape", Json())) +
                                          ". " + text(t.value("detail", Json())));
}

/// Facts and blocks (GPUs, layout, rows, cost and MFU basis, stack, env, command, ...) already shown in the group: a
/// card does not print them again but names them in one line, "Same as #1 <id>: GPUs, Layout, Stack", which keeps
/// big boards small (tests/browser/big_board.test.js) and shows at a glance what changed. The notes keep their own
/// box, saying "Same as #k".
class SeenBlocks {
 public:
  /// True (and `name` noted for the card's "Same as" line) when an earlier entry of the group showed `content` under
  /// `name`; false, and this entry noted as the first to show it, otherwise.
  bool repeat(const std::string& name, const std::string& content, const LeaderboardEntry& e) {
    auto [it, inserted] = first_.emplace(name + '\0' + content, std::make_pair(e.rank, e.id));
    if (!inserted) same_[it->second].push_back(name);
    return !inserted;
  }
  /// Sets `<name>_same` {id, rank} on `a` (the notes box's own "Same as", not the card's line) when `content` was
  /// shown before.
  bool repeat_marked(const std::string& name, const std::string& content, const LeaderboardEntry& e, mu::data& a) {
    auto [it, inserted] = first_.emplace(name + '\0' + content, std::make_pair(e.rank, e.id));
    if (inserted) return false;
    mu::data same;
    same.set("id", it->second.second);
    same.set("rank", std::to_string(it->second.first));
    a.set(name + "_same", same);
    return true;
  }
  /// The card's "Same as" lines (same_as: [{id, rank, names}]), best rank first, and forgets them for the next card.
  void take_same_as(mu::data& a) {
    if (same_.empty()) return;
    mu::data lines{mu::data::type::list};
    for (const auto& [who, names] : same_) {
      mu::data line;
      line.set("rank", std::to_string(who.first));
      line.set("id", who.second);
      std::string joined;
      for (const std::string& n : names) joined += (joined.empty() ? "" : ", ") + n;
      line.set("names", joined);
      lines << line;
    }
    a.set("same_as", lines);
    same_.clear();
  }

 private:
  std::map<std::string, std::pair<int, std::string>> first_;                 // name and content -> (rank, id)
  std::map<std::pair<int, std::string>, std::vector<std::string>> same_;  // this card's repeats, by whom
};

/// Adds fact `f` labelled `label` unless an earlier card of the group showed the same text (SeenBlocks).
void shared_fact(const std::string& label, mu::data f, const std::string& content, const LeaderboardEntry& e,
                 SeenBlocks& seen, mu::data& facts) {
  if (!seen.repeat(label, content, e)) facts << f;
}

/// The tokens/s/GPU fact: the figure, its window, and its spread over the runs when there are several.
mu::data speed_fact(const LeaderboardEntry& e) {
  std::string note = "measured";
  if (const std::string w = window_text(e); !w.empty()) note += " over " + w;
  if (const std::optional<RunSpread> sp = run_spread(e))
    note += "; the latest of " + std::to_string(sp->runs) + " runs: median " + fixed(sp->median, 1) + ", CV " +
            fixed(sp->cv_percent, 2) + "% across runs";
  return fact("Tokens/s per GPU", fixed(e.tokens_per_s_per_gpu, 2), note);
}

/// The MFU facts: the figure, and its basis (the formula with its N and its peak denominator named; docs/metrics.md,
/// "MFU"), the basis shared with earlier cards of the group (SeenBlocks).
void mfu_facts(const LeaderboardEntry& e, SeenBlocks& seen, mu::data& facts) {
  facts << fact("MFU", pct(*e.mfu, 1));
  const std::string basis = "6 x N x tokens/s/GPU / " + fixed(e.peak_flops / 1e12, 0) +
                            " TFLOP/s, the dense BF16 peak of one " + e.gpu_type + "; N = " +
                            with_commas(e.active_params) + " active parameters per token";  // footer: no attention
  shared_fact("MFU basis", fact("MFU basis", basis), basis, e, seen, facts);
}

/// MoE routing of an entry with experts (a layout with a dispatcher): as the recipe states it (layout.moe_routing),
/// natural for recipebench's own runs (its router's top-k choices), else "not stated"; nothing for a dense model.
/// Most published MoE figures are forced-balanced, which is faster: the footer says so (docs/report.md).
void routing_fact(const LeaderboardEntry& e, SeenBlocks& seen, mu::data& facts) {
  const Json& dispatcher = e.layout.value("dispatcher", Json());
  if (!dispatcher.is_string()) return;
  const Json& stated = e.layout.value("moe_routing", Json());
  const bool own_run = e.kind == "run" && !e.details["measurement"].contains("log");
  const std::string routing = stated.is_string() ? stated.get<std::string>() : own_run ? "natural" : "";
  // Short: the footer says what each means and why it matters (a board of 1,000 stays under 2 MiB).
  const std::string said = routing == "forced_balanced" ? "forced balanced" : routing.empty() ? "not stated" : routing;
  shared_fact("MoE routing", fact("MoE routing", said), said, e, seen, facts);
}

/// The $ / 1M tokens facts: the figure at its price, and its cost basis (where the price comes from), shared.
void cost_facts(const LeaderboardEntry& e, SeenBlocks& seen, mu::data& facts) {
  if (!e.usd_per_million_tokens) {
    facts << fact("$ / 1M tokens", "—", e.price_source);
    return;
  }
  facts << fact("$ / 1M tokens", "$" + fixed(*e.usd_per_million_tokens, 2),
                "computed at $" + fixed(e.usd_per_gpu_hour, 4) + "/GPU-hour");
  shared_fact("Cost basis", fact("Cost basis", e.price_source), e.price_source, e, seen, facts);
}

/// The entry's own rows: their kind (what its group is split by), the recipe's words, the dataset.
void rows_fact(const LeaderboardEntry& e, SeenBlocks& seen, mu::data& facts) {
  const Json& d = e.details;
  std::string rows = e.rows_text;
  if (d.contains("dataset") && d["dataset"].is_object()) {
    const Json& ds = d["dataset"];
    std::string s = text(ds.value("name", Json()));
    if (ds.contains("build") && ds["build"].is_object() && ds["build"].contains("name"))
      s = text(ds["build"]["name"]) + " from " + s;
    if (ds.contains("rows_sha256")) s += " (rows_sha256 " + text(ds["rows_sha256"]) + ")";
    rows += ": " + s;
  }
  const bool said = e.rows.empty() || rows.find(e.rows) != std::string::npos;
  const std::string note = said ? "" : "the recipe's workload.rows: " + e.rows;
  shared_fact("Rows", fact("Rows", rows, note), rows + note, e, seen, facts);
}

mu::data facts_of(const LeaderboardEntry& e, SeenBlocks& seen) {
  const Json& d = e.details;
  mu::data facts{mu::data::type::list};
  facts << author_fact(e);
  if (!e.author_url.empty() && !is_http_url(e.author_url)) facts << fact("Author URL", e.author_url, "not a link");
  if (d.contains("generated"))
    shared_fact("Generated", fact("Generated", text(d["generated"]), "test data, not a measurement"),
                text(d["generated"]), e, seen, facts);
  std::string gpus = std::to_string(e.gpus) + " x " + e.gpu_type;
  if (e.gpu_memory_gb > 0) gpus += " " + shortest(e.gpu_memory_gb) + " GB";
  gpus +=
      " (" + (e.instance.empty() ? std::string() : e.instance + ", ") + std::to_string(e.gpus_per_node) + " per node)";
  shared_fact("GPUs", fact("GPUs", gpus), gpus, e, seen, facts);
  const std::string layout = e.layout_summary.empty() ? e.layout_label : e.layout_summary;
  shared_fact("Layout", fact("Layout", layout), layout, e, seen, facts);
  facts << speed_fact(e);
  cost_facts(e, seen, facts);
  if (d.contains("measurement")) measurement_facts(e, facts);
  routing_fact(e, seen, facts);
  if (e.mfu) mfu_facts(e, seen, facts);
  if (d.contains("result_mfu_note")) facts << fact("MFU note", text(d["result_mfu_note"]), "the recipe's");
  if (e.step_time_cv_percent) facts << fact("Step-time CV", fixed(*e.step_time_cv_percent, 2) + "%");
  facts << fact("Measured", e.measured);
  if (e.gpu_hours) facts << fact("GPU-hours", fixed(*e.gpu_hours, 2));
  rows_fact(e, seen, facts);
  if (e.kind == "run") facts << fact("Run record", e.file, "", "", true);
  return facts;
}

/// The per-step charts of a run record: step times with the timed window shaded, and the loss curve.
void step_charts(const LeaderboardEntry& e, mu::data& a) {
  const StepSeries& s = e.steps;
  if (s.seconds.empty()) return;
  a.set("has_charts", mu::data::type::bool_true);
  a.set("step_svg", svg::steps_svg(s.seconds, s.window_first, s.window_last,
                                   svg::StepStyle{"step time (s)", true, false, false}, "steps-" + e.id,
                                   "Step times of " + e.id + ", steps 0.." + std::to_string(s.seconds.size() - 1)));
  // A log that prints no loss has none to draw (its steps' loss is NaN, null in the record).
  if (std::none_of(s.loss.begin(), s.loss.end(), [](double v) { return std::isnan(v); }))
    a.set("loss_svg", svg::steps_svg(s.loss, s.window_first, s.window_last,
                                     svg::StepStyle{"loss (nats per token)", false, true, true}, "loss-" + e.id,
                                     "Training loss of " + e.id + " by step"));
}

/// The card's blocks (correctness, stack, environment, patches, how to run, notes), each shown once per group: a
/// later card with the same block names it in its "Same as" line instead (the notes in their own box).
void block_data(const LeaderboardEntry& e, SeenBlocks& seen, mu::data& a) {
  const Json& d = e.details;
  if (d.contains("correctness") && d["correctness"].is_object() &&
      !seen.repeat("Correctness", d["correctness"].dump(), e)) {
    mu::data facts{mu::data::type::list};
    correctness_facts(d["correctness"], facts);
    a.set("has_correctness", mu::data::type::bool_true);
    a.set("correctness", facts);
  }
  if (d.contains("stack") && d["stack"].is_object() && !d["stack"].empty() &&
      !seen.repeat("Stack", d["stack"].dump(), e)) {
    mu::data stack{mu::data::type::list};
    for (const auto& [k, v] : d["stack"].items()) stack << fact(humanize(k), text(v));
    a.set("has_stack", mu::data::type::bool_true);
    a.set("stack", stack);
  }
  if (d.contains("env") && d["env"].is_object() && !d["env"].empty()) {
    std::string env;
    for (const auto& [k, v] : d["env"].items()) env += k + "=" + text(v) + "\n";
    if (!seen.repeat("Environment", env, e)) a.set("env", env);
  }
  if (d.contains("patches") && d["patches"].is_array() && !d["patches"].empty() &&
      !seen.repeat("Patches", d["patches"].dump(), e)) {
    mu::data patches{mu::data::type::list};
    for (const auto& p : d["patches"]) patches << mu::data(text(p));
    a.set("has_patches", mu::data::type::bool_true);
    a.set("patches", patches);
  }
  if (d.contains("run") && d["run"].is_string() && !d["run"].get<std::string>().empty() &&
      !seen.repeat("How to run", text(d["run"]), e))
    a.set("run", text(d["run"]));
  // The notes keep their box on every card, first (they carry run-critical warnings, e.g. the seed's B200 patch): a
  // repeat says where they are.
  if (d.contains("notes") && !text(d["notes"]).empty()) {
    a.set("notes", unwrapped(text(d["notes"])));
    seen.repeat_marked("notes", text(d["notes"]), e, a);
  }
  seen.take_same_as(a);
}

/// The recipe section of an entry: the recipe's file (a run's: the recipe it was made from), its Download link, the
/// repository link the recipe names, and its YAML, byte for byte, for the group's first kInlineYamlRanks entries:
/// their Download is a data: URI of the bytes (Chromium downloads it from a page opened as a file too); the others'
/// is the copy `report` writes beside the page (recipe_copy_path), so that a board of thousands stays small. A run
/// whose recipe file is gone or changed says so (LeaderboardEntry::recipe_unavailable).
void recipe_block(const LeaderboardEntry& e, mu::data& a) {
  mu::data r;
  if (e.kind == "run") r.set("made_from", mu::data::type::bool_true);
  if (e.recipe_file.empty()) {
    r.set("file", e.recipe_of);
    r.set("yaml_elsewhere", e.recipe_unavailable);
    a.set("recipe", r);
    return;
  }
  r.set("file", e.recipe_file);
  r.set("download", recipe_copy_path(e));
  r.set("download_name", std::filesystem::path(e.recipe_file).filename().string());
  if (e.details.contains("repository")) {
    const std::string url = text(e.details["repository"]);
    r.set(is_http_url(url) ? "repository" : "repository_not_link", url);
  }
  if (e.rank <= kInlineYamlRanks) {
    try {
      const std::string yaml = read_input_file(e.recipe_file);
      const auto lines = std::count(yaml.begin(), yaml.end(), '\n');
      r.set("download", data_uri("application/yaml", yaml));  // a file:// page's link to a file is no download
      r.set("yaml", yaml);
      r.set("yaml_lines", counted(lines, "line"));
    } catch (const std::exception& ex) {
      r.set("yaml_elsewhere", std::string("The recipe file could not be read again: ") + ex.what());
    }
  }
  a.set("recipe", r);
}

/// "1B tokens", "500M tokens", "2.5T tokens", "12,345 tokens": a token budget in words.
std::string budget_text(double tokens) {
  const std::pair<double, const char*> units[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}};
  for (const auto& [size, unit] : units)
    if (tokens >= size) return shortest(std::round(tokens / size * 1000) / 1000) + unit + " tokens";
  return with_commas(static_cast<int64_t>(std::llround(tokens))) + " tokens";
}

/// Hours in words: "3.2 h", or "51.0 h (2.1 days)" from two days on.
std::string hours_text(double h) {
  return fixed(h, 1) + " h" + (h >= 48 ? " (" + fixed(h / 24, 1) + " days)" : "");
}

/// The history of an entry's recipe (LeaderboardEntry::history): its chart and one table row per point, oldest
/// first, each with its date, commit, figure and whether measured or predicted.
void history_data(const LeaderboardEntry& e, mu::data& a) {
  if (e.history.empty()) return;
  std::vector<svg::HistoryMark> marks;
  mu::data rows{mu::data::type::list};
  size_t measured = 0;
  for (const HistoryPoint& p : e.history) {
    const bool predicted = p.kind == HistoryPoint::Kind::kPredicted;
    measured += predicted ? 0 : 1;
    const std::string commit = p.commit.empty() ? "commit unknown" : "commit " + short_commit(p.commit);
    const std::string kind = predicted ? "predicted" : "measured";
    marks.push_back({p.tokens_per_s_per_gpu, predicted, p.self, p.date.substr(0, 10),
                     p.date + " · " + commit + " · " + fixed(p.tokens_per_s_per_gpu, 1) + " tokens/s/GPU · " + kind +
                         " · " + p.id});
    mu::data row;
    row.set("date", p.date.size() > 16 ? p.date.substr(0, 16) + "Z" : p.date);
    row.set("commit", p.commit.empty() ? "—" : short_commit(p.commit));
    if (!p.commit.empty()) row.set("commit_full", p.commit);
    row.set("tps", fixed(p.tokens_per_s_per_gpu, 1));
    row.set("kind", kind);
    row.set("id", p.id);
    if (p.self) row.set("self", mu::data::type::bool_true);
    rows << row;
  }
  mu::data h;
  h.set("summary", counted(static_cast<int64_t>(e.history.size()), "point") + " of " + e.recipe_of + ": " +
                       std::to_string(measured) + " measured, " + std::to_string(e.history.size() - measured) +
                       " predicted");
  h.set("svg", svg::history_svg(marks, "history-" + e.id, "Tokens/s per GPU of " + e.recipe_of + " by date"));
  h.set("rows", rows);
  a.set("history", h);
}

/// The predictions of an entry's layout (PredictedEntry::measured_id), by entry id: its card links them.
using PredictionsOf = std::multimap<std::string, const PredictedEntry*>;

/// "Predicted" facts of a measured entry: each prediction of its layout, its figure and error, linking the
/// page's Predicted table (docs/report.md).
void prediction_facts(const LeaderboardEntry& e, const PredictionsOf& predicted, mu::data& facts) {
  const auto [from, to] = predicted.equal_range(e.id);
  for (auto it = from; it != to; ++it) {
    const PredictedEntry& p = *it->second;
    mu::data f = fact("Predicted", fixed(p.tokens_per_s_per_gpu, 1) + " tokens/s/GPU by " + p.file,
                      p.error() ? "error " + signed_pct(*p.error()) + ": predicted / measured - 1, this layout" : "");
    f.set("href_local", "#predicted");
    facts << f;
  }
}

mu::data article_data(const LeaderboardEntry& e, SeenBlocks& seen, const PredictionsOf& predicted) {
  mu::data a;
  a.set("id", e.id);
  a.set("rank", std::to_string(e.rank));
  a.set("tag", e.kind == "run" ? "run · " + e.backend : "recipe · " + e.status);
  if (e.details.contains("generated")) a.set("generated", mu::data::type::bool_true);
  a.set("tps", fixed(e.tokens_per_s_per_gpu, 1));
  a.set("layout_label", e.layout_label);
  if (!e.layout_highlights.empty()) a.set("layout_hl", e.layout_highlights);
  a.set("status", e.status);
  a.set("gpu_type", e.gpu_type);
  a.set("backend", e.backend.empty() ? "recipe" : e.backend);
  step_charts(e, a);
  mu::data facts = facts_of(e, seen);
  prediction_facts(e, predicted, facts);
  a.set("facts", facts);
  block_data(e, seen, a);
  history_data(e, a);
  recipe_block(e, a);
  return a;
}

/// A tiny line of tokens/s/GPU over an entry's runs (oldest left), for the fold's summary: inline SVG, 64 x 16 px,
/// the latest run a dot.
std::string sparkline_svg(const std::vector<double>& t) {
  const double lo = *std::min_element(t.begin(), t.end()), hi = *std::max_element(t.begin(), t.end());
  const auto x = [&t](size_t i) { return 2 + 60.0 * static_cast<double>(i) / static_cast<double>(t.size() - 1); };
  const auto y = [lo, hi](double v) { return hi > lo ? 14 - 12 * (v - lo) / (hi - lo) : 8.0; };
  std::string pts;
  for (size_t i = 0; i < t.size(); ++i) pts += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", x(i), y(t[i]));
  return fmt::format(
      "<svg class=\"spark\" width=\"64\" height=\"16\" viewBox=\"0 0 64 16\" aria-hidden=\"true\"><polyline "
      "points=\"{}\" fill=\"none\" stroke=\"#1f3b73\" stroke-width=\"1.5\"/><circle cx=\"{:.1f}\" cy=\"{:.1f}\" "
      "r=\"2.5\" fill=\"#1f3b73\"/></svg>",
      pts, x(t.size() - 1), y(t.back()));
}

/// The first `n` bytes of `s`, cut back to a UTF-8 character boundary.
std::string svg_cut(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}


/// The fold of an entry's earlier runs: a summary (how many, the sparkline, the change from the previous run) and
/// one line per earlier run, newest first (date, commit, tokens/s/GPU, change from it to the latest).
void earlier_runs_data(const LeaderboardEntry& e, mu::data& r) {
  if (e.earlier_runs.empty()) return;
  const std::vector<double> t = run_trend(e);
  mu::data fold;
  const size_t n = e.earlier_runs.size();
  fold.set("summary", std::to_string(n) + " earlier run" + (n == 1 ? "" : "s"));
  fold.set("spark_svg", sparkline_svg(t));
  fold.set("change", signed_pct(t.back() / t[t.size() - 2] - 1) + " vs previous, " +
                         signed_pct(t.back() / t.front() - 1) + " vs first");
  mu::data runs{mu::data::type::list};
  for (const EarlierRun& x : e.earlier_runs) {
    mu::data line;
    line.set("measured", x.started_at.empty() ? x.measured : x.started_at.substr(0, 16) + "Z");
    line.set("commit", short_commit(x.commit));
    line.set("commit_full", x.commit);
    line.set("tps", fixed(x.tokens_per_s_per_gpu, 1));
    line.set("file", x.file);
    std::string differ;
    for (const auto& [key, value] : x.settings_differ.items())
      differ += (differ.empty() ? "" : ", ") + key + " " + (value.is_string() ? value.get<std::string>() : value.dump());
    if (!differ.empty()) {
      line.set("differ_full", "settings that differ from the latest run: " + differ);
      line.set("differ", differ.size() > 48 ? svg_cut(differ, 47) + "…" : differ);
    }
    runs << line;
  }
  fold.set("runs", runs);
  if (const std::optional<RunSpread> sp = run_spread(e))
    fold.set("spread", "median " + fixed(sp->median, 1) + " over " + std::to_string(sp->runs) + " runs, CV " +
                           fixed(sp->cv_percent, 2) + "%");
  r.set("fold", fold);
}

mu::data row_data(const LeaderboardEntry& e) {
  mu::data r;
  r.set("id", e.id);
  r.set("rank", std::to_string(e.rank));
  r.set("tps", fixed(e.tokens_per_s_per_gpu, 1));
  r.set("tps_raw", shortest(e.tokens_per_s_per_gpu));
  r.set("usd", e.usd_per_million_tokens ? "$" + fixed(*e.usd_per_million_tokens, 2) : "—");
  r.set("usd_raw", raw(e.usd_per_million_tokens));
  r.set("gpus", std::to_string(e.gpus));
  r.set("layout_label", e.layout_label);
  if (!e.layout_highlights.empty()) r.set("layout_hl", e.layout_highlights);
  r.set("mfu", e.mfu ? pct(*e.mfu, 1) : "—");
  r.set("mfu_raw", raw(e.mfu));
  r.set("cv", e.step_time_cv_percent ? fixed(*e.step_time_cv_percent, 2) + "%" : "—");
  r.set("cv_raw", raw(e.step_time_cv_percent));
  r.set("measured", e.measured);
  r.set("commit", e.commit.empty() ? "—" : short_commit(e.commit));
  if (!e.commit.empty()) r.set("commit_full", e.commit);
  r.set("author", e.author);
  r.set("status", e.status);
  r.set("gpu_type", e.gpu_type);
  r.set("backend", e.backend.empty() ? "recipe" : e.backend);
  if (e.details.contains("generated")) r.set("generated", mu::data::type::bool_true);
  earlier_runs_data(e, r);
  return r;
}

/// The no-script comparison of a group's #1 and #2 (compare_entries, as `recipebench compare` prints it).
mu::data comparison_data(const Comparison& c) {
  mu::data d;
  d.set("a_id", c.a_id);
  d.set("b_id", c.b_id);
  d.set("differences", std::to_string(c.differences()));
  d.set("field_count", std::to_string(c.fields.size()));
  mu::data figures{mu::data::type::list}, fields{mu::data::type::list};
  for (const auto& g : c.figures) {
    mu::data f;
    f.set("label", g.label);
    f.set("a", format_figure(g.key, g.a));
    f.set("b", format_figure(g.key, g.b));
    f.set("ratio", g.ratio ? approx(*g.ratio) : "—");
    figures << f;
  }
  for (const auto& x : c.fields) {
    mu::data f;
    f.set("section", x.section);
    f.set("name", x.name);
    f.set("a", x.a);
    f.set("b", x.b);
    if (x.differs) f.set("differs", mu::data::type::bool_true);
    fields << f;
  }
  d.set("figures", figures);
  d.set("fields", fields);
  return d;
}

/// The group's bars: the layout label, and under it what tells entries of one label apart (distinguishing_text).
/// Only the bars drawn (svg::layout_bars' 25) are described.
std::vector<svg::Bar> bars_of(const LeaderboardGroup& g) {
  const size_t drawn = std::min<size_t>(g.entries.size(), 25);
  const std::vector<LeaderboardEntry> top(g.entries.begin(), g.entries.begin() + static_cast<std::ptrdiff_t>(drawn));
  const std::vector<std::string> detail = distinguishing_text(top);
  std::vector<svg::Bar> bars;
  for (size_t i = 0; i < g.entries.size(); ++i) {
    const LeaderboardEntry& e = g.entries[i];
    bars.push_back({e.id, e.layout_label, e.rank, e.tokens_per_s_per_gpu, i < drawn ? detail[i] : ""});
  }
  return bars;
}

/// The article template, parsed once.
mu::mustache& article_template() {
  static mu::mustache tmpl{kArticleTemplate};
  if (!tmpl.is_valid()) throw std::logic_error("leaderboard article template: " + tmpl.error_message());
  return tmpl;
}

/// The group template, parsed once.
mu::mustache& group_template() {
  static mu::mustache tmpl{kGroupTemplate};
  if (!tmpl.is_valid()) throw std::logic_error("leaderboard group template: " + tmpl.error_message());
  return tmpl;
}

/// `tmpl` rendered with `data`, appended to `out` piece by piece (no second copy of a big section).
void render_into(mu::mustache& tmpl, const mu::data& data, std::string& out) {
  tmpl.render(data, [&out](const std::string& piece) { out += piece; });
}

/// Where the groups' sections go in the rendered page: a comment no input can produce (every input is escaped).
constexpr const char* kGroupsMark = "<!--recipebench:groups-->";

/// The subtitle's rows, as the seed page says them: "8,192-token rows of SFT conversations", "4,096-token synthetic
/// learnable rows (seeded), 67.6% of tokens supervised", "4,096-token rows of uniform random token ids, every token a
/// loss target"; one level of brackets at most.
std::string group_rows_text(const LeaderboardGroup& g) {
  const std::string tokens = with_commas(g.row_tokens) + "-token";
  if (g.rows_kind == "real") {
    std::set<std::string> said;
    for (const LeaderboardEntry& e : g.entries) said.insert(e.rows);
    if (said.size() == 1 && !said.begin()->empty()) return tokens + " rows of " + *said.begin();
    return tokens + " real rows" + (said.size() > 1 ? " (each entry names its own)" : "");
  }
  if (g.rows_kind == "uniform_random") return tokens + " rows of " + g.rows;  // "uniform random token ids, ..."
  return tokens + " " + g.rows;
}

/// Which optional columns a group's table shows: $ / 1M tokens, MFU, step-time CV, commit and earlier runs, each
/// only when some entry of the group has it (a column of "—" in every row says nothing; docs/report.md).
void set_shown_columns(const LeaderboardGroup& g, mu::data& gd) {
  const auto any = [&g](auto has) { return std::any_of(g.entries.begin(), g.entries.end(), has); };
  const std::pair<const char*, bool> shown[] = {
      {"show_usd", any([](const LeaderboardEntry& e) { return e.usd_per_million_tokens.has_value(); })},
      {"show_mfu", any([](const LeaderboardEntry& e) { return e.mfu.has_value(); })},
      {"show_cv", any([](const LeaderboardEntry& e) { return e.step_time_cv_percent.has_value(); })},
      {"show_commit", any([](const LeaderboardEntry& e) { return !e.commit.empty(); })},
      {"show_runs", any([](const LeaderboardEntry& e) { return !e.earlier_runs.empty(); })}};
  for (const auto& [key, on] : shown) gd.set(key, on ? mu::data::type::bool_true : mu::data::type::bool_false);
}

/// The group's Pareto view (pareto_view): $ / 1M tokens against hours to train the budget, its front marked.
void pareto_data(const LeaderboardGroup& g, double budget, mu::data& gd) {
  const std::vector<ParetoPoint> view = pareto_view(g, budget);
  if (view.empty()) return;
  std::vector<svg::ParetoMark> marks;
  for (const ParetoPoint& p : view)
    marks.push_back({p.id, p.label, p.rank, p.hours, p.usd_per_million_tokens, p.run, p.on_front,
                     // Short: one per entry (a board of 1,000 stays small); the view's text says the rest.
                     "#" + std::to_string(p.rank) + ", " + std::to_string(p.gpus) + " GPUs: " + hours_text(p.hours) +
                         ", $" + fixed(p.usd_per_million_tokens, 2) + "/1M ($" +
                         with_commas(static_cast<int64_t>(std::llround(p.usd_for_budget))) + ")" +
                         (p.on_front ? ", front" : "")});
  gd.set("pareto_svg", svg::pareto_svg(marks, "pareto-" + g.id,
                                       "$ per 1M tokens against hours to train " + budget_text(budget) + ": " +
                                           g.model + " on " + g.gpu_type,
                                       "hours to train " + budget_text(budget) + " (computed)"));
}

/// The group's best entry at each GPU count (best_by_gpu_count), when it has several counts.
void gpu_count_data(const LeaderboardGroup& g, double budget, mu::data& gd) {
  const std::vector<GpuCountBest> best = best_by_gpu_count(g);
  if (best.empty()) return;
  mu::data rows{mu::data::type::list};
  for (const GpuCountBest& b : best) {
    const LeaderboardEntry& e = g.entries[b.best];
    mu::data r;
    r.set("gpus", std::to_string(b.gpus));
    r.set("entries", std::to_string(b.entries));
    r.set("id", e.id);
    r.set("rank", std::to_string(e.rank));
    r.set("layout_label", e.layout_label);
    if (!e.layout_highlights.empty()) r.set("layout_hl", e.layout_highlights);
    r.set("tps", fixed(e.tokens_per_s_per_gpu, 1));
    r.set("usd", e.usd_per_million_tokens ? "$" + fixed(*e.usd_per_million_tokens, 2) : "—");
    r.set("hours", e.tokens_per_s_per_gpu > 0 && e.gpus > 0
                       ? hours_text(hours_to_train(budget, e.tokens_per_s_per_gpu, e.gpus))
                       : "—");
    rows << r;
  }
  gd.set("gpu_counts", rows);
  gd.set("budget", budget_text(budget));
}

/// How the page shows a group: `collapsed` (a board of more than kOpenEntries entries: every group but the first
/// folded under its heading, so its table, charts and cards are laid out only when opened).
constexpr size_t kOpenEntries = 100;

mu::data group_data(const LeaderboardGroup& g, const PredictionsOf& predicted, double budget) {
  mu::data gd;
  gd.set("id", g.id);
  gd.set("model", g.model);
  gd.set("title", g.title);
  size_t runs = 0;
  for (const auto& e : g.entries) runs += e.earlier_runs.size();
  gd.set("entry_count", std::to_string(g.entries.size()) + (g.entries.size() == 1 ? " entry" : " entries") +
                            (runs ? " (and " + std::to_string(runs) + " earlier run" + (runs == 1 ? ")" : "s)") : ""));
  gd.set("best", fixed(g.entries.front().tokens_per_s_per_gpu, 1));
  gd.set("gpu_type", g.gpu_type);
  gd.set("rows_text", group_rows_text(g));
  gd.set("global_batch", std::to_string(g.global_batch));
  gd.set("precision", ascii_upper(g.precision));
  gd.set("bar_svg",
         svg::bar_chart_svg(bars_of(g), "bars-" + g.id, "Tokens/s per GPU by rank: " + g.model + " on " + g.gpu_type));
  std::vector<svg::ScatterPoint> pts;
  for (const auto& e : g.entries)
    if (e.usd_per_million_tokens)
      pts.push_back({e.id, e.layout_label, e.rank, e.tokens_per_s_per_gpu, *e.usd_per_million_tokens, e.kind == "run"});
  if (!pts.empty())
    gd.set("scatter_svg",
           svg::scatter_svg(pts, "cost-" + g.id,
                            "$ per 1M tokens against tokens/s per GPU: " + g.model + " on " + g.gpu_type));
  pareto_data(g, budget, gd);
  gpu_count_data(g, budget, gd);
  mu::data rows{mu::data::type::list};
  std::string articles;
  SeenBlocks seen;
  for (const auto& e : g.entries) {
    rows << row_data(e);
    render_into(article_template(), article_data(e, seen, predicted), articles);  // one entry's data at a time
  }
  gd.set("rows", rows);
  set_shown_columns(g, gd);
  gd.set("articles_html", articles);
  gd.set("entries_word", g.entries.size() == 1 ? "Entry" : "Entries");
  if (g.entries.size() >= 2) gd.set("default_compare", comparison_data(compare_entries(g.entries[0], g.entries[1])));
  return gd;
}

/// Compact JSON text of `v` (invalid UTF-8 replaced).
std::string dump(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

/// The fields and figures of every entry for the page's comparison script, with keys and values stored once:
/// {"keys": [[section, name, markable]], "values": [text], "figures": [label],
///  "entries": {id: {"v": [value index of key 0, of key 1, ...; -1 for none], "shown": [text], "raw": [number|null]}}}.
/// Written by parts (the entries' object as text): one lookup per entry would be linear in the entries already
/// there (Json's objects keep insertion order in a vector), quadratic in all.
std::string compare_json(const Leaderboard& board) {
  Json keys = Json::array(), values = Json::array(), figures = Json::array();
  std::map<std::pair<std::string, std::string>, size_t> key_index;
  std::unordered_map<std::string, size_t> value_index;
  std::string entries = "{";
  for (const auto& g : board.groups)
    for (const auto& e : g.entries) {
      Json shown = Json::array(), rawv = Json::array();
      std::vector<int64_t> by_key;  // the value index of each key, -1 where the entry has no such field
      for (const EntryField& f : entry_fields(e)) {
        auto k = key_index.emplace(std::make_pair(f.section, f.name), keys.size());
        if (k.second)
          keys.push_back(Json::array({f.section, f.name, f.section == "source" && f.name == "file" ? 0 : 1}));
        auto v = value_index.emplace(f.value, values.size());
        if (v.second) values.push_back(f.value);
        if (by_key.size() <= k.first->second) by_key.resize(k.first->second + 1, -1);
        by_key[k.first->second] = static_cast<int64_t>(v.first->second);
      }
      const std::vector<EntryFigure> figs = entry_figures(e);
      for (const EntryFigure& f : figs) {
        if (figures.size() < figs.size()) figures.push_back(f.label);
        shown.push_back(format_figure(f.key, f.value));
        // Seven significant digits: the page's ratios show two decimals (a board of 1,000 stays small).
        rawv.push_back(f.value ? Json(std::stod(fmt::format("{:.7g}", *f.value))) : Json(nullptr));
      }
      if (entries.size() > 1) entries += ',';
      entries += dump(Json(e.id)) + ':' + dump(Json{{"v", by_key}, {"shown", shown}, {"raw", rawv}});
    }
  entries += '}';
  return script_text("{\"keys\":" + dump(keys) + ",\"values\":" + dump(values) + ",\"figures\":" + dump(figures) +
                     ",\"entries\":" + entries + "}");
}

mu::data string_list(const std::set<std::string>& items) {
  mu::data l{mu::data::type::list};
  for (const auto& s : items) l << mu::data(s);
  return l;
}

/// The page's "not ranked" list (has_unranked, unranked), when there is one.
void set_unranked(const Leaderboard& board, mu::data& page) {
  if (board.unranked.empty()) return;
  page.set("has_unranked", mu::data::type::bool_true);
  mu::data unranked{mu::data::type::list};
  for (const auto& u : board.unranked) unranked << mu::data(u);
  page.set("unranked", unranked);
}

/// One row of the "Predicted, not measured" table.
mu::data prediction_row(const PredictedEntry& p) {
  mu::data row;
  row.set("file", p.file);
  row.set("model", p.model);
  row.set("cluster", fmt::format("{} x {}", p.gpus, p.gpu_type));
  row.set("layout", p.layout_label);
  row.set("tokens", fixed(p.tokens_per_s_per_gpu, 1));
  row.set("step", fmt::format("{:.2f}", p.step_seconds));
  row.set("mfu", p.mfu ? fmt::format("{:.1f}%", *p.mfu * 100) : "-");
  row.set("usd", p.usd_per_million_tokens ? fmt::format("{:.2f}", *p.usd_per_million_tokens) : "-");
  row.set("measured", p.measured_tokens_per_s_per_gpu ? fixed(*p.measured_tokens_per_s_per_gpu, 1) : "-");
  row.set("error", p.error() ? fmt::format("{:+.1f}%", *p.error() * 100) : "-");
  if (!p.measured_id.empty() && p.measured_file != p.file) row.set("measured_id", p.measured_id);
  if (!p.measured_file.empty() && p.measured_file != p.file) {
    std::string of = "measured: " + p.measured_file;
    for (const std::string& d : p.measured_differences) of += "; differs in " + d;
    row.set("measured_of", of);
  }
  row.set("predicted", p.predicted);
  row.set("profiles", std::to_string(p.profiles.size()));
  return row;
}

/// The page's "Predicted, not measured" table (has_predictions, predictions), when there are predictions.
void set_predictions(const Leaderboard& board, mu::data& page) {
  if (board.predictions.empty()) return;
  page.set("has_predictions", mu::data::type::bool_true);
  mu::data rows{mu::data::type::list};
  for (const PredictedEntry& p : board.predictions) rows << prediction_row(p);
  page.set("predictions", rows);
}

/// The page's banner of generated test data (`generated`), when any entry's recipe has the field; returns the number
/// of entries.
size_t set_generated(const Leaderboard& board, mu::data& page) {
  size_t total = 0, generated = 0;
  for (const auto& g : board.groups)
    for (const auto& e : g.entries) {
      ++total;
      generated += e.details.contains("generated") ? 1 : 0;
    }
  if (generated > 0)
    page.set("generated", std::to_string(generated) + " of " + std::to_string(total) +
                              (total == 1 ? " entry is" : " entries are") +
                              " generated test data (the recipes' generated field), not measurements");
  return total;
}

}  // namespace

std::string leaderboard_to_html(const Leaderboard& board) {
  mu::data page;
  page.set("css", kLeaderboardCss);
  page.set("script", kLeaderboardScript);
  page.set("csp", "default-src 'none'; style-src " + csp_hash_source(kLeaderboardCss) + "; script-src " +
                      csp_hash_source(kLeaderboardScript) + "; img-src data:; base-uri 'none'; form-action 'none'");
  if (board.context.contains("generated_at")) page.set("generated_at", text(board.context["generated_at"]));
  if (board.context.contains("recipebench_version"))
    page.set("recipebench_version", text(board.context["recipebench_version"]));
  std::set<std::string> statuses, gpu_types, backends;
  PredictionsOf predicted;
  for (const PredictedEntry& p : board.predictions)
    if (!p.measured_id.empty() && p.measured_file != p.file) predicted.emplace(p.measured_id, &p);
  const size_t total = set_generated(board, page);
  mu::data index{mu::data::type::list};
  std::string groups;  // each group rendered on its own: its template data is freed before the next is made
  for (const auto& g : board.groups) {
    for (const auto& e : g.entries) {
      if (e.kind == "recipe") page.set("has_copies", mu::data::type::bool_true);
      statuses.insert(e.status);
      gpu_types.insert(e.gpu_type);
      backends.insert(e.backend.empty() ? "recipe" : e.backend);
    }
    mu::data gd = group_data(g, predicted, board.token_budget);
    if (total > kOpenEntries) {
      gd.set("collapsible", mu::data::type::bool_true);
      if (&g == &board.groups.front()) gd.set("open", mu::data::type::bool_true);
    }
    mu::data line;
    for (const char* key : {"id", "title", "entry_count", "best"}) line.set(key, *gd.get(key));
    index << line;
    render_into(group_template(), gd, groups);
  }
  page.set("index", index);
  page.set("groups_html", kGroupsMark);  // spliced in after rendering: the page's data never copies the groups
  if (!board.groups.empty()) page.set("has_groups", mu::data::type::bool_true);
  if (board.groups.size() > 1) page.set("has_index", mu::data::type::bool_true);
  page.set("statuses", string_list(statuses));
  page.set("gpu_types", string_list(gpu_types));
  page.set("backends", string_list(backends));
  set_unranked(board, page);
  set_predictions(board, page);
  page.set("compare_json", compare_json(board));
  mu::mustache tmpl{kLeaderboardTemplate};
  if (!tmpl.is_valid()) throw std::logic_error("leaderboard page template: " + tmpl.error_message());
  const std::string frame = tmpl.render(page);
  const size_t at = frame.find(kGroupsMark);
  if (at == std::string::npos) throw std::logic_error("leaderboard page template: no place for the groups");
  std::string out;
  out.reserve(frame.size() + groups.size());
  out.append(frame, 0, at).append(groups).append(frame, at + std::string(kGroupsMark).size(), std::string::npos);
  return out;
}

}  // namespace recipebench
