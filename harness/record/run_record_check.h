// Run records on the way in (`report`): read with bounds, checked against schema/run-record.schema.json, typed,
// and their figures re-derived from their steps. A record that fails any check is refused with file and field.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "recipe/diagnostic.h"
#include "record/run_record.h"
#include "util/json.h"

namespace recipebench {

/// Limits of a JSON input read by read_json_file.
struct JsonLimits {
  size_t max_bytes = size_t{64} << 20;  ///< 64 MiB: a record of 100,000 steps is about 45 MB
  int max_depth = 64;                   ///< nesting of objects and arrays (a run record nests 6 deep)
};

/// Reads and parses one JSON file within `limits`: a regular file only (a FIFO or a device is refused, never
/// read), at most max_bytes, nested at most max_depth deep (checked before parsing, so no parser recursion
/// meets a deeper document). Throws InputError: `file: error: not a regular file (a FIFO)`,
/// `file: error: a file of N bytes, expected at most 67108864`, `file:L:C: error: nesting 65 deep, expected
/// at most 64`, `file:L:C: error: malformed JSON (...)`; a key twice in one object or a number beyond a double is
/// refused at its token with its field path (parse_json_text): `file:L:C: error: status: duplicate key 'status'
/// (first at line 1, column 2), expected each key once per object`, `file:L:C: error: metrics.x: number 1e400 out
/// of range, expected a number within +-1.8e308`. Objects are built in linear time in their keys.
Json read_json_file(const std::string& file, const JsonLimits& limits = {});

/// The schema of run records, schema/run-record.schema.json, embedded at build time and parsed once.
const Json& run_record_schema();

/// The outcome of checking one run record.
struct CheckedRunRecord {
  std::string file;
  Diagnostics errors;               ///< empty when the record passed every check
  std::optional<RunRecord> record;  ///< set when errors is empty
  bool ok() const { return errors.empty(); }
};

/// Checks a parsed run record `doc` read from `file`, in order, stopping at the first stage that fails:
///  1. schema/run-record.schema.json, and the recipe schema for `recipe.document` (paths prefixed with it);
///  2. RunRecord::from_json (types and integer ranges);
///  3. a complete record's consistency: every one of settings.steps steps present and numbered 0..n-1, a
///     metrics block whose window is settings.window, a window of at least 2 steps inside the steps;
///  4. its figures re-derived from its steps (record_figures_problems).
/// Never throws for a bad record: each problem is a diagnostic `file: error: <field path>: <found>, expected ...`.
CheckedRunRecord check_run_record(const Json& doc, const std::string& file);

/// Where a complete record's stored figures differ from the ones derived from its steps and inputs
/// (docs/metrics.md): window tokens, window seconds, mean step seconds, tokens/s/GPU and step-time CV from the
/// window's steps and environment.device.count; MFU from metrics.mfu_inputs (N of the registry model at the
/// layers that ran, when the model is in the registry and no config.json was used; peak FLOP/s of the recipe's
/// GPU type); $ / 1M tokens from metrics.price; GPU-hours from wall_seconds. Relative tolerance 1e-6.
Diagnostics record_figures_problems(const RunRecord& record, const std::string& file);

}  // namespace recipebench
