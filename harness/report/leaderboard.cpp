#include "report/leaderboard.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <tuple>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "metrics/metrics.h"
#include "recipe/result_check.h"

namespace recipebench {

namespace {

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

Json details_of(const Recipe& r) {
  Json d = Json::object();
  for (const char* key : {"stack", "env", "patches", "run", "correctness", "notes"})
    if (r.doc.contains(key) && !r.doc[key].is_null()) d[key] = r.doc[key];
  if (r.doc["workload"].contains("dataset")) d["dataset"] = r.doc["workload"]["dataset"];
  if (r.doc.contains("result") && r.doc["result"].is_object()) {
    const Json& res = r.doc["result"];
    for (const char* key : {"mfu_note", "gpu_hours_note", "runs", "profiler", "steps_per_run", "window", "window_tokens"})
      if (res.contains(key) && !res[key].is_null()) d["result_" + std::string(key)] = res[key];
    if (res.contains("active_params")) d["active_params"] = res["active_params"];
  }
  return d;
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

void price_entry(LeaderboardEntry& e, const Recipe& r, const ReportOptions& options) {
  if (options.usd_per_gpu_hour) {
    e.usd_per_gpu_hour = *options.usd_per_gpu_hour;
    e.price_source = "command line (--usd-per-gpu-hour)";
  } else if (auto price = recipe_price(r)) {
    e.usd_per_gpu_hour = price->usd_per_gpu_hour;
    e.price_source = price->source;
  } else {
    e.price_source = "no price for " + r.gpu.type + " (give gpu.usd_per_gpu_hour or --usd-per-gpu-hour)";
    return;
  }
  e.usd_per_million_tokens = usd_per_million_tokens(e.usd_per_gpu_hour, e.tokens_per_s_per_gpu);
}

void add_mfu(LeaderboardEntry& e, const ModelConfig* model, const std::string& gpu_type) {
  const GpuSpec* gpu = find_gpu(gpu_type);
  if (!model || !gpu) return;
  e.active_params = count_params(*model).active;
  e.peak_flops = gpu->peak_bf16_flops;
  e.mfu = mfu_6n(static_cast<double>(e.active_params), e.tokens_per_s_per_gpu, e.peak_flops);
}

/// Step times and losses of a run record's `steps`, and its timed window (`metrics.window`).
StepSeries step_series(const Json& rec) {
  StepSeries s;
  for (const Json& st : rec.value("steps", Json::array())) {
    s.seconds.push_back(st.value("seconds", 0.0));
    s.loss.push_back(st.value("loss", 0.0));
  }
  const Json w = rec["metrics"].value("window", Json::array());
  if (w.is_array() && w.size() == 2) s.window_first = w[0].get<int>(), s.window_last = w[1].get<int>();
  return s;
}

}  // namespace

Leaderboard build_leaderboard(const std::vector<Recipe>& recipes, const ReportOptions& options,
                              const std::vector<RunRecordInput>& runs) {
  Leaderboard board;
  std::map<std::tuple<std::string, std::string, int64_t, int64_t, std::string>, LeaderboardGroup> groups;
  Json inputs = Json::array();
  std::vector<LeaderboardEntry> entries;
  for (const Recipe& r : recipes) {
    inputs.push_back(r.file);
    if (!r.result) {
      board.unranked.push_back(r.file + ": no result (status " + r.status + ")");
      continue;
    }
    const RecipeResult& res = *r.result;
    LeaderboardEntry e = entry_from_recipe(r);
    e.id = slug(std::filesystem::path(r.file).stem().string());
    e.kind = "recipe";
    e.file = r.file;
    e.tokens_per_s_per_gpu = res.tokens_per_s_per_gpu;
    price_entry(e, r, options);
    add_mfu(e, find_model(r.model), r.gpu.type);
    e.step_time_cv_percent = res.step_time_cv_percent;
    e.gpu_hours = res.gpu_hours;
    e.measured = res.measured;
    entries.push_back(std::move(e));
  }
  for (const RunRecordInput& in : runs) {
    inputs.push_back(in.file);
    const Json& rec = in.record;
    if (rec.value("status", std::string()) != "complete" || !rec["metrics"].is_object()) {
      std::string why = rec.value("status", std::string("unknown"));
      if (rec.contains("error") && rec["error"].is_object()) why += ": " + rec["error"].value("message", std::string());
      board.unranked.push_back(in.file + ": run " + why);
      continue;
    }
    const Recipe r = recipe_from_json(rec["recipe"]["document"], rec["recipe"]["path"].get<std::string>());
    const Json& m = rec["metrics"];
    const Json& model_json = rec["model"];
    LeaderboardEntry e = entry_from_recipe(r);
    e.id = slug(std::filesystem::path(in.file).stem().string());
    e.kind = "run";
    e.file = in.file;
    e.backend = rec.value("backend", std::string());
    e.status = "measured";
    e.tokens_per_s_per_gpu = m["tokens_per_s_per_gpu"].get<double>();
    e.step_time_cv_percent = m["step_time_cv_percent"].get<double>();
    e.gpu_hours = m["gpu_hours"].get<double>();
    e.measured = rec.value("finished_at", std::string()).substr(0, 10);
    const Json& dev = rec["environment"].value("device", Json::object());
    e.gpus = std::max(1, dev.value("count", 1));
    e.hardware = std::to_string(e.gpus) + " x " + dev.value("name", std::string("?"));
    const bool on_gpu = rec["settings"].value("device", std::string()) == "cuda";
    if (on_gpu) {
      price_entry(e, r, options);
      const ModelConfig* reg = find_model(r.model);
      if (reg) {
        const ModelConfig run_model = reg->with_layers(model_json.value("layers", reg->num_layers));
        add_mfu(e, &run_model, r.gpu.type);
      }
    } else {
      e.price_source = "not priced: a CPU run";
    }
    if (model_json.value("proxy", false)) {
      const std::string layers = std::to_string(model_json.value("layers", 0)) + " of " +
                                 std::to_string(model_json.value("layers_full", 0)) + " layers";
      if (e.layout_highlights.find(layers) != std::string::npos)  // the recipe already says it
        e.layout_highlights.replace(e.layout_highlights.find(layers), layers.size(), "proxy: " + layers);
      else
        e.layout_highlights = "proxy: " + layers + (e.layout_highlights.empty() ? "" : ", " + e.layout_highlights);
    }
    e.details["measurement"] = Json{{"backend", e.backend},
                            {"hardware", e.hardware},
                            {"settings", rec["settings"]},
                            {"environment", rec["environment"]},
                            {"window_seconds", m["window_seconds"]},
                            {"mean_step_seconds", m["mean_step_seconds"]},
                            {"peak_memory_bytes", m["peak_memory_bytes"]},
                            {"final_loss", rec["steps"].empty() ? Json(nullptr) : rec["steps"].back()["loss"]}};
    e.details.erase("correctness");
    e.steps = step_series(rec);
    entries.push_back(std::move(e));
  }
  for (LeaderboardEntry& e : entries) {
    auto key = std::make_tuple(e.model, e.gpu_type, e.row_tokens, e.global_batch, e.precision);
    LeaderboardGroup& g = groups[key];
    if (g.entries.empty()) {
      g.model = e.model;
      g.gpu_type = e.gpu_type;
      g.row_tokens = e.row_tokens;
      g.global_batch = e.global_batch;
      g.precision = e.precision;
      g.rows = e.rows;
      g.id = slug(e.model + "-" + e.gpu_type + "-" + std::to_string(g.row_tokens) + "-gb" +
                  std::to_string(g.global_batch) + "-" + g.precision);
    }
    g.entries.push_back(std::move(e));
  }
  for (auto& [_, g] : groups) {
    std::stable_sort(g.entries.begin(), g.entries.end(), [](const LeaderboardEntry& a, const LeaderboardEntry& b) {
      if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
      return a.file < b.file;
    });
    for (size_t i = 0; i < g.entries.size(); ++i) g.entries[i].rank = static_cast<int>(i + 1);
    board.groups.push_back(std::move(g));
  }
  board.context = Json{{"inputs", inputs}};
  return board;
}

namespace {

Json opt_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace

Json leaderboard_to_json(const Leaderboard& board) {
  Json groups = Json::array();
  for (const auto& g : board.groups) {
    Json entries = Json::array();
    for (const auto& e : g.entries) {
      entries.push_back(Json{
          {"rank", e.rank},
          {"id", e.id},
          {"kind", e.kind},
          {"file", e.file},
          {"backend", e.backend.empty() ? Json(nullptr) : Json(e.backend)},
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
          {"gpu", Json{{"type", e.gpu_type}, {"memory_gb", e.gpu_memory_gb}, {"per_node", e.gpus_per_node},
                       {"instance", e.instance}}},
          {"layout", Json{{"label", e.layout_label}, {"highlights", e.layout_highlights}, {"summary", e.layout_summary}}},
          {"measured", e.measured},
          {"author", Json{{"name", e.author}, {"url", e.author_url}}},
          {"details", e.details},
      });
    }
    groups.push_back(Json{{"id", g.id},
                          {"model", g.model},
                          {"gpu_type", g.gpu_type},
                          {"workload", Json{{"row_tokens", g.row_tokens},
                                            {"global_batch", g.global_batch},
                                            {"precision", g.precision},
                                            {"rows", g.rows}}},
                          {"ranked_by", "tokens_per_s_per_gpu"},
                          {"entries", entries}});
  }
  return Json{
      {"schema", "recipebench-leaderboard/1"},
      {"context", board.context},
      {"definitions",
       Json{{"kind", "recipe: figures the recipe reports (measured by its author); run: measured by recipebench"},
            {"tokens_per_s_per_gpu", "measured: window tokens / window seconds / GPUs (steps 5..19 by default)"},
            {"usd_per_million_tokens", "computed: price per GPU-hour / (tokens/s/GPU x 3600) x 1e6"},
            {"mfu", "computed: 6 x N_active x tokens/s/GPU / peak dense BF16 FLOP/s of the GPU (a fraction)"},
            {"step_time_cv_percent", "measured: 100 x sample standard deviation / mean of window step times"},
            {"gpu_hours", "measured: GPUs x (finish - start) / 3600, startup included"},
            {"reference", "docs/metrics.md"}}},
      {"groups", groups},
      {"unranked", board.unranked},
  };
}

}  // namespace recipebench
