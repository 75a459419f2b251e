#include "record/run_record_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "metrics/metrics.h"
#include "recipe/schema_check.h"
#include "recipe/source_doc.h"
#include "util/json_text.h"
#include "util/format.h"

namespace recipebench {

extern const char* const kRunRecordSchemaJson;  // generated from schema/run-record.schema.json

const Json& run_record_schema() {
  static const Json schema = Json::parse(kRunRecordSchemaJson);
  return schema;
}

namespace {

[[noreturn]] void fail_at(const std::string& file, int line, int column, const std::string& found,
                          const std::string& expected) {
  throw InputError(Diagnostic{file, line, column, "", found, expected});
}

/// The bytes of a regular file of at most max_bytes (opened without blocking, so a FIFO cannot hang us).
std::string read_regular_file(const std::string& file, size_t max_bytes) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail_at(file, 0, 0, std::string("cannot open: ") + std::strerror(errno), "a readable file");
  struct stat st {};
  std::string out;
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const bool fits = regular && static_cast<uint64_t>(st.st_size) <= max_bytes;
  for (char buf[65536]; fits && out.size() <= max_bytes;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!regular)
    fail_at(file, 0, 0,
            S_ISDIR(st.st_mode)    ? "a folder"
            : S_ISFIFO(st.st_mode) ? "not a regular file (a FIFO)"
                                   : "not a regular file",
            "a regular file");
  if (!fits || out.size() > max_bytes)
    fail_at(file, 0, 0, "a file of " + std::to_string(std::max<uint64_t>(st.st_size, out.size())) + " bytes",
            "at most " + std::to_string(max_bytes) + " bytes");
  return out;
}

/// 1-based line and column of byte `offset` of `text`.
std::pair<int, int> line_col(const std::string& text, size_t offset) {
  int line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

/// Throws when objects and arrays nest deeper than max_depth (brackets inside strings do not count).
void check_depth(const std::string& text, const std::string& file, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        const auto [line, col] = line_col(text, i);
        fail_at(file, line, col, "nesting " + std::to_string(depth) + " deep",
                "at most " + std::to_string(max_depth) + " levels of objects and arrays");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

/// A SourceDoc over a JSON value: field paths from JSON pointers, no line numbers (0 = unknown).
SourceDoc json_source(const Json& value, const std::string& file) {
  SourceDoc doc;
  doc.file = file;
  doc.value = value;
  doc.nodes[""] = SourceNode{};
  return doc;
}

}  // namespace

Json read_json_file(const std::string& file, const JsonLimits& limits) {
  const std::string text = read_regular_file(file, limits.max_bytes);
  check_depth(text, file, limits.max_depth);
  try {
    return parse_json_text(text, limits.max_depth);
  } catch (const JsonTextError& e) {
    const bool syntax = e.found.rfind("malformed JSON", 0) == 0;
    throw InputError(Diagnostic{file, e.line, e.column, e.path, e.found,
                                syntax ? "a run record written by recipebench run" : e.expected});
  }
}

namespace {

/// Stage 1: the record schema, then the recipe schema for the embedded recipe document.
Diagnostics schema_problems(const Json& doc, const std::string& file) {
  static const SchemaChecker record_checker(run_record_schema());
  Diagnostics out = record_checker.check(json_source(doc, file));
  if (!out.empty()) return out;
  static const SchemaChecker recipe_checker(recipe_schema());
  for (Diagnostic d : recipe_checker.check(json_source(doc["recipe"]["document"], file))) {
    d.path = "recipe.document" + (d.path.empty() ? "" : (d.path[0] == '[' ? "" : ".") + d.path);
    d.line = d.column = 0;
    out.push_back(std::move(d));
  }
  return out;
}

/// Stage 3: a complete record holds every step, numbered, and a window of at least 2 steps inside them.
Diagnostics completeness_problems(const RunRecord& r, const std::string& file) {
  Diagnostics out;
  auto add = [&](std::string path, std::string found, std::string expected) {
    out.push_back(Diagnostic{file, 0, 0, std::move(path), std::move(found), std::move(expected)});
  };
  const int n = static_cast<int>(r.steps.size());
  if (!r.metrics) add("metrics", "null", "an object (a complete record carries its metrics)");
  if (n != r.options.settings.steps)
    add("steps", counted(n, "step"),
        std::to_string(r.options.settings.steps) + " (settings.steps: a complete run holds every step)");
  for (int i = 0; i < n; ++i)
    if (r.steps[i].step != i) {
      add("steps[" + std::to_string(i) + "].step", std::to_string(r.steps[i].step), std::to_string(i));
      break;
    }
  const StepWindow w = r.options.settings.window;
  if (!w.inside(n) || w.steps() < 2)
    add("settings.window", "[" + std::to_string(w.first) + ", " + std::to_string(w.last) + "]",
        "a window of at least 2 steps inside steps 0.." + std::to_string(n - 1));
  if (r.metrics && (r.metrics->window.window.first != w.first || r.metrics->window.window.last != w.last))
    add("metrics.window",
        "[" + std::to_string(r.metrics->window.window.first) + ", " + std::to_string(r.metrics->window.window.last) +
            "]",
        "settings.window [" + std::to_string(w.first) + ", " + std::to_string(w.last) + "]");
  return out;
}

}  // namespace

CheckedRunRecord check_run_record(const Json& doc, const std::string& file) {
  CheckedRunRecord out;
  out.file = file;
  out.errors = schema_problems(doc, file);
  if (!out.errors.empty()) return out;
  RunRecord record;
  try {
    record = RunRecord::from_json(doc, file);
  } catch (const InputError& e) {
    out.errors.push_back(e.diagnostic());
    return out;
  }
  if (doc["model"]["proxy"].get<bool>() != (record.model_layers != record.model_layers_full))
    out.errors.push_back(Diagnostic{file, 0, 0, "model.proxy", doc["model"]["proxy"].dump(),
                                    std::string(record.model_layers != record.model_layers_full ? "true" : "false") +
                                        " (layers " + std::to_string(record.model_layers) + ", layers_full " +
                                        std::to_string(record.model_layers_full) + ")"});
  if (record.complete()) {
    for (auto& d : completeness_problems(record, file)) out.errors.push_back(std::move(d));
    if (out.errors.empty()) out.errors = record_figures_problems(record, file);
  }
  if (out.errors.empty()) out.record = std::move(record);
  return out;
}

}  // namespace recipebench
