#include "report/leaderboard.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "metrics/derive.h"
#include "metrics/metrics.h"
#include "record/run_record.h"
#include "report/board_views.h"
#include "recipe/result_check.h"
#include "recipe/run_model.h"
#include "settings/run_options.h"
#include "util/format.h"

namespace recipebench {

namespace {

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

Json details_of(const Recipe& r) {
  Json d = Json::object();
  for (const char* key : {"stack", "env", "patches", "run", "correctness", "notes", "repository", "generated"})
    if (r.doc.contains(key) && !r.doc[key].is_null()) d[key] = r.doc[key];
  if (r.doc["workload"].contains("dataset")) d["dataset"] = r.doc["workload"]["dataset"];
  if (r.doc.contains("result") && r.doc["result"].is_object()) {
    const Json& res = r.doc["result"];
    for (const char* key : {"mfu_note", "gpu_hours_note", "runs", "profiler", "steps_per_run", "window"})
      if (res.contains(key) && !res[key].is_null()) d["result_" + std::string(key)] = res[key];
    if (r.result) d["result_window_tokens"] = r.result->window_tokens;  // as stated, else derived (recipe.h)
    if (res.contains("active_params")) d["active_params"] = res["active_params"];
  }
  return d;
}

/// The kind of rows of an entry (LeaderboardEntry::rows_kind, rows_label, rows_text).
struct Rows {
  std::string kind, label, text;
};

Rows synthetic_rows(double supervised) {
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f%%", 100 * supervised);
  return {"synthetic", std::string("synthetic rows, ") + pct + " supervised",
          std::string("synthetic learnable rows (seeded), ") + pct + " of tokens supervised"};
}

Rows uniform_random_rows() {
  return {"uniform_random", "uniform random rows", "uniform random token ids, every token a loss target"};
}

/// Real rows; `detail` (the recipe's workload.rows, a rows file) in brackets after them.
Rows real_rows(const std::string& detail) {
  return {"real", "real rows", "real rows" + (detail.empty() ? std::string() : " (" + detail + ")")};
}

/// The rows of figures measured by the recipe's own stack (a recipe's result, a command or import record): a
/// workload.dataset or bench.data.source file is real rows; workload.rows saying "uniform random" or "random token"
/// uniform random ids (the peer's); saying "synthetic", or bench.data.source synthetic, recipebench's synthetic rows
/// at bench.data.supervised_token_ratio (its default when absent); anything else real rows ("SFT conversations").
Rows recipe_rows(const Recipe& r) {
  const Json& w = r.doc.contains("workload") ? r.doc["workload"] : Json::object();
  if ((w.is_object() && w.contains("dataset") && !w["dataset"].is_null()) || r.bench.data.source == DataSource::kFile)
    return real_rows(r.workload.rows);
  const std::string said = ascii_lower(r.workload.rows);
  if (said.find("uniform random") != std::string::npos || said.find("random token") != std::string::npos)
    return uniform_random_rows();
  if (said.find("synthetic") != std::string::npos || r.bench.data.source == DataSource::kSynthetic)
    return synthetic_rows(r.bench.data.supervised_token_ratio.value_or(RunData{}.supervised_token_ratio));
  return real_rows(r.workload.rows);
}

/// The rows a run record's figures were measured on: recipebench's own backend trained settings.data (synthetic
/// rows at their supervised fraction, or a rows file); a command's or an imported log's stack its own (the recipe's).
Rows run_rows(const RunRecord& rec, const Recipe& r) {
  if (!rec.log.is_null()) return recipe_rows(r);
  const RunData& d = rec.options.settings.data;
  if (d.source == DataSource::kFile) return real_rows("rows file " + std::filesystem::path(d.path).filename().string());
  return synthetic_rows(d.supervised_token_ratio);
}

void set_rows(LeaderboardEntry& e, const Rows& rows) {
  e.rows_kind = rows.kind;
  e.rows_label = rows.label;
  e.rows_text = rows.text;
}

/// Fields an entry takes from its recipe (for run records: the recipe the run executed).
LeaderboardEntry entry_from_recipe(const Recipe& r) {
  LeaderboardEntry e;
  e.model = r.model;
  e.gpu_type = r.gpu.type;
  e.instance = r.gpu.instance;
  e.gpus = r.gpu.count;
  e.gpus_per_node = r.gpu.per_node;
  e.gpu_memory_gb = r.gpu.memory_gb;
  e.row_tokens = r.workload.row_tokens;
  e.global_batch = r.workload.global_batch;
  e.precision = r.workload.precision;
  e.rows = r.workload.rows;
  e.layout_label = r.layout.label;
  e.layout_highlights = r.layout.highlights;
  e.layout_summary = r.layout.summary;
  e.author = r.author;
  e.author_url = r.author_url;
  e.status = r.status;
  e.details = details_of(r);
  e.layout = r.doc.value("layout", Json::object());
  return e;
}

/// The entry's price (the command line's, else the recipe's), or nullopt with the reason in price_source.
std::optional<double> entry_price(LeaderboardEntry& e, const Recipe& r, const ReportOptions& options) {
  if (options.usd_per_gpu_hour) {
    e.usd_per_gpu_hour = *options.usd_per_gpu_hour;
    e.price_source = "command line (--usd-per-gpu-hour)";
  } else if (auto price = recipe_price(r)) {
    e.usd_per_gpu_hour = price->usd_per_gpu_hour;
    e.price_source = price->source;
  } else {
    e.price_source = "no price for " + r.gpu.type + " (give gpu.usd_per_gpu_hour or --usd-per-gpu-hour)";
    return std::nullopt;
  }
  return e.usd_per_gpu_hour;
}

/// MFU and $ / 1M tokens of an entry from its tokens/s/GPU (derive_figures). `active_params`: N of the model
/// that ran (0 = unknown: no MFU); `peak_flops`: 0 = the catalog's figure for the recipe's GPU type.
void derive_entry(LeaderboardEntry& e, const Recipe& r, const ReportOptions& options, int64_t active_params,
                  double peak_flops) {
  FigureInputs in;
  in.gpus = std::max(1, e.gpus);
  in.usd_per_gpu_hour = entry_price(e, r, options);
  if (peak_flops <= 0)
    if (const GpuSpec* gpu = find_gpu(r.gpu.type)) peak_flops = gpu->peak_bf16_flops;
  if (active_params > 0 && peak_flops > 0) {
    e.active_params = active_params;
    e.peak_flops = peak_flops;
    in.active_params = active_params;
    in.peak_flops = peak_flops;
  }
  const DerivedFigures f = derive_figures(Throughput::reported(e.tokens_per_s_per_gpu), in);
  e.mfu = f.mfu;
  e.usd_per_million_tokens = f.usd_per_million_tokens;
}

/// The layers an entry's figures come from: a recipe's bench.layers (a proxy run), else its model's.
void set_recipe_layers(LeaderboardEntry& e, const Recipe& r) {
  const std::optional<RunModel> m = run_model(r);
  e.layers_full = m ? m->full.num_layers : 0;
  e.layers = m ? m->model.num_layers : r.bench.layers.value_or(0);
}

/// "proxy: 4 of 40 layers" first in a proxy run's highlights (replacing "4 of 40 layers" if the recipe says it).
void mark_proxy(LeaderboardEntry& e) {
  const std::string layers = std::to_string(e.layers) + " of " + counted(e.layers_full, "layer");
  if (e.layout_highlights.find(layers) != std::string::npos)  // the recipe already says it
    e.layout_highlights.replace(e.layout_highlights.find(layers), layers.size(), "proxy: " + layers);
  else
    e.layout_highlights = "proxy: " + layers + (e.layout_highlights.empty() ? "" : ", " + e.layout_highlights);
}

/// Step times and losses of a run record's `steps`, and its timed window (`metrics.window`).
StepSeries step_series(const RunRecord& rec) {
  StepSeries s;
  for (const StepSample& st : rec.steps) {
    s.seconds.push_back(st.seconds);
    s.loss.push_back(st.loss);
  }
  s.window_first = rec.options.settings.window.first;
  s.window_last = rec.options.settings.window.last;
  return s;
}

/// The backend column: the backend, and for figures parsed from a log the stack's log format and how it came
/// ("command · megatron", "import · hf", "command · regex").
std::string backend_label(const RunRecord& rec) {
  if (!rec.log.is_object()) return rec.options.settings.backend;
  std::string parser = rec.log.value("parser", std::string("?"));
  parser = parser.substr(0, parser.find(':'));
  return (rec.log.value("source", std::string()) == "import" ? std::string("import") : rec.options.settings.backend) +
         " · " + parser;
}

/// When a run's figures were measured: the date its log's steps printed (log.printed_at), else for an imported log
/// the import's date marked so (the log carries no time), else the run's finish.
std::string measured_date(const RunRecord& rec) {
  const std::string finished = rec.finished_at.substr(0, 10);
  if (!rec.log.is_object()) return finished;
  const Json& at = rec.log.value("printed_at", Json());
  if (at.is_object() && at.contains("last") && at["last"].is_string()) return at["last"].get<std::string>().substr(0, 10);
  if (rec.log.value("source", std::string()) == "import") return finished + " (import date: the log prints no time)";
  return finished;
}

/// The members of a run's settings (RunOptions::to_json) that say what was measured: the backend, steps, window,
/// layers, device, ranks, rows, --profile, an emulated rank and test hooks. The others (seed, the switches, the
/// distributed timeout, a command's log format and timeout) say how this version of recipebench ran it: runs that
/// differ only in them are repeats of one measurement (docs/reports.md, "Repeated runs"); the kernels and
/// determinism, which change the speed, are in the backend label.
Json what_is_measured(const Json& settings) {
  Json out = Json::object();
  for (const char* key : {"backend", "steps", "window", "layers", "device", "ranks", "data", "profile", "emulate_rank",
                          "emulated_stage_layers", "hooks"})
    if (settings.contains(key)) out[key] = settings[key];
  return out;
}

/// Where a run's recipe file is now: its recorded recipe_path as given (relative to where `report` runs), else
/// beside the run record; set on `e` when its bytes have the recorded sha256 (the recipe the run was made from),
/// else recipe_unavailable says why (LeaderboardEntry::recipe_file).
void find_run_recipe(LeaderboardEntry& e, const RunRecord& rec, const std::string& record_file) {
  namespace fs = std::filesystem;
  const fs::path given(rec.recipe_path);
  std::vector<fs::path> where{given};
  if (given.is_relative()) where.push_back(fs::path(record_file).parent_path() / given);
  for (const fs::path& p : where) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    try {
      if (sha256_file(p.string()) == rec.recipe_sha256) {
        e.recipe_file = p.string();
        return;
      }
      e.recipe_unavailable = "not shown: " + p.string() + " has changed since the run (its sha256 is not the "
                             "recorded " + rec.recipe_sha256.substr(0, 12) + "...)";
      return;
    } catch (const std::exception&) {
      continue;  // unreadable: the next place, else the reason below
    }
  }
  e.recipe_unavailable = "not shown: " + rec.recipe_path + " is not here (looked where report runs and beside the "
                         "run record); the run record holds the recipe as validated";
}

/// A checked, complete run record as an entry: its recipe's facts, the record's measured figures (re-derived
/// from its steps by check_run_record), priced and MFU'd for GPU runs only.
LeaderboardEntry entry_from_run(const RunRecordInput& in, const ReportOptions& options) {
  const RunRecord& rec = in.record;
  const RunMetrics& m = *rec.metrics;
  const Recipe r = recipe_from_json(rec.recipe, rec.recipe_path);
  LeaderboardEntry e = entry_from_recipe(r);
  e.id = slug(std::filesystem::path(in.file).stem().string());
  e.kind = "run";
  e.file = in.file;
  e.backend = backend_label(rec);
  if (rec.log.is_null()) {  // a log-timed run (a per-node backend)'s command has its own kernels and determinism
    e.deterministic = rec.options.settings.deterministic;
    if (!rec.options.settings.deterministic) e.backend += " · non-deterministic";
    if (rec.options.settings.kernels == Kernels::kOps) e.backend += " · libtorch ops";  // bench.kernels: ops (slower)
  }
  e.status = "measured";
  set_rows(e, run_rows(rec, r));
  e.layers = rec.model_layers;
  e.layers_full = rec.model_layers_full;
  e.tokens_per_s_per_gpu = m.window.tokens_per_s_per_gpu;
  e.step_time_cv_percent = m.window.step_time_cv_percent;
  e.gpu_hours = m.gpu_hours;
  e.measured = measured_date(rec);
  e.gpus = rec.device_count();
  e.hardware = std::to_string(e.gpus) + " x " + rec.device_name();
  if (rec.options.settings.device == Device::kCuda) {
    // N and peak FLOP/s as the run recorded them: the model that ran (its layers, its --model-config widths).
    derive_entry(e, r, options, m.active_params, m.peak_flops);
  } else {
    e.price_source = "not priced: a CPU run";
  }
  if (e.layers != e.layers_full) mark_proxy(e);
  e.details["measurement"] = Json{{"backend", e.backend},
                                  {"hardware", e.hardware},
                                  {"settings", rec.options.to_json(rec.log.is_null())},
                                  {"environment", rec.environment.to_json()},
                                  {"window_seconds", m.window.seconds},
                                  {"mean_step_seconds", m.window.mean_step_seconds},
                                  {"peak_memory_bytes", m.peak_memory_bytes},
                                  {"final_loss", rec.steps.empty() ? Json(nullptr) : Json(rec.steps.back().loss)}};
  if (!rec.log.is_null()) e.details["measurement"]["log"] = rec.log;
  e.details.erase("correctness");
  e.steps = step_series(rec);
  // Who recorded it, apart from what trained: a command's or an imported log's run was trained by the recipe's
  // stack, at the commit that stack names; recipebench only ran or parsed it (docs/report.md, "Provenance").
  e.recorded_by =
      "recipebench " + rec.environment.recipebench_version + " (" + rec.environment.recipebench_commit + ")";
  e.commit = rec.log.is_null() ? rec.environment.recipebench_commit
                               : stack_commit(rec.recipe.value("stack", Json::object()));
  e.started_at = rec.started_at;
  e.recipe_of = rec.recipe_path;
  find_run_recipe(e, rec, in.file);
  e.repeat_key = rec.recipe_path + '\n' + e.backend + '\n' + what_is_measured(e.details["measurement"]["settings"]).dump();
  return e;
}

}  // namespace

