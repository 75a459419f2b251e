// What the fuzz harness counts as a finding (docs/fuzzing.md): an exception that escapes recipebench's checks, an
// error without file:line:col (or file + field path for run records), a diagnostic that spans lines, a valid
// recipe whose rank map or leaderboard cannot be built, and through the binary: an exit status outside 0/1/2, a
// signal, or an error line without a location. Crashes and hangs end the harness itself (fuzz_main.cpp).
#pragma once

#include <string>

namespace recipebench::fuzz {

enum class InputKind { kRecipe, kRunRecord };

/// The outcome of one input: ok (no finding) or the reason; accepted when recipebench took it as valid.
struct Verdict {
  bool ok = true;
  bool accepted = false;
  std::string reason;
};

/// Checks `text` in this process: a recipe through validate_recipe_text (then, when valid, the rank map and the
/// leaderboard); a run record through the report's reading of records.
Verdict check_in_process(const std::string& text, InputKind kind);

/// Writes `text` to a file under `dir` and runs `binary validate FILE` (recipes) or `binary report FILE --out DIR`
/// (run records) with a 10 s limit; checks the exit status and that every error line is located.
Verdict check_through_binary(const std::string& text, InputKind kind, const std::string& binary,
                             const std::string& dir);

}  // namespace recipebench::fuzz
