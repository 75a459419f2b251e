// A structured mutator over recipe YAML and run-record JSON text, for the fuzz harness (tests/fuzz/fuzz_main.cpp).
// It edits the lines and values of a seed document (delete, duplicate, retype, extreme numbers, unicode, deep
// nesting, anchors and aliases, merge keys, BOM, CRLF, NUL, byte flips), so most mutants stay close to a valid
// input and reach the checks behind the parser; and the kinds of the hostile inputs of 2026-12-02 that it missed
// (lone CR line ends, unclosed flow runs, huge numbers, duplicate keys, tags on collections, NUL in keys, many keys,
// long lists, tiny documents of YAML indicators: docs/fuzzing.md).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace recipebench::fuzz {

/// The mutation kinds (one is drawn per step, the big ones rarely: Mutator::draw; a mutant takes 1 to 4 steps).
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
  // The kinds of the hostile inputs of 2026-12-02 (issue 33) that the steps above did not make
  // (docs/fuzzing.md, "What the fuzzer learnt"):
  kLoneCr,          // every line end a lone CR (YAML 1.2 section 5.4), or one of them
  kFlowOpen,        // a value of 65 to 15 MiB unclosed '[' or '{' (inside the 16 MiB input cap)
  kHugeNumber,      // 309- and 400-digit integers, 1e400, -1e400, .nan / .inf in their spellings, NaN, Infinity
  kDuplicateKey,    // a key written twice in one mapping / object (YAML: also quoted the second time)
  kCollectionTag,   // a tag on a mapping or list (!!set, !!omap, !!python/object:..., !!str), or a core scalar
                    // tag that does not fit its value (!!null 1)
  kNulKey,          // a NUL in a key: raw, as YAML's "\0" escape, or JSON's "\u0000"
  kManyKeys,        // one mapping of 1,000 to 20,000 keys, or a JSON object of 1,000 to 200,000
  kLongList,        // a plain list of 9,999 to 20,000 items, without anchors or aliases
  kTinyDocument,    // the whole document one to four bytes of YAML indicators (",", "]", "- a\n,\n", ...)
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

  /// A mutant of a recipe's `run:` command (the top-level `run:` value, its block lines or its one line): flags
  /// inserted or given odd values, quotes opened or closed, variables and their assignments, line continuations
  /// added or removed, here-documents, `bash -c "..."` wrappers, comments; one in four also a general step on the
  /// command's lines (docs/fuzzing.md, "Surfaces").
  std::string mutate_command(const std::string& recipe, const std::vector<std::string>& donors);

  /// A mutant of `predict` / `plan` arguments (one a line): a value at or past its bound, empty, unicode or huge; an
  /// option inserted, dropped, repeated or joined with `=`; one in five also a general step.
  std::string mutate_args(const std::string& args, const std::vector<std::string>& donors);

  /// A mutant of a log input (a `#log-format:` line, then the log): a number of a step line made extreme, a step
  /// line repeated or cut, the `regex:` pattern mutated (groups, quantifiers nested to PCRE2's limits, unbalanced
  /// brackets, backreferences) with lines that make it backtrack; else a general step.
  std::string mutate_log(const std::string& log, const std::vector<std::string>& donors);

  /// One step of kind `m` on `text`.
  std::string apply(Mutation m, const std::string& text, const std::vector<std::string>& donors);

 private:
  /// One mutation kind: kFlowOpen, kManyKeys and kLongList (inputs of megabytes) one step in 300, the others
  /// uniformly.
  Mutation draw();
  size_t pick(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_) : 0; }
  std::string extreme_number();
  std::string odd_value();
  std::string huge_number(bool json);
  std::string flow_open();
  std::string lone_cr(const std::string& text);
  void duplicate_key(std::vector<std::string>& lines, bool json);
  void collection_tag(std::vector<std::string>& lines);
  void nul_key(std::vector<std::string>& lines, bool json);
  void many_keys_yaml(std::vector<std::string>& lines);
  void long_list_yaml(std::vector<std::string>& lines);
  std::string tiny_document();
  std::string command_value();
  void command_step(std::vector<std::string>& block, const std::string& indent);
  std::string regex_step(const std::string& pattern);
  size_t pick_count(std::initializer_list<size_t> counts) { return counts.begin()[pick(counts.size())]; }
  std::mt19937_64 rng_;
};

}  // namespace recipebench::fuzz
