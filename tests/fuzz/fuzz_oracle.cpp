#include "fuzz_oracle.h"

#include <fcntl.h>
#include <spawn.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include "catalog/hardware.h"
#include "catalog/hf_config.h"
#include "catalog/models.h"
#include "layout/rank_map.h"
#include "logparse/line_text.h"
#include "logparse/log_reader.h"
#include "plan/compute_profile.h"
#include "recipe/launch_check.h"
#include "recipe/catalog_file.h"
#include "recipe/result_check.h"
#include "recipe/run_model.h"
#include "recipe/validate.h"
#include "record/profile_source.h"
#include "record/run_record_check.h"
#include "report/leaderboard.h"
#include "util/input_file.h"
#include "util/json_text.h"

namespace recipebench::fuzz {

namespace {

constexpr const char* kRecipeName = "fuzz.yaml";

Verdict finding(std::string reason) { return Verdict{false, false, std::move(reason)}; }

/// User + system CPU seconds of process `pid` so far (/proc/PID/stat fields 14 and 15, in clock ticks); 0 when it
/// cannot be read.
double process_cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int k = 3; k <= 15 && fields >> field; ++k) {
    if (k == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (k == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

/// A message about `text` stays on one line and is true of it (untrue_message).
Verdict check_message(const std::string& message, const std::string& text) {
  if (message.find('\n') != std::string::npos || message.find('\r') != std::string::npos)
    return finding("a diagnostic that spans lines: " + message);
  if (const std::string why = untrue_message(message, text); !why.empty()) return finding(why + ": " + message);
  return {};
}

/// `text` read as JSON into `out` as the report and the config reader read it (util/json_text.h). False when it is
/// refused; `refusal` is then ok, or a finding when the refusal has no line:col or is untrue.
bool read_json_input(const std::string& text, Json& out, Verdict& refusal) {
  try {
    out = parse_json_text(text);
    return true;
  } catch (const JsonTextError& e) {
    if (e.line < 1 || e.column < 1)
      refusal = finding(std::string("a JSON error without line:col: ") + e.what());
    else
      refusal = check_message(e.what(), text);
    return false;
  }
}

/// Every diagnostic names the input and a line and column, stays on one line and is true of the input.
Verdict check_diagnostics(const Diagnostics& errors, const std::string& file, const std::string& text) {
  for (const auto& d : errors) {
    const std::string s = d.to_string();
    if (d.file != file || d.line < 1 || d.column < 1) return finding("an error without file:line:col: " + s);
    if (Verdict v = check_message(s, text); !v.ok) return v;
  }
  return {};
}

/// The text's lines split at LF, CR LF or a lone CR, without BOMs, comments and surrounding spaces, empty ones and
/// document markers left out.
std::vector<std::string> content_lines(const std::string& text) {
  std::vector<std::string> out;
  std::string line;
  auto flush = [&] {
    for (size_t bom; (bom = line.find("\xEF\xBB\xBF")) != std::string::npos;) line.erase(bom, 3);
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    const size_t a = line.find_first_not_of(" \t"), b = line.find_last_not_of(" \t");
    if (a != std::string::npos) {
      const std::string t = line.substr(a, b - a + 1);
      if (t != "---" && t != "...") out.push_back(t);
    }
    line.clear();
  };
  for (char c : text) (c == '\n' || c == '\r') ? flush() : line.push_back(c);
  flush();
  return out;
}

/// Core YAML 1.2 scalar tags and the plain texts they fit (the core schema's forms, section 10.3.2).
bool scalar_tag_fits(const std::string& tag, const std::string& value) {
  static const std::string core = "tag:yaml.org,2002:";
  if (tag == "?" || tag == "!" || tag.empty()) return true;
  if (tag.rfind(core, 0) != 0) return false;  // not a core tag: !custom, !!python/...
  const std::string t = tag.substr(core.size());
  static const std::regex null_form("|~|null|Null|NULL");
  static const std::regex bool_form("true|True|TRUE|false|False|FALSE");
  static const std::regex int_form("[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+");
  static const std::regex float_form(
      "[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
  if (t == "str" || t == "binary" || t == "timestamp") return true;
  if (t == "null") return std::regex_match(value, null_form);
  if (t == "bool") return std::regex_match(value, bool_form);
  if (t == "int") return std::regex_match(value, int_form);
  if (t == "float") return std::regex_match(value, float_form);
  return false;  // !!map, !!seq, !!set ... on a scalar
}

/// yaml-cpp's events of one document: the keys of each mapping and the tags, for yaml_accepted_faults.
class StructureScan : public YAML::EventHandler {
 public:
  std::string fault;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { item(nullptr); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { item(nullptr); }
  void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t, const std::string& value) override {
    if (!scalar_tag_fits(tag, value)) note(m, "the tag " + tag + " on the scalar '" + value + "'");
    item(&value, m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t, YAML::EmitterStyle::value) override {
    open(m, tag, "tag:yaml.org,2002:seq", false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t, YAML::EmitterStyle::value) override {
    open(m, tag, "tag:yaml.org,2002:map", true);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    bool map = false;
    bool at_key = true;
    std::set<std::string> keys;
  };
  std::vector<Frame> stack_;

  void note(const YAML::Mark& m, const std::string& what) {
    if (fault.empty()) fault = what + " at line " + std::to_string(m.line + 1);
  }
  /// A scalar (key text) or other node in the current collection; a mapping's key is checked against its others.
  void item(const std::string* key, const YAML::Mark& m = YAML::Mark()) {
    if (stack_.empty() || !stack_.back().map) return;
    Frame& f = stack_.back();
    if (f.at_key && key && *key != "<<" && !f.keys.insert(*key).second) note(m, "the key '" + *key + "' twice");
    f.at_key = !f.at_key;
  }
  void open(const YAML::Mark& m, const std::string& tag, const std::string& own, bool map) {
    if (tag != "?" && tag != "!" && !tag.empty() && tag != own)
      note(m, "the tag " + tag + " on a " + (map ? "mapping" : "list"));
    stack_.push_back(Frame{map, true, {}});
  }
  void close() {
    stack_.pop_back();
    item(nullptr);
  }
};

/// nlohmann's SAX events of a JSON text: each object's keys, for json_duplicate_key.
struct DuplicateKeySax : nlohmann::json_sax<nlohmann::json> {
  std::vector<std::set<std::string>> objects;  // an empty set for an array too (its frames are never looked up)
  std::string duplicate;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return push(true); }
  bool end_object() override { return pop(); }
  bool start_array(std::size_t) override { return push(false); }
  bool end_array() override { return pop(); }
  bool key(string_t& k) override {
    if (!objects.back().insert(k).second && duplicate.empty()) duplicate = k;
    return duplicate.empty();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool push(bool) {
    objects.emplace_back();
    return true;
  }
  bool pop() {
    objects.pop_back();
    return true;
  }
};

/// A validated recipe's diagnostics located and true; a valid one gives its rank map and a leaderboard.
Verdict check_validated(const ValidatedRecipe& v, const std::string& text) {
  Verdict out = check_diagnostics(v.errors, kRecipeName, text);
  if (!out.ok || !v.ok()) return out;
  out.accepted = true;
  if (const std::string fault = yaml_accepted_faults(text); !fault.empty())
    return finding("a recipe validate accepts holds " + fault);
  // A valid recipe must give its dry-run rank map (when its model's layers are known: run --dry-run says "not
  // built" otherwise) and a leaderboard without an error.
  const Recipe& r = *v.recipe;
  if (const auto model = run_model(r); model && model->model.architecture_known() && r.layout.world() <= 65536) {
    try {
      (void)format_rank_map(build_rank_map(r, model->model));
    } catch (const std::invalid_argument& e) {
      return finding(std::string("a valid recipe whose rank map fails: ") + e.what());
    }
  }
  const Leaderboard board = build_leaderboard({r}, ReportOptions{});
  (void)leaderboard_to_json(board).dump();
  (void)leaderboard_to_html(board);
  return out;
}

Verdict check_recipe(const std::string& text) { return check_validated(validate_recipe_text(text, kRecipeName), text); }

std::string g_scratch_dir = ".";
std::string g_probe_recipe;

/// A refusal of a config.json: one line naming config.json (and, for a field, the field) and true of the input.
Verdict check_config_refusal(const std::string& message, const std::string& text) {
  if (message.rfind("config.json", 0) != 0) return finding("a config.json refusal without the file: " + message);
  return check_message(message, text);
}

/// A config.json as `models --config` and `model_params.config` read it (catalog/hf_config.h).
Verdict check_hf_config(const std::string& text) {
  Json config;
  if (Verdict refusal; !read_json_input(text, config, refusal)) return refusal;
  ModelConfig m;
  try {
    m = model_config_from_hf(config, "config.json", config.is_object() ? model_name_from_hf(config) : "");
  } catch (const std::invalid_argument& e) {
    return check_config_refusal(e.what(), text);
  }
  const ParamCounts c = count_params(m);
  if (!(c.total > 0) || !(c.active > 0) || c.active > c.total)
    return finding("an accepted config.json counts total " + std::to_string(c.total) + ", active " +
                   std::to_string(c.active) + " parameters");
  Verdict out;
  out.accepted = true;
  return out;
}

/// Finite and positive (a peak, a capacity, a bandwidth of an accepted catalog).
bool positive_figure(double v) { return std::isfinite(v) && v > 0; }

/// A catalog file as `--catalog` reads it (recipe/catalog_file.h), from the scratch folder.
Verdict check_catalog(const std::string& text) {
  const std::string file = g_scratch_dir + "/catalog-input.yaml";
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  const LoadedCatalog loaded = load_catalog_file(file);
  for (const auto& d : loaded.errors) {
    const std::string s = d.to_string();
    if (d.file.empty() || (d.line < 1 && d.path.empty())) return finding("a catalog error without its place: " + s);
    if (d.file == file) {
      if (Verdict v = check_message(s, text); !v.ok) return v;
    } else if (s.find('\n') != std::string::npos) {  // an embedded file's entry broken by the override
      return finding("a diagnostic that spans lines: " + s);
    }
  }
  if (!loaded.ok()) return {};
  for (const GpuSpec& g : loaded.catalog.gpus)
    if (!positive_figure(g.peak_bf16_flops) || !positive_figure(g.memory_bytes) ||
        !positive_figure(g.memory_bandwidth))
      return finding("an accepted catalog with GPU " + g.name + " of a peak, memory or bandwidth not finite and > 0");
  Verdict out;
  out.accepted = true;
  return out;
}

std::string g_profile_probe;
std::string g_import_probe;

/// The field path of a refusal: a Diagnostic names its file and (line:col or) a path; one line, true of the input.
Verdict check_located(const Diagnostic& d, const std::string& file, const std::string& text, const char* what) {
  const std::string s = d.to_string();
  if (d.file != file || (d.path.empty() && d.line < 1)) return finding(std::string(what) + " without its file and field: " + s);
  return check_message(s, text);
}

/// An accepted profile as measurements, read apart from profiled_rank's own checks (docs/step-time.md, "Profiles as
/// measurements"): every cell finite and >= 0, a component with work timed > 0 in its own phase, and its implied
/// rate over forward + backward at most 2 x the GPU's dense BF16 peak (HBM bandwidth for a memory-bound one).
std::string bad_profile(const ProfiledRank& r) {
  const GpuSpec* gpu = r.gpu == "CPU" ? nullptr : find_gpu(r.gpu);
  if (!(std::isfinite(r.optimizer_seconds) && r.optimizer_seconds >= 0)) return "optimizer seconds not finite, >= 0";
  if (!std::isfinite(r.between_passes_seconds)) return "between-passes seconds not finite";
  const auto fwd = static_cast<size_t>(PassPhase::kForward), bwd = static_cast<size_t>(PassPhase::kBackward);
  for (const ProfiledChunk& ch : r.chunks) {
    for (const PhaseCells* cells : {&ch.forward, &ch.backward})
      for (const ComponentCells& phase : *cells)
        for (double v : phase)
          if (!(std::isfinite(v) && v >= 0)) return "a cell of " + std::to_string(v) + " s";
    for (int c = 0; c < kProfileComponents; ++c) {
      const auto comp = static_cast<ProfileComponent>(c);
      const double work = component_work(comp, r.widths, ch.shape);
      if (!(work > 0)) continue;
      const double f = ch.forward[fwd][static_cast<size_t>(c)], b = ch.backward[bwd][static_cast<size_t>(c)];
      if (!(f > 0) || !(b > 0)) return std::string("a component with work and no time: ") + to_string(comp);
      const bool matrix = work_kind(comp) == WorkKind::kMatrix;
      const double limit = gpu ? (matrix ? gpu->peak_bf16_flops : gpu->memory_bandwidth) : 0;
      if (gpu && work * (matrix ? 3 : 2) / (f + b) > 2.0 * limit * (1 + 1e-9))
        return std::string("an implied rate above 2 x the GPU's peak: ") + to_string(comp);
    }
  }
  return {};
}

/// A profile (or calibration) record as predict reads it: as `report` checks it, then profiled_rank.
Verdict check_profile(const std::string& text) {
  Json record;
  if (Verdict refusal; !read_json_input(text, record, refusal)) return refusal;
  if (!record.is_object()) return {};
  const CheckedRunRecord checked = check_run_record(record, "fuzz.json");
  if (!checked.ok()) {
    for (const auto& d : checked.errors)
      if (Verdict v = check_located(d, "fuzz.json", text, "a refused profile"); !v.ok) return v;
    return {};
  }
  try {
    const ProfiledRank r = profiled_rank(*checked.record, "fuzz.json");
    if (const std::string bad = bad_profile(r); !bad.empty()) return finding("a profile accepted with " + bad);
  } catch (const InputError& e) {
    return check_located(e.diagnostic(), "fuzz.json", text, "a refused profile");
  }
  Verdict out;
  out.accepted = true;
  return out;
}

/// A log input split into its format line's spec ("" when absent or empty: detected) and the log.
std::pair<std::string, std::string> split_log_input(const std::string& text) {
  const std::string prefix = kLogFormatLine;
  if (text.rfind(prefix, 0) != 0) return {"", text};
  const size_t nl = text.find('\n');
  std::string spec = text.substr(prefix.size(), nl == std::string::npos ? std::string::npos : nl - prefix.size());
  const size_t a = spec.find_first_not_of(' ');
  spec = a == std::string::npos ? "" : spec.substr(a);
  return {spec, nl == std::string::npos ? "" : text.substr(nl + 1)};
}

/// A log as import reads it (logparse/log_reader.h), line by line with each line's CPU time bounded; every problem
/// at the log's line and column, on one line.
Verdict check_log(const std::string& text) {
  const auto [spec_text, log] = split_log_input(text);
  std::optional<LogFormatSpec> spec;
  if (!spec_text.empty() && !(spec = parse_log_format(spec_text))) return {};  // the CLI refuses it (through the binary)
  const LogContext context{"fuzz.log", 4096, 64, 8};
  std::optional<LogReader> reader;
  try {
    reader.emplace(spec, context);
  } catch (const std::invalid_argument& e) {  // a pattern PCRE2 refuses
    return check_message(e.what(), text);
  }
  std::istringstream in(log);
  for (std::string line; read_log_line(in, line);) {
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    reader->feed(line);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    const double cpu = static_cast<double>(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (cpu > kLogLineSeconds)
      return finding("a log line took " + std::to_string(cpu) + " s of CPU to read (" + std::to_string(line.size()) +
                     " bytes; bound " + std::to_string(kLogLineSeconds) + " s)");
  }
  const ParsedLog parsed = reader->result();
  for (const Diagnostic& d : parsed.problems) {
    if (d.file != "fuzz.log" || d.line < 1 || d.column < 1)
      return finding("a log problem without file:line:col: " + d.to_string());
    if (Verdict v = check_message(d.to_string(), text); !v.ok) return v;
  }
  Verdict out;
  out.accepted = parsed.problems.empty() && !parsed.steps.empty();
  return out;
}

/// A recipe with a `run:` command: validated (errors and the launch check's warnings located), and the command's
/// text split into flags.
Verdict check_run_command(const std::string& text) {
  const ValidatedRecipe v = validate_recipe_text(text, kRecipeName);
  Verdict out = check_validated(v, text);
  if (!out.ok) return out;
  if (Verdict w = check_diagnostics(v.launch, kRecipeName, text); !w.ok) return w;
  if (v.source && v.source->value.is_object() && v.source->value.contains("run") && v.source->value["run"].is_string())
    (void)launch_flags(v.source->value["run"].get<std::string>());
  return out;
}

Verdict check_record(const std::string& text) {
  // Read as the report reads a record file (util/json_text.h: duplicate keys, overflowing numbers and deep nesting
  // refused where they are, objects built in linear time); a refusal must be located and true.
  Json record;
  if (Verdict refusal; !read_json_input(text, record, refusal)) return refusal;
  if (!record.is_object()) return {};
  // The report's own checks (record/run_record_check.h): a refused record must carry its file and field.
  const CheckedRunRecord checked = check_run_record(record, "fuzz.json");
  if (checked.ok())
    if (const std::string dup = json_duplicate_key(text); !dup.empty())
      return finding("a run record accepted with " + dup);
  if (!checked.ok()) {
    for (const auto& d : checked.errors)
      if (d.file != "fuzz.json" || (d.path.empty() && d.line == 0))
        return finding("a refused record without its file and field: " + d.to_string());
    return {};
  }
  const Leaderboard board = build_leaderboard({}, ReportOptions{}, {RunRecordInput{"fuzz.json", *checked.record}});
  (void)leaderboard_to_json(board).dump(-1, ' ', false, Json::error_handler_t::replace);
  (void)leaderboard_to_html(board);
  Verdict out;
  out.accepted = !board.groups.empty();
  return out;
}

}  // namespace

std::string resource_overrun(const ResourceUse& use, double slow_seconds) {
  const uint64_t bound = (uint64_t{512} << 20) + 64 * use.input_bytes;
  if (use.cpu_seconds > slow_seconds)
    return "the check took " + std::to_string(use.cpu_seconds) + " s of CPU (over " + std::to_string(slow_seconds) +
           " s) for an input of " + std::to_string(use.input_bytes) + " bytes";
  if (use.peak_after > use.peak_before && use.peak_after > bound)
    return "the peak memory rose to " + std::to_string(use.peak_after >> 20) + " MiB for an input of " +
           std::to_string(use.input_bytes) + " bytes (bound: 512 MiB + 64 bytes per input byte)";
  return {};
}

std::string untrue_message(const std::string& message, const std::string& text) {
  static const std::regex library(
      R"(bad file|bad conversion|bad_alloc|json\.exception|\bsto(i|l|ll|ul|ull|f|d|ld)\b|std::|basic_string|what\(\)|)"
      R"(yaml-cpp|invalid node|key not found|map::at|vector::_M)");
  static const std::regex one_plural(R"(\b1 (items|values|keys|lines|levels|steps)\b)");
  static const std::regex doubled(R"(\b(null|mapping|list|string|number|integer|boolean) (a |an )?\1\b)");
  static const std::regex number_as_string(R"(\bstring '([-+]?(\.(nan|inf)|[0-9]{21,}))'(,|$))", std::regex::icase);
  if (message.size() > 4096) return untrue_message(message.substr(0, 2048) + message.substr(message.size() - 2048), text);
  if (std::regex_search(message, library)) return "a library's message";
  if (message.find("empty file") != std::string::npos && !content_lines(text).empty())
    return "'empty file' said of a document with content";
  if ((message.find("aliases of aliases") != std::string::npos || message.find("recursive alias") != std::string::npos) &&
      text.find('*') == std::string::npos)
    return "aliases blamed in an input without any";
  // The counts and type words recipebench writes, not the input's own text it quotes ('...'); without a regex
  // (libstdc++'s recurses per character: a quoted 70 KB list overflowed the stack, the crashes of the 2026-12-03
  // bench).
  std::string own;
  bool inside = false;
  for (char c : message) {
    if (c == '\'') inside = !inside;
    if (!inside && c != '\'') own += c;
  }
  if (std::regex_search(own, one_plural)) return "a count of 1 said in the plural";
  if (std::regex_search(own, doubled)) return "a type word said twice";
  if (std::smatch m; std::regex_search(message, m, number_as_string) && text.find("'" + m[1].str()) == std::string::npos &&
                     text.find("\"" + m[1].str()) == std::string::npos)
    return "a plain number said to be a string";
  return {};
}

std::string yaml_accepted_faults(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  StructureScan scan;
  try {
    while (parser.HandleNextDocument(scan) && scan.fault.empty()) {
    }
  } catch (const YAML::Exception&) {
    return {};  // recipebench accepted it; the parse is its reader's business
  }
  return scan.fault;
}

std::string json_duplicate_key(const std::string& text) {
  DuplicateKeySax sax;
  (void)nlohmann::json::sax_parse(text, &sax, nlohmann::json::input_format_t::json, /*strict=*/false);
  return sax.duplicate.empty() ? std::string() : "the key '" + sax.duplicate + "' twice in one object";
}

const char* surface_name(InputKind kind) {
  static const char* const names[] = {"recipe", "record", "config", "catalog", "profile", "log", "run", "args"};
  return names[static_cast<int>(kind)];
}

const char* surface_extension(InputKind kind) {
  switch (kind) {
    case InputKind::kRecipe:
    case InputKind::kCatalog:
    case InputKind::kRunCommand: return ".yaml";
    case InputKind::kLog: return ".log";
    case InputKind::kArgs: return ".args";
    default: return ".json";
  }
}

void set_profile_probe(const std::string& text) { g_profile_probe = text; }

void set_import_probe(const std::string& text) { g_import_probe = text; }

void set_scratch_dir(const std::string& dir) { g_scratch_dir = dir; }

void set_probe_recipe(const std::string& text) { g_probe_recipe = text; }

Verdict check_in_process(const std::string& text, InputKind kind) {
  try {
    switch (kind) {
      case InputKind::kRecipe: return check_recipe(text);
      case InputKind::kRunRecord: return check_record(text);
      case InputKind::kHfConfig: return check_hf_config(text);
      case InputKind::kCatalog: return check_catalog(text);
      case InputKind::kProfile: return check_profile(text);
      case InputKind::kLog: return check_log(text);
      case InputKind::kRunCommand: return check_run_command(text);
      case InputKind::kArgs: return {};
    }
    return {};
  } catch (const std::exception& e) {
    return finding(std::string("an exception escaped (the CLI would print it without a location): ") + e.what());
  }
}

namespace {

/// Starts `argv` with stdout and stderr to `log`, the signals this harness catches back at their defaults (the
/// harness's handlers must not run in the child before its exec), and in a process group of its own, so that a
/// stop sent to the harness's group (Ctrl-C, `timeout`) lets the current input finish as documented instead of
/// killing the binary under it (which would read as a finding). In `cwd` when given (the arguments surface: a
/// relative `--out` a mutant names is written under the scratch folder, never into the checkout). Returns the
/// child's pid, or -1.
pid_t spawn_binary(const std::vector<std::string>& argv, const std::string& log, const std::string& cwd = "") {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&files, cwd.c_str());  // after the log is opened
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults, none;
  sigemptyset(&defaults);
  for (int sig : {SIGTERM, SIGINT, SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT, SIGALRM}) sigaddset(&defaults, sig);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0].c_str(), &files, &attr, args.data(), environ) != 0) pid = -1;
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&files);
  return pid;
}

/// The command that reads `file`, an input of `kind`, through the binary.
std::vector<std::string> binary_command(InputKind kind, const std::string& binary, const std::string& file,
                                        const std::string& dir) {
  switch (kind) {
    case InputKind::kRecipe: return {binary, "validate", file};
    case InputKind::kRunRecord: return {binary, "report", file, "--out", dir + "/report"};
    case InputKind::kHfConfig: return {binary, "models", "--config", file};
    case InputKind::kCatalog: {
      const std::string probe = dir + "/catalog-probe.yaml";
      std::ofstream(probe, std::ios::binary | std::ios::trunc) << g_probe_recipe;
      return {binary, "validate", "--catalog", file, probe};
    }
    case InputKind::kRunCommand: return {binary, "validate", file};
    case InputKind::kProfile: {  // --profile, and every other time --calibrate (a measured run's record)
      static uint64_t turn = 0;
      const std::string probe = dir + "/profile-probe.yaml";
      std::ofstream(probe, std::ios::binary | std::ios::trunc) << (g_profile_probe.empty() ? g_probe_recipe : g_profile_probe);
      return {binary, "predict", probe, ++turn % 2 ? "--profile" : "--calibrate", file};
    }
    case InputKind::kLog:
    case InputKind::kArgs: break;  // binary_argv
  }
  return {binary};
}

/// The arguments of an args input: one a line, "@RECIPE" the profile probe (or the recipe probe) written under
/// `dir`; a NUL ends its argument (argv cannot hold one); each argument at most 128 KiB - 1 bytes and 1 MiB in all
/// (the kernel's MAX_ARG_STRLEN and ARG_MAX would refuse the exec: a shell cannot pass more either).
std::vector<std::string> args_command(const std::string& text, const std::string& binary, const std::string& dir) {
  const std::string probe = dir + "/args-probe.yaml";
  std::ofstream(probe, std::ios::binary | std::ios::trunc) << (g_profile_probe.empty() ? g_probe_recipe : g_profile_probe);
  std::vector<std::string> argv{binary};
  size_t bytes = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line) && bytes < (size_t{1} << 20) && argv.size() < 100000;) {
    line = line.substr(0, line.find('\0'));
    argv.push_back(line == "@RECIPE" ? probe : line.substr(0, std::min((size_t{128} << 10) - 1, (size_t{1} << 20) - bytes)));
    bytes += argv.back().size() + 1;
  }
  return argv;
}

}  // namespace