std::vector<double> run_trend(const LeaderboardEntry& e) {
  std::vector<double> t;
  for (auto it = e.earlier_runs.rbegin(); it != e.earlier_runs.rend(); ++it) t.push_back(it->tokens_per_s_per_gpu);
  t.push_back(e.tokens_per_s_per_gpu);
  return t;
}

std::string short_commit(const std::string& commit) {
  const bool hex = commit.size() >= 7 && commit.find_first_not_of("0123456789abcdef") == std::string::npos;
  return hex ? commit.substr(0, 7) : commit;
}

std::optional<RunSpread> run_spread(const LeaderboardEntry& e) {
  if (e.earlier_runs.empty()) return std::nullopt;
  std::vector<double> t = run_trend(e);
  RunSpread s;
  s.runs = t.size();
  double mean = 0;
  for (double v : t) mean += v / static_cast<double>(t.size());
  double ss = 0;
  for (double v : t) ss += (v - mean) * (v - mean);
  s.cv_percent = mean > 0 ? 100 * std::sqrt(ss / static_cast<double>(t.size() - 1)) / mean : 0;
  std::sort(t.begin(), t.end());
  const size_t h = t.size() / 2;
  s.median = t.size() % 2 ? t[h] : (t[h - 1] + t[h]) / 2;
  return s;
}

