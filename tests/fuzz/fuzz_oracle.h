// What the fuzz harness counts as a finding (docs/fuzzing.md): an exception that escapes recipebench's checks, an
// error without file:line:col (or file + field path for run records), a diagnostic that spans lines, a valid
// recipe whose rank map or leaderboard cannot be built, and through the binary: an exit status outside 0/1/2, a
// signal, or an error line without a location. Crashes and hangs end the harness itself (fuzz_main.cpp).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace recipebench::fuzz {

/// The input surfaces the harness fuzzes (docs/fuzzing.md, "Surfaces"): a recipe (validate), a run record (the
/// report's reading), a Hugging Face config.json (`models --config`, `model_params.config`), a hardware catalog file
/// (`--catalog`), a profile or calibration record (`predict --profile` / `--calibrate`), a training log with its
/// format on a first `#log-format:` line (`import --log-format`), a recipe's `run:` command (the launch check), and
/// `predict` / `plan` arguments (one a line).
enum class InputKind { kRecipe, kRunRecord, kHfConfig, kCatalog, kProfile, kLog, kRunCommand, kArgs };
constexpr int kInputKinds = 8;

/// "recipe", "record", "config", "catalog", "profile", "log", "run", "args": the surfaces' names in the summary and
/// on the command line.
const char* surface_name(InputKind kind);

/// The file extension of a kind's inputs: ".yaml", ".json", ".log" or ".args".
const char* surface_extension(InputKind kind);

/// The first line of a log input: "#log-format: SPEC" (SPEC empty: the format is detected), the rest the log.
constexpr const char* kLogFormatLine = "#log-format:";

/// The recipe `predict` reads a profile input with (`predict PROBE --profile FILE`): a recipe of the profiles'
/// model; and the recipe `import` reads a log input with.
void set_profile_probe(const std::string& text);
void set_import_probe(const std::string& text);

/// The most CPU seconds one log line may take to read (a `regex:` pattern near PCRE2's match limit costs
/// milliseconds, docs/fuzzing.md "Surfaces"): a line over it is a finding.
constexpr double kLogLineSeconds = 0.5;

/// The bounds of one `predict` / `plan` run through the binary (issue 49, "Targets"): CPU seconds (predict; plan's
/// search up to the hang limit) and peak resident memory.
constexpr double kPredictCpuSeconds = 5;
constexpr uint64_t kPredictPeakBytes = uint64_t{512} << 20;

/// The folder where in-process checks that read a file (a catalog) write their input, one per process.
void set_scratch_dir(const std::string& dir);

/// The recipe a catalog input is validated with through the binary (written under the scratch folder).
void set_probe_recipe(const std::string& text);

/// The outcome of one input: ok (no finding) or the reason; accepted when recipebench took it as valid.
struct Verdict {
  bool ok = true;
  bool accepted = false;
  std::string reason;
};

/// Checks `text` in this process: a recipe through validate_recipe_text (then, when valid, the rank map and the
/// leaderboard); a run record through the report's reading of records; a config.json through model_config_from_hf
/// (a refusal names config.json and its field; an accepted model counts finite, positive parameters, active at most
/// total); a catalog file through load_catalog_file (located diagnostics; an accepted catalog holds finite, positive
/// peaks, memory and bandwidths).
/// A profile: read as a run record, then as predict reads it (record/profile_source.h profiled_rank): a refusal names
/// the file and a field path on one line; an accepted profile holds finite, non-negative cells, a positive time for
/// every component with work, and at most 2 x the GPU's peak (bandwidth) implied (no prediction from a bad profile).
/// A log: read line by line as import reads it (each line's CPU time at most kLogLineSeconds), every problem
/// located at the log's line and column; a `regex:` pattern PCRE2 refuses is refused on one line. A `run:` command:
/// validate (the launch check's warnings located too) and launch_flags on the command's text. Arguments: nothing in
/// process (their check is through the binary).
Verdict check_in_process(const std::string& text, InputKind kind);

/// The pid of the binary check_through_binary is waiting for, or 0: the harness's signal handlers and watchdog
/// kill it (SIGKILL) before they end the harness, so no child outlives it. Lock-free, so safe to read in a handler.
extern std::atomic<pid_t> g_binary_child;

/// Writes `text` to a file under `dir` and runs `binary validate FILE` (recipes), `binary report FILE --out DIR`
/// (run records), `binary models --config FILE` (configs) or `binary validate --catalog FILE PROBE` (catalogs; PROBE is
/// the recipe set_probe_recipe gave), `binary predict PROBE --profile FILE` (and `--calibrate FILE` on odd
/// inputs), `binary import LOG --recipe PROBE --log-format F`, `binary validate FILE` (run commands) or
/// `binary ARGS...` (arguments; the bounds kPredictCpuSeconds and kPredictPeakBytes, errors at `<command line>`)
/// with a limit of 10 s of its CPU (300 s of wall time); checks the exit status and that every error
/// line is located. The binary runs in a process group of its own with default signal handling (docs/fuzzing.md).
Verdict check_through_binary(const std::string& text, InputKind kind, const std::string& binary,
                             const std::string& dir);

/// What one input's check used: CPU seconds of the checking thread, the process's peak resident bytes before and
/// after, the input's bytes.
struct ResourceUse {
  double cpu_seconds = 0;
  uint64_t peak_before = 0;
  uint64_t peak_after = 0;
  uint64_t input_bytes = 0;
};

/// Why `use` is beyond kind 1's bounds (issue 33: memory and time bounded by the input's size), or "": more than
/// `slow_seconds` of CPU, or a peak memory raised above 512 MiB + 64 bytes per input byte (the 2026-12-02 cases
/// took 250 bytes per byte of '[', and 2.5 s for a record object of 40,000 keys).
std::string resource_overrun(const ResourceUse& use, double slow_seconds);

/// Why a diagnostic's message is not true of `text` (the input it is about), or "" when nothing is seen:
/// a library's message (yaml-cpp's "bad file", nlohmann's "json.exception", "stoll", "std::", "bad_alloc"), "an empty
/// file" said of a document with content (lone CR line ends), aliases blamed ("aliases of aliases", "recursive
/// alias") where the input has none, "1 items",
/// a type word said twice ("null null", "mapping a mapping"), a plain .nan / .inf / integer of 21+ digits said to
/// be a "string". Kind 3 of issue 33 (docs/fuzzing.md).
std::string untrue_message(const std::string& message, const std::string& text);

/// What a recipe validate accepted must not hold, by a reading of `text` apart from recipebench's
/// (yaml-cpp's event parser): a key twice in one mapping, a tag on a mapping or list other than its own core tag,
/// a tag that is not a core one on a scalar, or a core scalar tag its text does not fit (`!!null 1`). "" when none.
/// Kinds 2 and 5 of issue 33. Call it only on text recipebench parsed (it does not guard yaml-cpp's faults).
std::string yaml_accepted_faults(const std::string& text);

/// The first key written twice in one object of the JSON `text` ("key 'status' twice in one object"), or "".
/// Kind 2 of issue 33: a run record accepted with one is a finding.
std::string json_duplicate_key(const std::string& text);

}  // namespace recipebench::fuzz
