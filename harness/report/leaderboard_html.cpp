// The leaderboard as one self-contained HTML page: inline CSS, no scripts, nothing fetched.
#include <sstream>

#include "report/leaderboard.h"
#include "util/format.h"

namespace recipebench {

namespace {

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "—";
  return v.dump();
}

std::string pct(double fraction, int decimals) { return fixed(100.0 * fraction, decimals) + "%"; }

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string humanize(const std::string& key) {
  std::string s = key;
  for (auto& c : s)
    if (c == '_') c = ' ';
  return s;
}

const char* kCss = R"CSS(
:root { --fg:#1d2330; --muted:#5b6474; --line:#dde2ea; --bg:#ffffff; --band:#f5f7fa; --accent:#1f5fbf; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 64px; }
header.page h1 { font-size: 26px; margin: 0 0 4px; }
.muted { color: var(--muted); }
section.group { margin-top: 28px; }
section.group h2 { font-size: 21px; margin: 0 0 2px; }
table.board { width: 100%; border-collapse: collapse; margin-top: 12px; font-variant-numeric: tabular-nums; }
table.board th, table.board td { padding: 9px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
table.board th { font-size: 13px; color: var(--muted); font-weight: 600; background: var(--band); }
table.board td.num, table.board th.num { text-align: right; white-space: nowrap; }
table.board td.rank { font-weight: 700; }
.layout-label { font-weight: 600; white-space: nowrap; }
.layout-hl { display: block; color: var(--muted); font-size: 13px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
article.entry { border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin-top: 18px; }
article.entry h3 { margin: 0 0 8px; font-size: 18px; }
article.entry h4 { margin: 16px 0 6px; font-size: 15px; }
dl.facts { display: grid; grid-template-columns: 190px 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre { background: var(--band); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; overflow-x: auto; font-size: 13px; line-height: 1.4; }
.tag { display: inline-block; font-size: 12px; padding: 1px 7px; border-radius: 10px; background: #e8f0fc; color: var(--accent); margin-left: 6px; }
footer { margin-top: 40px; font-size: 13px; }
)CSS";

void facts_row(std::ostringstream& o, const std::string& label, const std::string& value_html) {
  o << "<dt>" << esc(label) << "</dt><dd>" << value_html << "</dd>\n";
}

void details_html(std::ostringstream& o, const LeaderboardEntry& e) {
  const Json& d = e.details;
  o << "<dl class=\"facts\">\n";
  facts_row(o, "Author", e.author_url.empty() ? esc(e.author)
                                              : "<a href=\"" + esc(e.author_url) + "\">" + esc(e.author) + "</a>");
  std::string gpus = std::to_string(e.gpus) + " x " + e.gpu_type;
  if (e.gpu_memory_gb > 0) gpus += " " + shortest(e.gpu_memory_gb) + " GB";
  gpus += " (" + (e.instance.empty() ? std::string() : e.instance + ", ") + std::to_string(e.gpus_per_node) + " per node)";
  facts_row(o, "GPUs", esc(gpus));
  facts_row(o, "Layout", esc(e.layout_summary.empty() ? e.layout_label : e.layout_summary));
  facts_row(o, "Tokens/s per GPU", esc(fixed(e.tokens_per_s_per_gpu, 2)) + " <span class=\"muted\">(measured)</span>");
  if (e.usd_per_million_tokens)
    facts_row(o, "$ / 1M tokens",
              "$" + esc(fixed(*e.usd_per_million_tokens, 2)) + " <span class=\"muted\">(computed at $" +
                  esc(fixed(e.usd_per_gpu_hour, 4)) + "/GPU-hour; " + esc(e.price_source) + ")</span>");
  else
    facts_row(o, "$ / 1M tokens", "— <span class=\"muted\">(" + esc(e.price_source) + ")</span>");
  if (d.contains("measurement")) {
    const Json& m = d["measurement"];
    facts_row(o, "Measured by", "recipebench, backend " + esc(e.backend) + ", on " + esc(e.hardware));
    facts_row(o, "Mean step time", esc(fixed(m.value("mean_step_seconds", 0.0), 3)) + " s");
    if (m.value("peak_memory_bytes", int64_t{0}) > 0)
      facts_row(o, "Peak memory", esc(fixed(m["peak_memory_bytes"].get<double>() / 1e9, 1)) + " GB");
    if (m.contains("final_loss") && m["final_loss"].is_number())
      facts_row(o, "Final loss", esc(fixed(m["final_loss"].get<double>(), 4)));
    const Json& env = m.value("environment", Json::object());
    std::string versions;
    for (const char* k : {"compiler", "recipebench_commit"})
      if (env.contains(k)) versions += std::string(versions.empty() ? "" : "; ") + k + " " + text(env[k]);
    if (env.contains("device") && env["device"].is_object())
      for (const char* k : {"libtorch", "cuda", "nccl", "driver"})
        if (!text(env["device"].value(k, Json(""))).empty())
          versions += std::string(versions.empty() ? "" : "; ") + k + " " + text(env["device"][k]);
    facts_row(o, "Environment", esc(versions));
  }
  if (e.mfu)
    facts_row(o, "MFU", esc(pct(*e.mfu, 1)) + " <span class=\"muted\">(computed: 6 x N x tokens/s/GPU / " +
                            esc(shortest(e.peak_flops)) + " FLOP/s; N = " + esc(with_commas(e.active_params)) +
                            " active parameters per token)</span>");
  if (e.step_time_cv_percent) facts_row(o, "Step-time CV", esc(fixed(*e.step_time_cv_percent, 2)) + "%");
  if (d.contains("correctness")) {
    const Json& c = d["correctness"];
    if (c.contains("summary")) facts_row(o, "Correctness", esc(text(c["result"])) + " — " + esc(text(c["summary"])));
    if (c.contains("convergence")) {
      const Json& cv = c["convergence"];
      std::string s = "correlation " + text(cv.value("correlation", Json())) + ", final loss difference " +
                      text(cv.value("final_loss_difference", Json())) + ", " +
                      text(cv.value("pointwise_failures", Json())) + " pointwise failures over " +
                      text(cv.value("steps", Json())) + " steps";
      facts_row(o, "Convergence check", esc(s));
    }
    if (c.contains("component_tests"))
      for (const auto& t : c["component_tests"]) {
        std::string s = text(t.value("test", Json())) + ": " + text(t.value("gpu", Json())) + ", " +
                        text(t.value("date", Json())) + ". Shape: " + text(t.value("shape", Json())) + ". " +
                        text(t.value("detail", Json()));
        facts_row(o, "Component test", esc(s));
      }
  }
  facts_row(o, "Measured", esc(e.measured));
  if (e.gpu_hours) facts_row(o, "GPU-hours", esc(fixed(*e.gpu_hours, 2)));
  if (d.contains("dataset")) {
    const Json& ds = d["dataset"];
    std::string s = text(ds.value("name", Json()));
    if (ds.contains("build") && ds["build"].contains("name")) s = text(ds["build"]["name"]) + " from " + s;
    if (ds.contains("rows_sha256")) s += " (rows_sha256 " + text(ds["rows_sha256"]) + ")";
    facts_row(o, "Rows", esc(s));
  }
  facts_row(o, e.kind == "run" ? "Run record" : "Recipe file", "<code>" + esc(e.file) + "</code>");
  o << "</dl>\n";

  if (d.contains("stack")) {
    o << "<h4>Stack</h4>\n<dl class=\"facts\">\n";
    for (const auto& [k, v] : d["stack"].items()) facts_row(o, humanize(k), esc(text(v)));
    o << "</dl>\n";
  }
  if (d.contains("env") && !d["env"].empty()) {
    o << "<h4>Environment</h4>\n<pre>";
    for (const auto& [k, v] : d["env"].items()) o << esc(k) << "=" << esc(text(v)) << "\n";
    o << "</pre>\n";
  }
  if (d.contains("patches") && !d["patches"].empty()) {
    o << "<h4>Patches</h4>\n<ul>";
    for (const auto& p : d["patches"]) o << "<li><code>" << esc(text(p)) << "</code></li>";
    o << "</ul>\n";
  }
  if (d.contains("run") && d["run"].is_string()) o << "<h4>Command</h4>\n<pre>" << esc(text(d["run"])) << "</pre>\n";
  if (d.contains("notes")) o << "<h4>Notes</h4>\n<p>" << esc(text(d["notes"])) << "</p>\n";
}

}  // namespace

std::string leaderboard_to_html(const Leaderboard& board) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<title>recipebench leaderboard</title>\n<style>"
    << kCss << "</style>\n</head>\n<body>\n<main>\n";
  o << "<header class=\"page\"><h1>recipebench leaderboard</h1><p class=\"muted\">Training recipes ranked by tokens/s "
       "per GPU";
  if (board.context.contains("generated_at")) o << " · generated " << esc(text(board.context["generated_at"]));
  o << "</p></header>\n";
  if (board.groups.empty()) o << "<p>No recipe or run with a result to rank.</p>\n";

  for (const auto& g : board.groups) {
    o << "<section class=\"group\" id=\"" << esc(g.id) << "\">\n";
    const std::string depth = g.layers > 0 && g.layers != g.layers_full
                                  ? " (proxy: " + std::to_string(g.layers) + " of " + std::to_string(g.layers_full) + " layers)"
                                  : "";
    o << "<h2>Training " << esc(g.model) << esc(depth) << " on " << esc(g.gpu_type) << "</h2>\n";
    o << "<p class=\"muted\">Ranked by tokens/s per GPU · " << esc(with_commas(g.row_tokens)) << "-token rows"
      << (g.rows.empty() ? "" : " (" + esc(g.rows) + ")") << " · global batch " << g.global_batch << " · "
      << esc(upper(g.precision)) << "</p>\n";
    o << "<table class=\"board\">\n<thead><tr><th>#</th><th class=\"num\">Tokens/s per GPU</th>"
         "<th class=\"num\">$ / 1M tokens</th><th class=\"num\">GPUs</th><th>Layout</th><th class=\"num\">MFU</th>"
         "<th class=\"num\">Step-time CV</th><th>Measured</th><th>Author</th><th></th></tr></thead>\n<tbody>\n";
    for (const auto& e : g.entries) {
      o << "<tr id=\"row-" << esc(e.id) << "\"><td class=\"rank\">#" << e.rank << "</td>"
        << "<td class=\"num\">" << esc(fixed(e.tokens_per_s_per_gpu, 1)) << "</td>"
        << "<td class=\"num\">" << (e.usd_per_million_tokens ? "$" + esc(fixed(*e.usd_per_million_tokens, 2)) : "—")
        << "</td>"
        << "<td class=\"num\">" << e.gpus << "</td>"
        << "<td><span class=\"layout-label\">" << esc(e.layout_label) << "</span>";
      if (!e.layout_highlights.empty()) o << "<span class=\"layout-hl\">" << esc(e.layout_highlights) << "</span>";
      o << "</td><td class=\"num\">" << (e.mfu ? esc(pct(*e.mfu, 1)) : "—") << "</td>"
        << "<td class=\"num\">" << (e.step_time_cv_percent ? esc(fixed(*e.step_time_cv_percent, 2)) + "%" : "—")
        << "</td><td>" << esc(e.measured) << "</td><td>" << esc(e.author) << "</td>"
        << "<td><a href=\"#" << esc(e.id) << "\">" << (e.kind == "run" ? "Run" : "Recipe") << " ›</a></td></tr>\n";
    }
    o << "</tbody>\n</table>\n";

    o << "<h3>" << (g.entries.size() == 1 ? "Entry" : "Entries") << "</h3>\n";
    for (const auto& e : g.entries) {
      o << "<article class=\"entry\" id=\"" << esc(e.id) << "\">\n<h3>#" << e.rank << " " << esc(e.id)
        << " <span class=\"tag\">" << esc(e.kind == "run" ? "run · " + e.backend : "recipe · " + e.status)
        << "</span></h3>\n<p><strong>" << esc(fixed(e.tokens_per_s_per_gpu, 1)) << " tokens/s/GPU</strong> · "
        << esc(e.layout_label) << (e.layout_highlights.empty() ? "" : " · " + esc(e.layout_highlights)) << "</p>\n";
      details_html(o, e);
      o << "</article>\n";
    }
    o << "</section>\n";
  }
  if (!board.unranked.empty()) {
    o << "<section class=\"group\"><h2>Not ranked</h2><ul>";
    for (const auto& u : board.unranked) o << "<li>" << esc(u) << "</li>";
    o << "</ul></section>\n";
  }
  o << "<footer class=\"muted\"><p>Tokens/s per GPU: window tokens / window seconds / GPUs (measured, steps 5..19). "
       "$ / 1M tokens: price per GPU-hour / (tokens/s/GPU x 3600) x 1e6 (computed). MFU: 6 x N_active x tokens/s/GPU / "
       "peak dense BF16 FLOP/s (computed). Step-time CV: 100 x sample standard deviation / mean of window step times "
       "(measured). Definitions: docs/metrics.md.</p></footer>\n";
  o << "</main>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace recipebench