std::string stack_commit(const Json& stack) {
  if (!stack.is_object()) return "";
  if (stack.contains("commit") && stack["commit"].is_string()) return stack["commit"].get<std::string>();
  static const std::regex word("(?:^|[^A-Za-z])commit ([0-9a-f]{7,40})(?![0-9a-zA-Z])");
  for (const auto& [key, value] : stack.items()) {
    std::smatch m;
    if (value.is_string() && std::regex_search(value.get_ref<const std::string&>(), m, word)) return m[1].str();
  }
  return "";
}

std::string window_text(const LeaderboardEntry& e) {
  const StepSeries& s = e.steps;
  if (s.window_last < s.window_first) return "";
  return "steps " + std::to_string(s.window_first) + ".." + std::to_string(s.window_last);
}

std::string recipe_copy_path(const LeaderboardEntry& e) {
  return e.recipe_file.empty() ? "" : "leaderboard-recipes/" + e.id + ".yaml.txt";
}

bool optimised_build(const std::string& build_type) {
  return build_type == "Release" || build_type == "RelWithDebInfo";
}

std::string unranked_reason(const RunRecord& rec) {
  if (rec.status == RunStatus::kEmulated)
    return "not ranked: an emulated rank (rank " +
           (rec.options.settings.emulate_rank ? std::to_string(*rec.options.settings.emulate_rank) : "?") +
           " alone, its collectives stood in; docs/emulation.md): one rank's compute, not a measurement of the layout";
  if (!rec.complete() || !rec.metrics) {
    std::string why = "run " + to_string(rec.status);
    if (rec.error && !rec.error->message.empty()) why += ": " + rec.error->message;
    return why;
  }
  if (rec.options.settings.profile)
    return "not ranked: a --profile run (the device synchronises between forward, backward and optimizer, which "
           "slows every step)";
  // Figures parsed from a log were timed by the stack that ran, not by this build of recipebench.
  if (rec.log.is_null() && !optimised_build(rec.build_type()))
    return "not ranked: " +
           (rec.build_type().empty() ? std::string("the build type is not recorded")
                                     : "a " + rec.build_type() + " build") +
           " (only optimised builds are ranked: CMake Release or RelWithDebInfo)";
  return "";
}

