// A structured mutator over recipe YAML and run-record JSON text, for the fuzz harness (tests/fuzz/fuzz_main.cpp).
// It edits the lines and values of a seed document (delete, duplicate, retype, extreme numbers, unicode, deep
// nesting, anchors and aliases, merge keys, BOM, CRLF, NUL, byte flips), so most mutants stay close to a valid
// input and reach the checks behind the parser.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace recipebench::fuzz {

/// The mutation kinds (one is drawn per step; a mutant takes 1 to 4 steps).
enum class Mutation {
  kDeleteLine,
  kDuplicateLine,
  kMoveLine,
  kRetypeValue,
  kExtremeNumber,
  kUnicodeValue,
  kDeepNesting,
  kAlias,
  kBillionLaughs,
  kMergeKey,
  kBom,
  kCrlf,
  kNul,
  kControlCharacter,
  kByteFlip,
  kTruncate,
  kIndent,
  kSplice,
  kCount
};

/// Name of a mutation kind, for reports ("delete-line", ...).
const char* mutation_name(Mutation m);

/// Draws mutations from a seeded generator: the same seed gives the same mutants.
class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  /// A mutant of `seed` (text of a recipe or a run record) after 1 to 4 mutation steps; `donors` are other
  /// seeds that kSplice takes lines from. `applied` (when not null) receives the steps' kinds.
  std::string mutate(const std::string& seed, const std::vector<std::string>& donors,
                     std::vector<Mutation>* applied = nullptr);

  /// One step of kind `m` on `text`.
  std::string apply(Mutation m, const std::string& text, const std::vector<std::string>& donors);

 private:
  size_t pick(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_) : 0; }
  std::string extreme_number();
  std::string odd_value();
  std::mt19937_64 rng_;
};

}  // namespace recipebench::fuzz
