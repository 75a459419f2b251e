// The ranked leaderboard: entries grouped by model, GPU type and workload, ranked by tokens/s/GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "recipe/recipe.h"
#include "record/run_record.h"
#include "report/predictions.h"
#include "util/json.h"

namespace recipebench {

/// Per-step figures of a run record, for its charts (docs/metrics.md: the timed window).
struct StepSeries {
  std::vector<double> seconds;             ///< wall time of steps 0..N-1 (s)
  std::vector<double> loss;                ///< training loss of steps 0..N-1 (cross-entropy, nats per supervised token)
  int window_first = 0, window_last = -1;  ///< the timed window, inclusive step indices; last < first: none
};

/// An earlier run of a ranked run's recipe and settings, folded under the latest (docs/reports.md, "Repeated runs"):
/// what the page's fold and leaderboard.json's `earlier_runs` list of it.
struct EarlierRun {
  std::string id, file;
  std::string commit;      ///< environment.recipebench_commit as recorded ("unknown" when the record says so)
  std::string started_at;  ///< UTC ISO 8601, the order of the runs
  std::string measured;    ///< the day its figures were measured (as LeaderboardEntry::measured)
  double tokens_per_s_per_gpu = 0;
  std::optional<double> usd_per_million_tokens, mfu, step_time_cv_percent;
  /// Its settings (the record's `settings` as read back) whose value differs from the latest run's: name -> its
  /// value, e.g. {"seed": 1234, "overlap_grad_reduce": false}; empty when it ran as the latest did.
  Json settings_differ;
};

/// One point of an entry's history across commits and dates (report/board_views.h, set_histories).
struct HistoryPoint {
  enum class Kind { kMeasured, kPredicted };
  Kind kind = Kind::kMeasured;
  std::string id;      ///< the entry's or earlier run's id; a prediction: its recipe file's stem
  std::string file;    ///< the recipe or run record it comes from
  std::string commit;  ///< the code that trained (LeaderboardEntry::commit) or predicted it; empty when unknown
  std::string date;    ///< a run's started_at (UTC ISO 8601), a recipe's day measured, a prediction's day
  double tokens_per_s_per_gpu = 0;  ///< measured or predicted
  bool self = false;                ///< the point of the entry that shows the history (the same file)
};

/// One ranked row and the facts its detail section shows.
struct LeaderboardEntry {
  std::string id;    ///< HTML anchor and stable key: the file's stem
  std::string kind;  ///< "recipe" (figures reported by the recipe) or "run" (a run record)
  std::string file;
  std::string backend;  ///< run records: the backend that measured it; recipes: empty
  /// Run records: settings.deterministic (docs/determinism.md), shown because the non-deterministic kernels are
  /// faster (a few %); recipes: unknown.
  std::optional<bool> deterministic;
  std::string model, gpu_type, instance;
  int64_t layers = 0;       ///< decoder layers the figures come from (a proxy's bench.layers); 0 = unknown
  int64_t layers_full = 0;  ///< decoder layers of the full model; 0 = not in the registry
  int gpus = 0, gpus_per_node = 0;
  double gpu_memory_gb = 0;
  int64_t row_tokens = 0, global_batch = 0;
  std::string precision, rows;  ///< rows: the recipe's workload.rows, as written
  /// The kind of rows the figures were measured on (docs/reports.md, "Groups"): "synthetic" (recipebench's
  /// seeded rows with a learnable structure), "uniform_random" (uniform random token ids) or "real" (a dataset or a
  /// rows file). From settings.data for recipebench's own backend, else from the recipe (workload.dataset,
  /// bench.data, workload.rows).
  std::string rows_kind;
  std::string rows_label;  ///< short, one per kind and supervised fraction: "synthetic rows, 67.6% supervised"
  std::string rows_text;   ///< in words: "synthetic learnable rows (seeded), 67.6% of tokens supervised"
  std::string layout_label, layout_highlights, layout_summary;
  int rank = 0;                                  ///< 1-based within its group
  double tokens_per_s_per_gpu = 0;               ///< measured (by the recipe's run or the run record)
  std::optional<double> usd_per_million_tokens;  ///< computed: price / (tokens/s/GPU x 3600) x 1e6
  double usd_per_gpu_hour = 0;
  std::string price_source;
  std::optional<double> mfu;  ///< computed: 6 x N_active x tokens/s/GPU / peak dense BF16 (fraction)
  int64_t active_params = 0;
  double peak_flops = 0;                       ///< FLOP/s used for MFU
  std::optional<double> step_time_cv_percent;  ///< measured
  std::optional<double> gpu_hours;             ///< measured
  std::string measured, author, author_url, status;
  std::string hardware;  ///< run records: the device the backend measured on (e.g. "1 x NVIDIA H200")
  Json details;          ///< stack, env, patches, run, correctness, dataset, notes (as in the recipe)
  Json layout;           ///< the recipe's layout block (degrees, recompute, dispatcher, ...), for comparisons
  StepSeries steps;  ///< run records: steps 0..N-1 and the window; recipes: no steps, result.window
  /// The commit of the code that trained: recipebench's own runs: environment.recipebench_commit; a command's or an
  /// imported log's run and a recipe: the commit its stack names (stack_commit), else empty (docs/report.md,
  /// "Provenance").
  std::string commit;
  /// Run records: "recipebench <version> (<commit>)", the build that ran or parsed the run, shown apart from the
  /// stack that trained; recipes: empty.
  std::string recorded_by;
  std::string started_at;  ///< run records: started_at (UTC ISO 8601); recipes: empty
  /// Run records: what makes two runs repeats of one another, besides the group: the recipe file, the backend label
  /// and the settings that say what was measured (steps, window, layers, device, ranks, rows, profile; not the
  /// seed or the switches: docs/reports.md, "Repeated runs"); recipes: empty (never folded).
  std::string repeat_key;
  std::vector<EarlierRun> earlier_runs;  ///< the same recipe and settings run before, newest first
  /// The recipe file whose YAML the card shows and `report` copies (recipe_copy_path): a recipe's own file; a run's
  /// recorded recipe_path (as given, else beside the run record) when its bytes still have the recorded sha256;
  /// else empty, and recipe_unavailable says why.
  std::string recipe_file;
  std::string recipe_unavailable;
  /// The recipe a run was made from (its recorded recipe_path), a recipe's own file: the history's identity
  /// (recipe_key in report/board_views.h).
  std::string recipe_of;
  /// Every point of this entry's recipe in its group, oldest first (set_histories); empty when it has one point.
  std::vector<HistoryPoint> history;
};

/// Tokens/s/GPU of an entry's runs, oldest first, the entry's own (the latest) last: its trend.
std::vector<double> run_trend(const LeaderboardEntry& e);

/// The spread of the rank key over an entry's runs (the ranked latest and its earlier runs): how many, their
/// median tokens/s/GPU and coefficient of variation (100 x sample standard deviation / mean, %).
struct RunSpread {
  size_t runs = 0;
  double median = 0;
  double cv_percent = 0;
};

/// run_spread of an entry with earlier runs; nullopt for an entry of one run (no spread to show).
std::optional<RunSpread> run_spread(const LeaderboardEntry& e);

/// The commit a recipe's stack block names: a member named "commit", else the first word of 7 to 40 hexadecimal
/// digits after "commit " in a member's text ("commit 1dcf0daf (megatron-core 0.16.0rc0)" -> "1dcf0daf"); empty
/// when it names none.
std::string stack_commit(const Json& stack);

/// The entry's timed window in words, "steps 5..29" (a recipe's result.window, a run's settings.window); empty when
/// unknown.
std::string window_text(const LeaderboardEntry& e);

/// Where `report` writes a copy of an entry's recipe_file, byte for byte, relative to the page (the page's Download
/// link): "leaderboard-recipes/<id>.yaml.txt", not .yaml, so that a later `report` over the folder does not read the
/// copies as recipes; empty for an entry without a recipe_file (a run whose recipe is gone or changed).
std::string recipe_copy_path(const LeaderboardEntry& e);

/// The first 7 characters of a commit hash ("25cb23d"); other text (e.g. "unknown") as it is.
std::string short_commit(const std::string& commit);

/// One table: same model at the same number of layers (a proxy never shares a table with the full model), GPU
/// type, row tokens, global batch, precision and kind of rows (and supervised fraction of synthetic rows).
struct LeaderboardGroup {
  std::string id, model, gpu_type, precision;
  std::string rows_kind;  ///< every entry's LeaderboardEntry::rows_kind
  /// What the entries' rows share, in words: the kind ("synthetic learnable rows (seeded), 67.6% of tokens
  /// supervised"); real rows add the recipes' workload.rows when every entry says the same.
  std::string rows;
  /// The heading: "Training <model> [(proxy: 4 of 40 layers)] on <GPU>", then what separates the group from the
  /// others of that model, layers and GPU (row tokens, global batch, precision, rows), so no two groups share one.
  std::string title;
  int64_t layers = 0, layers_full = 0;  ///< layers that ran / of the full model (0 = unknown)
  int64_t row_tokens = 0, global_batch = 0;
  std::vector<LeaderboardEntry> entries;  ///< ranked, best first
};

/// The token budget the Pareto view prices when `report --token-budget` gives none: 1e9 tokens (1B).
constexpr double kDefaultTokenBudget = 1e9;

struct Leaderboard {
  std::vector<LeaderboardGroup> groups;
  /// Tokens the Pareto view's time to train counts (docs/report.md, "Pareto view"); `report --token-budget`.
  double token_budget = kDefaultTokenBudget;
  std::vector<std::string> unranked;  ///< inputs with no result to rank (e.g. status proposed), with the reason
  /// Recipes with a `prediction` block (report/predictions.h): listed apart, never ranked with measured results.
  std::vector<PredictedEntry> predictions;
  Json context;                       ///< generated_at, recipebench version, host, inputs
};

struct ReportOptions {
  std::optional<double> usd_per_gpu_hour;  ///< price override for every entry ($/GPU-hour)
  /// Repeated runs as one entry, the latest, the earlier folded under it (`report`; docs/reports.md, "Repeated
  /// runs"); off, every run record is an entry of its own (`compare` of two runs of one recipe).
  bool fold_repeated_runs = false;
  double token_budget = kDefaultTokenBudget;  ///< the Pareto view's budget, tokens (Leaderboard::token_budget)
};

/// A run record read from `file` and checked (check_run_record in record/run_record_check.h).
struct RunRecordInput {
  std::string file;
  RunRecord record;
};

/// True for the CMake build types whose timings are ranked: Release and RelWithDebInfo (both optimised, -O3 or
/// -O2, with NDEBUG); Debug, MinSizeRel and an unrecorded build type are not.
bool optimised_build(const std::string& build_type);

/// Why a checked run record is listed unranked ("" when it is ranked): a run that did not complete (with its
/// error), a --profile run (its phases are synchronised), or a build that is not optimised_build().
std::string unranked_reason(const RunRecord& record);

/// Builds the ranked leaderboard from validated recipes and checked run records. Recipes without a result and
/// run records with an unranked_reason() go to `unranked`. With options.fold_repeated_runs, repeated runs (one
/// recipe file, backend and measured settings, in one group) are one entry: the latest by started_at, ranked, the earlier ones in its earlier_runs. Entries
/// are grouped by model, layers that ran, GPU
/// type, row tokens, global batch, precision and kind of rows; full-size groups come before proxies, and the
/// report is the same whatever the order of the inputs. Entries that cannot be priced (CPU runs, no catalog
/// instance and no price given) show no $ figure.
Leaderboard build_leaderboard(const std::vector<Recipe>& recipes, const ReportOptions& options,
                              const std::vector<RunRecordInput>& runs = {});

/// The leaderboard built one input at a time, so that a caller may free each input once added (a report of 10,000
/// recipes never holds every recipe document beside every entry: docs/reports.md, "Writing"). Adding every recipe,
/// then every run record, then finish() gives build_leaderboard's board, whatever the order of the adds.
class LeaderboardBuilder {
 public:
  explicit LeaderboardBuilder(ReportOptions options) : options_(std::move(options)) {}
  /// A validated recipe: its entry when it has a result, else a line of `unranked`; kept when it has a prediction.
  void add(const Recipe& recipe);
  /// A checked run record: its entry, or a line of `unranked` with its unranked_reason().
  void add(const RunRecordInput& run);
  /// The board: repeated runs folded, ids made unique, groups ranked. Call once.
  Leaderboard finish();

 private:
  ReportOptions options_;
  std::vector<LeaderboardEntry> entries_;
  std::vector<std::string> recipe_unranked_, run_unranked_, recipe_files_, run_files_;
  std::vector<Recipe> predicted_;  ///< recipes with a prediction block (report/predictions.h)
  /// Recipes with a result, their document cut to its bench block (what setup_differences reads): a prediction of
  /// the same layout is linked to them (report/predictions.h).
  std::vector<Recipe> measured_;
};

/// The JSON form, described by schema/leaderboard.schema.json.
Json leaderboard_to_json(const Leaderboard& board);

/// One self-contained HTML page: inline CSS and SVG charts, a small inline script for sorting, filtering and
/// comparing (the page reads fully without it), no network fetch. Only http(s) URLs become links.
std::string leaderboard_to_html(const Leaderboard& board);

}  // namespace recipebench