namespace {

/// A recipe's entry: the figures it reports, MFU and $ derived from them.
LeaderboardEntry entry_of_recipe(const Recipe& r, const ReportOptions& options) {
  const RecipeResult& res = *r.result;
  LeaderboardEntry e = entry_from_recipe(r);
  e.id = slug(std::filesystem::path(r.file).stem().string());
  e.kind = "recipe";
  e.file = r.file;
  e.recipe_file = r.file;
  e.recipe_of = r.file;
  set_rows(e, recipe_rows(r));
  set_recipe_layers(e, r);
  e.tokens_per_s_per_gpu = res.tokens_per_s_per_gpu;
  const std::optional<RunModel> ran = run_model(r);
  derive_entry(e, r, options, ran ? count_params(ran->model).active : 0, 0);
  e.step_time_cv_percent = res.step_time_cv_percent;
  e.gpu_hours = res.gpu_hours;
  e.measured = res.measured;
  e.steps.window_first = res.window.first;
  e.steps.window_last = res.window.last;
  e.commit = stack_commit(r.doc.value("stack", Json::object()));
  return e;
}

/// What makes two entries' figures comparable: model, layers that ran, GPU type, row tokens, global batch,
/// precision and rows (kind and supervised fraction).
using GroupKey = std::tuple<std::string, int64_t, std::string, int64_t, int64_t, std::string, std::string>;

GroupKey group_key(const LeaderboardEntry& e) {
  return std::make_tuple(e.model, e.layers, e.gpu_type, e.row_tokens, e.global_batch, e.precision, e.rows_label);
}

bool is_proxy(const LeaderboardGroup& g) { return g.layers > 0 && g.layers != g.layers_full; }

/// A new group of `e`'s key: its shared facts and id.
LeaderboardGroup new_group(const LeaderboardEntry& e) {
  LeaderboardGroup g;
  g.model = e.model;
  g.layers = e.layers;
  g.layers_full = e.layers_full;
  g.gpu_type = e.gpu_type;
  g.row_tokens = e.row_tokens;
  g.global_batch = e.global_batch;
  g.precision = e.precision;
  g.rows_kind = e.rows_kind;
  g.rows = e.rows_text;
  const std::string depth = is_proxy(g) ? "-" + std::to_string(g.layers) + "l" : "";
  g.id = slug(e.model + depth + "-" + e.gpu_type + "-" + std::to_string(g.row_tokens) + "-gb" +
              std::to_string(g.global_batch) + "-" + g.precision + "-" + e.rows_label);
  return g;
}

/// Real rows: what every entry says of them (the recipes' workload.rows, a rows file), or that they differ.
void describe_real_rows(LeaderboardGroup& g) {
  if (g.rows_kind != "real") return;
  std::set<std::string> said;
  for (const LeaderboardEntry& e : g.entries) said.insert(e.rows_text);
  if (said.size() > 1) g.rows = "real rows (" + std::to_string(said.size()) + " kinds: each entry names its own)";
}

/// Each group's title: model, layers and GPU, then each fact in which the groups of that model, layers and GPU
/// differ (row tokens, global batch, precision, rows), so no two groups share a title.
void set_titles(std::vector<LeaderboardGroup>& groups) {
  const auto base = [](const LeaderboardGroup& g) {
    const std::string depth =
        is_proxy(g) ? " (proxy: " + std::to_string(g.layers) + " of " + std::to_string(g.layers_full) + " layers)" : "";
    return "Training " + g.model + depth + " on " + g.gpu_type;
  };
  const auto parts = [](const LeaderboardGroup& g) {
    return std::vector<std::string>{with_commas(g.row_tokens) + "-token rows",
                                    "global batch " + with_commas(g.global_batch), ascii_upper(g.precision),
                                    g.entries.front().rows_label};
  };
  std::map<std::string, std::vector<std::set<std::string>>> seen;  // base -> each part's values
  for (const LeaderboardGroup& g : groups) {
    auto& values = seen[base(g)];
    const auto p = parts(g);
    values.resize(p.size());
    for (size_t i = 0; i < p.size(); ++i) values[i].insert(p[i]);
  }
  for (LeaderboardGroup& g : groups) {
    g.title = base(g);
    const auto& values = seen[g.title];
    const auto p = parts(g);
    std::string extra;
    for (size_t i = 0; i < p.size(); ++i)
      if (values[i].size() > 1) extra += (extra.empty() ? "" : ", ") + p[i];
    if (!extra.empty()) g.title += " \xC2\xB7 " + extra;
  }
}

/// The entries grouped by group_key, each group ranked by tokens/s/GPU (ties by file); full-size groups first, then
/// proxies, each in key order, so the report does not depend on the order of its inputs.
std::vector<LeaderboardGroup> group_and_rank(std::vector<LeaderboardEntry> entries) {
  std::map<GroupKey, LeaderboardGroup> groups;
  for (LeaderboardEntry& e : entries) {
    LeaderboardGroup& g = groups[group_key(e)];
    if (g.entries.empty()) g = new_group(e);
    g.entries.push_back(std::move(e));
  }
  std::vector<LeaderboardGroup> out;
  for (auto& [_, g] : groups) {
    std::stable_sort(g.entries.begin(), g.entries.end(), [](const LeaderboardEntry& a, const LeaderboardEntry& b) {
      if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
      return a.file < b.file;
    });
    for (size_t i = 0; i < g.entries.size(); ++i) g.entries[i].rank = static_cast<int>(i + 1);
    describe_real_rows(g);
    out.push_back(std::move(g));
  }
  // Full-size groups first, then proxies; within each, the group measured most recently first (the newest
  // measurement of its entries), so that the board opens on what was measured last, not on a name's letters.
  const auto newest = [](const LeaderboardGroup& g) {
    std::string day;
    for (const LeaderboardEntry& e : g.entries) day = std::max(day, e.measured.substr(0, 10));
    return day;
  };
  std::vector<std::pair<std::string, size_t>> order;
  for (size_t i = 0; i < out.size(); ++i) order.emplace_back(newest(out[i]), i);
  std::stable_sort(order.begin(), order.end(), [&out](const auto& a, const auto& b) {
    const bool pa = is_proxy(out[a.second]), pb = is_proxy(out[b.second]);
    if (pa != pb) return pb;
    return a.first > b.first;
  });
  std::vector<LeaderboardGroup> sorted;
  for (const auto& [_, i] : order) sorted.push_back(std::move(out[i]));
  out = std::move(sorted);
  set_titles(out);
  return out;
}

/// A run's settings as its entry's details hold them (RunOptions::to_json).
const Json& settings_of(const LeaderboardEntry& e) {
  static const Json none = Json::object();
  const Json& m = e.details.contains("measurement") ? e.details["measurement"] : none;
  return m.is_object() && m.contains("settings") && m["settings"].is_object() ? m["settings"] : none;
}

/// An entry as an earlier run of `latest` (its figures, commit and dates, and its settings that differ).
EarlierRun earlier_run(const LeaderboardEntry& e, const LeaderboardEntry& latest) {
  EarlierRun r{e.id, e.file, e.commit, e.started_at, e.measured, e.tokens_per_s_per_gpu,
               e.usd_per_million_tokens, e.mfu, e.step_time_cv_percent, Json::object()};
  const Json& mine = settings_of(e);
  const Json& theirs = settings_of(latest);
  for (const auto& [key, value] : mine.items())
    if (!theirs.contains(key) || theirs[key] != value) r.settings_differ[key] = value;
  return r;
}

/// Repeated runs folded: the run records of one group key and one repeat_key (one recipe file, backend label and
/// what_is_measured) become the latest of them (by
/// started_at, then file), holding the others, newest first, in earlier_runs. Recipes pass through. The result
/// does not depend on the order of `entries`. O(n log n).
std::vector<LeaderboardEntry> fold_repeated_runs(std::vector<LeaderboardEntry> entries) {
  std::map<std::pair<GroupKey, std::string>, std::vector<size_t>> repeats;
  std::vector<LeaderboardEntry> out;
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].kind == "run") repeats[{group_key(entries[i]), entries[i].repeat_key}].push_back(i);
  for (LeaderboardEntry& e : entries)
    if (e.kind != "run") out.push_back(std::move(e));
  for (auto& [key, runs] : repeats) {
    std::sort(runs.begin(), runs.end(), [&entries](size_t a, size_t b) {  // newest first
      return std::tie(entries[a].started_at, entries[a].file) > std::tie(entries[b].started_at, entries[b].file);
    });
    LeaderboardEntry latest = std::move(entries[runs.front()]);
    for (size_t k = 1; k < runs.size(); ++k) latest.earlier_runs.push_back(earlier_run(entries[runs[k]], latest));
    out.push_back(std::move(latest));
  }
  return out;
}

