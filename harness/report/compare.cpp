#include "report/compare.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "util/format.h"
#include "util/input_file.h"

namespace recipebench {

namespace {

std::string as_text(const Json& v) {
  if (v.is_null()) return "none";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return v.dump();
}

/// "full, uniform, 1 layer" from {granularity, method, num_layers}; "none" when absent.
std::string recompute_text(const Json& r) {
  if (!r.is_object()) return as_text(r);
  std::string s = as_text(r.value("granularity", Json("?")));
  if (r.contains("method") && !r["method"].is_null()) s += ", " + as_text(r["method"]);
  if (r.contains("num_layers") && r["num_layers"].is_number_integer()) {
    const int64_t n = r["num_layers"].get<int64_t>();
    s += ", " + std::to_string(n) + (n == 1 ? " layer" : " layers");
  }
  return s;
}

void layout_fields(const LeaderboardEntry& e, std::vector<EntryField>& out) {
  const Json& l = e.layout.is_object() ? e.layout : Json::object();
  out.push_back({"layout", "label", e.layout_label});
  for (const char* k : {"tp", "pp", "vpp", "cp", "ep", "etp", "dp"})
    out.push_back({"layout", k, l.contains(k) ? as_text(l[k]) : "1"});
  const std::pair<const char*, const char*> named[] = {{"sequence_parallel", "sequence parallel"},
                                                       {"max_tokens_per_gpu", "max tokens per GPU"},
                                                       {"rows_per_microbatch", "rows per microbatch"}};
  for (const auto& [key, name] : named)
    if (l.contains(key)) out.push_back({"layout", name, as_text(l[key])});
  out.push_back({"layout", "recompute", recompute_text(l.value("recompute", Json(nullptr)))});
  out.push_back({"layout", "offload", as_text(l.value("offload", Json(nullptr)))});
  out.push_back({"layout", "dispatcher", as_text(l.value("dispatcher", Json(nullptr)))});
  if (l.contains("layer_split") && l["layer_split"].is_object()) {
    const Json& s = l["layer_split"];
    out.push_back({"layout", "layer split",
                   "first " + as_text(s.value("first", Json("?"))) + ", last " + as_text(s.value("last", Json("?")))});
  }
}

void stack_fields(const LeaderboardEntry& e, std::vector<EntryField>& out) {
  const Json& d = e.details;
  if (d.contains("stack") && d["stack"].is_object())
    for (const auto& [k, v] : d["stack"].items())
      if (k != "source") out.push_back({"stack", k, as_text(v)});
  if (!d.contains("measurement")) return;
  const Json env = d["measurement"].value("environment", Json::object());
  if (!env.is_object()) return;
  if (d["measurement"].contains("log")) {  // the recipe's stack trained it; recipebench only ran it or read its log
    if (!e.commit.empty()) out.push_back({"stack", "commit", e.commit});
    out.push_back({"source", "recorded by", e.recorded_by});
    return;
  }
  for (const char* k : {"compiler", "recipebench_version", "recipebench_commit", "build_type"})
    if (env.contains(k)) out.push_back({"stack", k, as_text(env[k])});
  const Json dev = env.value("device", Json::object());
  if (dev.is_object())
    for (const char* k : {"libtorch", "cuda", "nccl", "driver"})
      if (dev.contains(k)) out.push_back({"stack", k, as_text(dev[k])});
}

/// A run record's settings block, one field per member; an object's members as "name.member".
void settings_fields(const Json& settings, const std::string& prefix, std::vector<EntryField>& out) {
  for (const auto& [k, v] : settings.items()) {
    if (v.is_object()) {
      settings_fields(v, prefix + k + ".", out);
    } else if (k == "window" && v.is_array() && v.size() == 2) {
      out.push_back({"settings", prefix + k, as_text(v[0]) + ":" + as_text(v[1])});
    } else {
      out.push_back({"settings", prefix + k, as_text(v)});
    }
  }
}

}  // namespace

std::vector<EntryField> entry_fields(const LeaderboardEntry& e) {
  std::vector<EntryField> out;
  layout_fields(e, out);
  out.push_back({"hardware", "GPU type", e.gpu_type});
  out.push_back({"hardware", "GPUs", std::to_string(e.gpus)});
  out.push_back({"hardware", "GPUs per node", std::to_string(e.gpus_per_node)});
  out.push_back({"hardware", "instance", e.instance.empty() ? "none" : e.instance});
  if (!e.hardware.empty()) out.push_back({"hardware", "measured on", e.hardware});
  out.push_back({"workload", "model", e.model});
  out.push_back({"workload", "row tokens", std::to_string(e.row_tokens)});
  out.push_back({"workload", "global batch", std::to_string(e.global_batch)});
  out.push_back({"workload", "precision", e.precision});
  if (!e.rows_label.empty()) out.push_back({"workload", "rows", e.rows_label});
  if (e.details.contains("measurement") && e.details["measurement"].is_object()) {
    const Json& m = e.details["measurement"];
    if (m.contains("settings") && m["settings"].is_object()) settings_fields(m["settings"], "", out);
  }
  stack_fields(e, out);
  if (e.details.contains("env") && e.details["env"].is_object())
    for (const auto& [k, v] : e.details["env"].items()) out.push_back({"env", k, as_text(v)});
  out.push_back({"source", "kind", e.kind == "run" ? "run record (" + e.backend + ")" : "recipe (" + e.status + ")"});
  out.push_back({"source", "measured", e.measured});
  out.push_back({"source", "author", e.author});
  out.push_back({"source", "file", e.file});
  return out;
}

std::vector<EntryFigure> entry_figures(const LeaderboardEntry& e) {
  return {{"tokens_per_s_per_gpu", "tokens/s per GPU", e.tokens_per_s_per_gpu},
          {"usd_per_million_tokens", "$ per 1M tokens", e.usd_per_million_tokens},
          {"mfu", "MFU", e.mfu},
          {"step_time_cv_percent", "step-time CV (%)", e.step_time_cv_percent},
          {"gpu_hours", "GPU-hours", e.gpu_hours}};
}

size_t Comparison::differences() const {
  size_t n = 0;
  for (const auto& f : fields) n += f.differs;
  return n;
}

Comparison compare_entries(const LeaderboardEntry& a, const LeaderboardEntry& b) {
  Comparison c{a.id, b.id, a.file, b.file, {}, {}};
  const std::vector<EntryField> fa = entry_fields(a), fb = entry_fields(b);
  std::map<std::pair<std::string, std::string>, const EntryField*> in_b;
  for (const auto& f : fb) in_b[{f.section, f.name}] = &f;
  std::map<std::pair<std::string, std::string>, bool> seen;
  for (const auto& f : fa) {
    auto it = in_b.find({f.section, f.name});
    const std::string bv = it == in_b.end() ? "—" : it->second->value;
    c.fields.push_back({f.section, f.name, f.value, bv, f.value != bv});
    seen[{f.section, f.name}] = true;
  }
  for (const auto& f : fb)
    if (!seen.count({f.section, f.name})) c.fields.push_back({f.section, f.name, "—", f.value, true});
  // "file" always differs between two entries: not a difference of how they ran.
  for (auto& f : c.fields)
    if (f.section == "source" && f.name == "file") f.differs = false;
  const auto ga = entry_figures(a), gb = entry_figures(b);
  for (size_t i = 0; i < ga.size(); ++i) {
    ComparedFigure g{ga[i].key, ga[i].label, ga[i].value, gb[i].value, std::nullopt};
    if (g.a && g.b && *g.a != 0) g.ratio = *g.b / *g.a;
    c.figures.push_back(g);
  }
  return c;
}

namespace {

/// A field as a short label part: "max tokens per GPU 16384", "seed 7"; a source kind as it is ("run record
/// (import · regex)").
std::string label_part(const EntryField& f) {
  if (f.section == "source" && f.name == "kind") return f.value;
  return f.name + " " + f.value;
}

bool shown_in_label(const EntryField& f) {
  if (f.section == "layout" && f.name == "label") return false;
  return !(f.section == "source" && (f.name == "file" || f.name == "measured"));
}

/// The label parts of entry `i` against the `others` that share its layout label: for each other entry, the first
/// field (in entry_fields() order) where the two differ ("—" where one lacks it); those fields in that order.
std::string differing_parts(const std::vector<std::vector<EntryField>>& fields, size_t i,
                            const std::vector<size_t>& others, size_t max_parts, const std::string& id) {
  const auto value_in = [&fields](size_t k, const EntryField& f) {
    for (const EntryField& g : fields[k])
      if (g.section == f.section && g.name == f.name) return g.value;
    return std::string("—");
  };
  // The order fields are tried in: the layout's, then the source's kind (recipe, or run record by which backend),
  // then the rest in entry_fields() order.
  std::vector<size_t> order;
  const auto rank = [&fields, i](size_t n) {
    const EntryField& f = fields[i][n];
    return f.section == "layout" ? 0 : f.section == "source" && f.name == "kind" ? 1 : 2;
  };
  for (int r = 0; r < 3; ++r)
    for (size_t n = 0; n < fields[i].size(); ++n)
      if (rank(n) == r) order.push_back(n);
  std::vector<bool> needed(fields[i].size(), false);
  for (size_t k : others) {
    if (k == i) continue;
    for (size_t n : order)
      if (shown_in_label(fields[i][n]) && value_in(k, fields[i][n]) != fields[i][n].value) {
        needed[n] = true;
        break;
      }
  }
  std::string out;
  size_t parts = 0;
  for (size_t n : order)
    if (needed[n] && parts < max_parts) {
      out += (out.empty() ? "" : ", ") + label_part(fields[i][n]);
      ++parts;
    }
  return out.empty() ? id : out;
}

}  // namespace

std::vector<std::string> distinguishing_text(const std::vector<LeaderboardEntry>& entries, size_t max_parts) {
  std::map<std::string, std::vector<size_t>> by_label;
  for (size_t i = 0; i < entries.size(); ++i) by_label[entries[i].layout_label].push_back(i);
  std::vector<std::string> out(entries.size());
  std::vector<std::vector<EntryField>> fields(entries.size());
  for (const auto& [label, members] : by_label) {
    if (members.size() < 2) continue;
    for (size_t i : members) fields[i] = entry_fields(entries[i]);
    for (size_t i : members) out[i] = differing_parts(fields, i, members, max_parts, entries[i].id);
  }
  return out;
}

void use_settings_as_written(LeaderboardEntry& e, const Json& record_doc) {
  if (!record_doc.is_object() || !record_doc.contains("settings") || !record_doc["settings"].is_object()) return;
  if (!e.details.contains("measurement") || !e.details["measurement"].is_object()) return;
  e.details["measurement"]["settings"] = record_doc["settings"];
}

std::vector<std::string> settings_warnings(const Json& a, const Json& b) {
  std::vector<std::string> out;
  if (!a.is_object() || !b.is_object()) return out;
  const Json none(nullptr);
  const Json& sa = a.contains("seed") ? a["seed"] : none;
  const Json& sb = b.contains("seed") ? b["seed"] : none;
  if (sa != sb)
    out.push_back("the runs' seeds differ (" + as_text(sa) + ", " + as_text(sb) +
                  "): their initial weights and rows differ, so their losses agree in trend, not step by step");
  const Json& da = a.contains("data") ? a["data"] : none;
  const Json& db = b.contains("data") ? b["data"] : none;
  if (da != db)
    out.push_back("the runs' rows differ (" + (da.is_null() ? "none" : da.dump()) + ", " +
                  (db.is_null() ? "none" : db.dump()) + "): their losses are of different data");
  return out;
}

std::string format_figure(const std::string& key, const std::optional<double>& v) {
  if (!v) return "—";
  if (key == "tokens_per_s_per_gpu") return fixed(*v, 1);
  if (key == "usd_per_million_tokens") return "$" + fixed(*v, 2);
  if (key == "mfu") return fixed(100 * *v, 1) + "%";
  if (key == "step_time_cv_percent") return fixed(*v, 2) + "%";
  if (*v > 0 && *v < 0.005) return "<0.01";  // too small for 2 decimals, not zero (a short run's GPU-hours)
  return fixed(*v, 2);
}

std::string comparison_to_text(const Comparison& c) {
  std::ostringstream o;
  o << "A: " << c.a_id << " (" << c.a_file << ")\nB: " << c.b_id << " (" << c.b_file << ")\n\n";
  size_t w = 0;
  for (const auto& f : c.fields) w = std::max(w, display_width(f.section) + 1 + display_width(f.name));
  // Pads to n display columns ("—" is one), and always leaves two spaces before the next column.
  auto pad = [](const std::string& s, size_t n) {
    return display_width(s) + 2 <= n ? pad_right(s, n) : s + "  ";
  };
  o << pad("figure", 20) << pad("A", 14) << pad("B", 14) << "B/A\n";
  for (const auto& g : c.figures)
    o << pad(g.label, 20) << pad(format_figure(g.key, g.a), 14) << pad(format_figure(g.key, g.b), 14)
      << (g.ratio ? approx(*g.ratio) : "—") << "\n";
  o << "\n" << c.differences() << " of " << c.fields.size() << " fields differ (*)\n";
  size_t wa = 1;
  for (const auto& f : c.fields) wa = std::max(wa, std::min<size_t>(display_width(f.a), 40));
  for (const auto& f : c.fields)
    o << (f.differs ? "* " : "  ") << pad(f.section + "." + f.name, w + 2) << pad(f.a, wa + 2) << f.b << "\n";
  return o.str();
}

std::optional<std::string> same_input_warning(const std::string& a, const std::string& b) {
  const std::string why = ": an input compared with itself agrees by construction";
  std::error_code ec;
  if (a == b || std::filesystem::equivalent(a, b, ec)) return "A and B are the same file (" + a + ")" + why;
  const auto size_a = std::filesystem::file_size(a, ec);
  if (ec) return std::nullopt;
  const auto size_b = std::filesystem::file_size(b, ec);
  if (ec || size_a != size_b) return std::nullopt;
  try {
    if (read_input_file(a) == read_input_file(b)) return "A and B are identical files (" + a + ", " + b + ")" + why;
  } catch (const std::exception&) {  // unreadable: the command reports it when it reads them
  }
  return std::nullopt;
}

}  // namespace recipebench