std::atomic<pid_t> g_binary_child{0};

namespace {

/// The command line of `text`, an input of `kind`, written to `file` where the command reads a file.
std::vector<std::string> binary_argv(const std::string& text, InputKind kind, const std::string& binary,
                                     const std::string& file, const std::string& dir) {
  if (kind == InputKind::kArgs) return args_command(text, binary, dir);
  if (kind != InputKind::kLog) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
    return binary_command(kind, binary, file, dir);
  }
  const auto [spec, log] = split_log_input(text);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << log;
  const std::string probe = dir + "/import-probe.yaml", out = dir + "/import-runs";
  std::ofstream(probe, std::ios::binary | std::ios::trunc) << (g_import_probe.empty() ? g_probe_recipe : g_import_probe);
  std::error_code ec;
  std::filesystem::remove_all(out, ec);
  std::vector<std::string> argv{binary, "import", file, "--recipe", probe, "--out", out};
  if (!spec.empty()) argv.insert(argv.end(), {"--log-format", spec.substr(0, spec.find('\0'))});
  return argv;
}

/// The newer surfaces' error lines (profile, log, run, args): each starts (after its indent) with one of the
/// command's words (a file it read) or `<command line>`, then optional :LINE:COL, then ": error: "; a refusal
/// (`failed`: exit 1 or 2) says at least one.
Verdict check_error_lines_located(std::ifstream& in, const std::vector<std::string>& argv, bool failed) {
  bool any = false;
  for (std::string line; std::getline(in, line); any = any || line.find("error:") != std::string::npos) {
    if (line.find("error:") == std::string::npos && line.find("terminate called") == std::string::npos) continue;
    const std::string l = line.substr(std::min(line.find_first_not_of(' '), line.size()));
    bool located = false;
    for (size_t k = 0; k <= 2 * argv.size() && !located; ++k) {  // a word, the value of a --opt=value word
      const size_t w = k / 2, eq = w < argv.size() ? argv[w].find('=') : std::string::npos;
      const std::string place = w == argv.size() ? std::string("<command line>")
                                : k % 2 == 0     ? argv[w]
                                : eq == std::string::npos ? std::string()
                                                          : argv[w].substr(eq + 1);
      if (k % 2 == 1 && w == argv.size()) continue;
      if (w == 0 || place.empty()) continue;
      // The product prints a path with its invisible and control characters escaped (util/input_file.h).
      const std::string shown = l.rfind(place, 0) == 0 ? place : escape_controls(place);
      if (l.rfind(shown, 0) != 0) continue;
      static const std::regex rest(R"(^(:[0-9]+:[0-9]+)?: (error|warning): \S.*)");
      located = std::regex_match(l.substr(shown.size(), 4096), rest);
    }
    if (!located) return finding("an error line without its place: " + line.substr(0, 2048));
  }
  if (failed && !any) return finding("a refusal without an error line");
  return {};
}

}  // namespace