/// `file`'s stem with its `depth` nearest folders before it, as one slug: ("a/team-b/tp2-ep8.yaml", 1) ->
/// "team-b-tp2-ep8".
std::string path_slug(const std::string& file, int depth) {
  std::filesystem::path p(file);
  std::string id = p.stem().string();
  p = p.parent_path();
  for (int i = 0; i < depth && !p.filename().empty(); ++i, p = p.parent_path()) id = p.filename().string() + "-" + id;
  return slug(id);
}

/// Every entry's id unique within the report, whatever the order of the inputs: an id that two entries share (the
/// same file name in two folders) takes the entry's folders, nearest first, until it is unique; entries of the same
/// path (none after validation) get -2, -3... in file order.
void make_ids_unique(std::vector<LeaderboardEntry>& entries) {
  for (int depth = 1; depth <= 8; ++depth) {
    std::map<std::string, int> count;
    for (const auto& e : entries) ++count[e.id];
    bool shared = false;
    for (auto& e : entries)
      if (count[e.id] > 1) {
        e.id = path_slug(e.file, depth);
        shared = true;
      }
    if (!shared) return;
  }
  std::map<std::string, int> seen;
  for (auto& e : entries)
    if (const int n = ++seen[e.id]; n > 1) e.id += "-" + std::to_string(n);
}

}  // namespace

void LeaderboardBuilder::add(const Recipe& r) {
  recipe_files_.push_back(r.file);
  if (r.result)
    entries_.push_back(entry_of_recipe(r, options_));
  else if (r.doc.contains("prediction"))
    recipe_unranked_.push_back(r.file + ": predicted, not measured (status " + r.status + "; under Predicted)");
  else
    recipe_unranked_.push_back(r.file + ": no result (status " + r.status + ")");
  if (r.doc.contains("prediction")) predicted_.push_back(r);
  if (r.result) {
    Recipe kept = r;
    kept.doc = r.doc.contains("bench") ? Json{{"bench", r.doc["bench"]}} : Json::object();
    if (r.doc.contains("generated")) kept.doc["generated"] = r.doc["generated"];  // linked after real measurements
    measured_.push_back(std::move(kept));
  }
}

void LeaderboardBuilder::add(const RunRecordInput& in) {
  run_files_.push_back(in.file);
  if (const std::string why = unranked_reason(in.record); !why.empty())
    run_unranked_.push_back(in.file + ": " + why);
  else
    entries_.push_back(entry_from_run(in, options_));
}

Leaderboard LeaderboardBuilder::finish() {
  Leaderboard board;
  board.unranked = std::move(recipe_unranked_);
  board.unranked.insert(board.unranked.end(), run_unranked_.begin(), run_unranked_.end());
  board.predictions = predicted_entries(predicted_, measured_);
  std::vector<LeaderboardEntry> entries =
      options_.fold_repeated_runs ? fold_repeated_runs(std::move(entries_)) : std::move(entries_);
  make_ids_unique(entries);  // ids are link targets and compare slots in the page
  board.groups = group_and_rank(std::move(entries));
  for (PredictedEntry& p : board.predictions)  // the measured recipe's row on the page, the link's target
    for (const LeaderboardGroup& g : board.groups)
      for (const LeaderboardEntry& e : g.entries)
        if (e.kind == "recipe" && !p.measured_file.empty() && e.file == p.measured_file) p.measured_id = e.id;
  board.token_budget = options_.token_budget;
  set_histories(board);  // after the predictions' links: a prediction's point joins its measured recipe's history
  Json inputs = Json::array();
  for (const auto* files : {&recipe_files_, &run_files_})
    for (const std::string& f : *files) inputs.push_back(f);
  board.context = Json{{"inputs", inputs}};
  return board;
}