Verdict check_through_binary(const std::string& text, InputKind kind, const std::string& binary,
                             const std::string& dir) {
  const std::string file = dir + "/via-binary" + surface_extension(kind);
  const std::string log = dir + "/via-binary.log";
  std::vector<std::string> argv = binary_argv(text, kind, binary, file, dir);
  std::string cwd;
  if (kind == InputKind::kArgs) {  // run in the scratch folder: its own path and the probe's made absolute
    std::error_code ec;
    cwd = std::filesystem::absolute(dir, ec).string();
    argv[0] = std::filesystem::absolute(argv[0], ec).string();
    for (size_t k = 1; k < argv.size(); ++k)
      if (argv[k] == dir + "/args-probe.yaml") argv[k] = cwd + "/args-probe.yaml";
  }
  const pid_t pid = spawn_binary(argv, log, cwd);
  if (pid < 0) return finding("the binary could not be started: " + binary);
  g_binary_child.store(pid);
  int status = 0;
  rusage usage{};
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0; wait4(pid, &status, WNOHANG, &usage) == 0; ++polls) {
    // A hang: 10 s of the child's CPU, or 300 s of wall time (a run under nice on a busy machine may get a small
    // share of a core, so wall time alone would call a slow start a hang).
    const bool over_cpu = polls % 100 == 0 && process_cpu_seconds(pid) > 10;
    if (over_cpu || std::chrono::steady_clock::now() - start > std::chrono::seconds(300)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      g_binary_child.store(0);
      return finding(over_cpu ? "the binary hung (over 10 s of CPU)" : "the binary hung (over 300 s)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  g_binary_child.store(0);
  if (WIFSIGNALED(status)) return finding("the binary died of signal " + std::to_string(WTERMSIG(status)));
  const int rc = WEXITSTATUS(status);
  if (rc > 2) return finding("exit status " + std::to_string(rc) + " (expected 0, 1 or 2)");
  std::ifstream in(log);
  if (kind == InputKind::kArgs) {  // predict / plan: bounded time and memory (issue 49, "Targets")
    const double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    const double limit = argv.size() > 1 && argv[1] == "predict" ? kPredictCpuSeconds : 10;
    if (cpu > limit) return finding("the binary took " + std::to_string(cpu) + " s of CPU (bound " + std::to_string(limit) + " s)");
    if (static_cast<uint64_t>(usage.ru_maxrss) * 1024 > kPredictPeakBytes)
      return finding("the binary's peak memory was " + std::to_string(usage.ru_maxrss >> 10) + " MiB (bound 512 MiB)");
  }
  if (kind == InputKind::kProfile || kind == InputKind::kLog || kind == InputKind::kRunCommand ||
      kind == InputKind::kArgs) {
    // plan's exit 1 is a result ("no layout serves this request", said with its reasons), not a refusal
    const bool refused = kind == InputKind::kArgs ? rc == 2 : rc != 0;
    if (Verdict v = check_error_lines_located(in, argv, refused); !v.ok) return v;
    Verdict out;
    out.accepted = rc == 0;
    return out;
  }
  const std::regex located("^" + std::regex_replace(file, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                           "(:[0-9]+:[0-9]+)?: error: .+");
  for (std::string line; std::getline(in, line);) {
    if (line.find("error") == std::string::npos) continue;
    if (line.rfind("recipebench: error:", 0) == 0) return finding("an error without a location: " + line);
    if (kind == InputKind::kRecipe && line.find(": error: ") != std::string::npos &&
        !std::regex_match(line,
                          std::regex("^" + std::regex_replace(file, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                                     ":[0-9]+:[0-9]+: error: .+")))
      return finding("an error line without file:line:col: " + line);
    if ((kind == InputKind::kRunRecord || kind == InputKind::kHfConfig) &&
        line.find(": error: ") != std::string::npos && !std::regex_match(line, located))
      return finding("an error line without the file: " + line);
    if (kind == InputKind::kCatalog && line.rfind(file, 0) == 0 && !std::regex_match(line, located))
      return finding("a catalog error line without line:col: " + line);
  }
  Verdict out;
  out.accepted = rc == 0;
  return out;
}

}  // namespace recipebench::fuzz