Leaderboard build_leaderboard(const std::vector<Recipe>& recipes, const ReportOptions& options,
                              const std::vector<RunRecordInput>& runs) {
  LeaderboardBuilder builder(options);
  for (const Recipe& r : recipes) builder.add(r);
  for (const RunRecordInput& in : runs) builder.add(in);
  return builder.finish();
}

namespace {

Json opt_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

/// An entry's earlier runs, newest first (schema/leaderboard.schema.json, entries[].earlier_runs).
Json earlier_runs_json(const LeaderboardEntry& e) {
  Json out = Json::array();
  for (const EarlierRun& r : e.earlier_runs)
    out.push_back(Json{{"id", r.id},
                       {"file", r.file},
                       {"commit", r.commit},
                       {"started_at", r.started_at},
                       {"measured", r.measured},
                       {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                       {"usd_per_million_tokens", opt_json(r.usd_per_million_tokens)},
                       {"mfu", opt_json(r.mfu)},
                       {"step_time_cv_percent", opt_json(r.step_time_cv_percent)},
                       {"settings_differ", r.settings_differ}});
  return out;
}

/// The trend of tokens/s/GPU over an entry's runs (oldest first, the ranked latest last) and its changes as
/// fractions (latest / previous - 1, latest / first - 1); null without earlier runs.
Json trend_json(const LeaderboardEntry& e) {
  if (e.earlier_runs.empty()) return nullptr;
  const std::vector<double> t = run_trend(e);
  const auto change = [&t](double from) { return from > 0 ? Json(t.back() / from - 1) : Json(nullptr); };
  return Json{{"runs", t.size()},
              {"tokens_per_s_per_gpu", t},
              {"change_from_previous", change(t[t.size() - 2])},
              {"change_from_first", change(t.front())}};
}

/// The rank key's spread over an entry's runs (run_spread); null for an entry of one run.
Json spread_json(const LeaderboardEntry& e) {
  const std::optional<RunSpread> s = run_spread(e);
  if (!s) return nullptr;
  return Json{{"runs", s->runs}, {"median", s->median}, {"cv_percent", s->cv_percent}};
}

/// An entry's history across commits and dates (set_histories), oldest first; null when its recipe has one point.
Json history_json(const LeaderboardEntry& e) {
  if (e.history.empty()) return nullptr;
  Json points = Json::array();
  for (const HistoryPoint& p : e.history)
    points.push_back(Json{{"kind", p.kind == HistoryPoint::Kind::kPredicted ? "predicted" : "measured"},
                          {"id", p.id},
                          {"file", p.file},
                          {"commit", p.commit.empty() ? Json(nullptr) : Json(p.commit)},
                          {"date", p.date},
                          {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
                          {"self", p.self}});
  return Json{{"recipe", e.recipe_of}, {"points", points}};
}

/// One entry of the leaderboard's JSON (schema/leaderboard.schema.json).
Json entry_json(const LeaderboardEntry& e) {
  return Json{
      {"rank", e.rank},
      {"id", e.id},
      {"kind", e.kind},
      {"file", e.file},
      {"backend", e.backend.empty() ? Json(nullptr) : Json(e.backend)},
      {"deterministic", e.deterministic ? Json(*e.deterministic) : Json(nullptr)},
      {"status", e.status},
      {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
      {"usd_per_million_tokens", opt_json(e.usd_per_million_tokens)},
      {"hardware", e.hardware.empty() ? Json(nullptr) : Json(e.hardware)},
      {"price", Json{{"usd_per_gpu_hour", e.usd_per_gpu_hour}, {"source", e.price_source}}},
      {"mfu", opt_json(e.mfu)},
      {"mfu_inputs", Json{{"active_params", e.active_params}, {"peak_flops", e.peak_flops}}},
      {"step_time_cv_percent", opt_json(e.step_time_cv_percent)},
      {"gpu_hours", opt_json(e.gpu_hours)},
      {"gpus", e.gpus},
      {"gpu", Json{{"type", e.gpu_type},
                   {"memory_gb", e.gpu_memory_gb},
                   {"per_node", e.gpus_per_node},
                   {"instance", e.instance}}},
      {"layout", Json{{"label", e.layout_label}, {"highlights", e.layout_highlights}, {"summary", e.layout_summary}}},
      {"measured", e.measured},
      {"commit", e.commit.empty() ? Json(nullptr) : Json(e.commit)},
      {"recorded_by", e.recorded_by.empty() ? Json(nullptr) : Json(e.recorded_by)},
      {"window", window_text(e).empty() ? Json(nullptr) : Json(window_text(e))},
      {"spread", spread_json(e)},
      {"started_at", e.started_at.empty() ? Json(nullptr) : Json(e.started_at)},
      {"earlier_runs", earlier_runs_json(e)},
      {"trend", trend_json(e)},
      {"history", history_json(e)},
      {"recipe_copy", recipe_copy_path(e).empty() ? Json(nullptr) : Json(recipe_copy_path(e))},
      {"author", Json{{"name", e.author}, {"url", e.author_url}}},
      {"details", e.details},
  };
}

/// A group's Pareto view at `budget` tokens (pareto_view): its points in rank order.
Json pareto_json(const LeaderboardGroup& g, double budget) {
  Json points = Json::array();
  for (const ParetoPoint& p : pareto_view(g, budget))
    points.push_back(Json{{"id", p.id},
                          {"gpus", p.gpus},
                          {"hours_to_budget", p.hours},
                          {"usd_per_million_tokens", p.usd_per_million_tokens},
                          {"usd_for_budget", p.usd_for_budget},
                          {"on_front", p.on_front}});
  return points;
}

/// A group's best entry at each GPU count (best_by_gpu_count), fewest GPUs first; empty with one count.
Json best_by_gpu_count_json(const LeaderboardGroup& g) {
  Json out = Json::array();
  for (const GpuCountBest& b : best_by_gpu_count(g)) {
    const LeaderboardEntry& e = g.entries[b.best];
    out.push_back(Json{{"gpus", b.gpus},
                       {"entries", b.entries},
                       {"id", e.id},
                       {"rank", e.rank},
                       {"layout", e.layout_label},
                       {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu}});
  }
  return out;
}

/// One group of the leaderboard's JSON, its ranked entries in `entries`.
Json group_json(const LeaderboardGroup& g, Json entries, double budget) {
  return Json{{"id", g.id},
              {"pareto", pareto_json(g, budget)},
              {"best_by_gpu_count", best_by_gpu_count_json(g)},
              {"title", g.title},
              {"model", g.model},
              {"layers", g.layers > 0 ? Json(g.layers) : Json(nullptr)},
              {"layers_full", g.layers_full > 0 ? Json(g.layers_full) : Json(nullptr)},
              {"gpu_type", g.gpu_type},
              {"workload", Json{{"row_tokens", g.row_tokens},
                                {"global_batch", g.global_batch},
                                {"precision", g.precision},
                                {"rows", g.rows},
                                {"rows_kind", g.rows_kind}}},
              {"ranked_by", "tokens_per_s_per_gpu"},
              {"entries", std::move(entries)}};
}

Json predictions_json(const std::vector<PredictedEntry>& predictions) {
  Json out = Json::array();
  for (const PredictedEntry& p : predictions) out.push_back(to_json(p));
  return out;
}

}  // namespace

namespace {

/// The recipe's blocks of an entry's details that entries of one group often share word for word (copies of one
/// recipe, one team's stack): written once per group, later entries say {"same_as": id} (as the page says "Same as
/// #k"), so 10,000 copies of one recipe do not write its command 10,000 times.
constexpr std::array<const char*, 7> kSharedBlocks = {"stack", "env", "patches", "run", "correctness", "notes",
                                                      "dataset"};

/// `entry`'s details with each shared block an earlier entry of the group wrote replaced by {"same_as": its id}.
/// `first` maps a block's name and text to the id of the first entry that wrote it.
void share_blocks(Json& entry, std::unordered_map<std::string, std::string>& first) {
  Json& d = entry["details"];
  for (const char* name : kSharedBlocks) {
    if (!d.contains(name)) continue;
    auto [it, inserted] = first.emplace(std::string(name) + '\0' + d[name].dump(), entry["id"].get<std::string>());
    if (!inserted) d[name] = Json{{"same_as", it->second}};
  }
}

}  // namespace

Json leaderboard_to_json(const Leaderboard& board) {
  Json groups = Json::array();
  for (const auto& g : board.groups) {
    Json entries = Json::array();
    std::unordered_map<std::string, std::string> first;
    for (const auto& e : g.entries) {
      entries.push_back(entry_json(e));
      share_blocks(entries.back(), first);
    }
    groups.push_back(group_json(g, std::move(entries), board.token_budget));
  }
  return Json{
      {"schema", "recipebench-leaderboard/1"},
      {"context", board.context},
      {"token_budget", board.token_budget},
      {"definitions",
       Json{{"kind", "recipe: figures the recipe reports (measured by its author); run: measured by recipebench"},
            {"tokens_per_s_per_gpu", "measured: window tokens / window seconds / GPUs (steps 5..19 by default)"},
            {"usd_per_million_tokens", "computed: price per GPU-hour / (tokens/s/GPU x 3600) x 1e6"},
            {"mfu", "computed: 6 x N_active x tokens/s/GPU / peak dense BF16 FLOP/s of the GPU (a fraction)"},
            {"step_time_cv_percent", "measured: 100 x sample standard deviation / mean of window step times"},
            {"gpu_hours", "measured: GPUs x (finish - start) / 3600, startup included"},
            {"hours_to_budget", "computed: token_budget / (tokens/s/GPU x GPUs) / 3600 (the Pareto view)"},
            {"usd_for_budget", "computed: $ per 1M tokens x token_budget / 1e6"},
            {"reference", "docs/metrics.md"}}},
      {"groups", groups},
      {"unranked", board.unranked},
      {"predictions", predictions_json(board.predictions)},
  };
}

}  // namespace recipebench
