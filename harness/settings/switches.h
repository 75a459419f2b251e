// The run switches as one table (docs/architecture.md, "Adding a switch"): one row per bench.* switch with its
// recipe field, command-line option, owner, settings member, when it has no effect on a layout and what the
// console then says; beside it the combinations no run can honour. Every loop over the switches is here: the
// recipe / command-line merge, the notes, the conflict check, the record's fields and their reading back, the
// refusal by a backend that runs the recipe's own command. The CLI adds one option per row (cli/run_command.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "layout/rank_map.h"
#include "recipe/diagnostic.h"
#include "recipe/json_fields.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"
#include "settings/run_options.h"

namespace recipebench {

/// Who acts on a switch: the harness itself, or the backend that trains (a backend that runs the recipe's own
/// command refuses every backend switch that is engaged: its command's are its own).
enum class SwitchOwner { kHarness, kBackend };

/// Whether the step-time model (plan/step_time.h, docs/step-time.md) prices a switch: `predict` takes its option,
/// `plan` engages it wherever its own no-effect rule says it has an effect, and the prediction names it as priced.
enum class SwitchPricing { kNotPriced, kPriced };

/// Where a switch of value type T lives: its optional field in the bench block (the recipe's and the command
/// line's overlay alike) and its member in the effective settings.
template <typename T>
struct SwitchMember {
  std::optional<T> RecipeBench::*bench;
  T RunSettings::*setting;
};
/// The value types a switch can hold.
using SwitchMembers = std::variant<SwitchMember<bool>, SwitchMember<int>, SwitchMember<int64_t>, SwitchMember<Kernels>,
                                   SwitchMember<EpDispatch>>;

/// What a row's "no effect" rule looks at: the recipe, the effective settings and the rank map (nullopt when the
/// layout does not hold for the model; the backend then refuses the layout with the reason).
struct SwitchContext {
  const Recipe& recipe;
  const RunSettings& settings;
  const std::optional<RankMap>& map;
};

/// One run switch.
struct RunSwitch {
  const char* field;   ///< bench.<field> in a recipe, settings.<field> in a run record
  const char* option;  ///< the command-line option, "--overlap-tp-comm"
  SwitchOwner owner;
  SwitchMembers member;
  const char* help;  ///< the option's help; "[=true|false]" is said by the CLI for a boolean
  /// A per-node backend's refusal: "(the <backend> backend runs the recipe's own command: its <owned> the
  /// command's)", e.g. "tensor parallelism is".
  const char* owned;
  /// When the engaged switch has no effect: the console's note after "bench.<field>: ", e.g. "true has no effect on
  /// TP1 PP1 EP1 DP1 (TP 1: nothing is reduce-scattered over tensor parallelism)"; "" when it has an effect.
  /// nullptr: it always has one.
  std::string (*no_effect)(const SwitchContext&) = nullptr;
  /// Recorded as settings.<field>_applies when the switch is on (whether no_effect found an effect).
  std::optional<bool> LayoutEffects::*applies = nullptr;
  int64_t min = 1, max = 2'147'483'647;               ///< an integer switch's bounds (command line, record)
  bool required = false;                              ///< a record must list it (settings.<field>)
  SwitchPricing pricing = SwitchPricing::kNotPriced;  ///< whether the step-time model prices it
};

/// The table, in the record's and the CLI help's order.
const std::vector<RunSwitch>& run_switches();
/// The row of bench.<field>; throws std::out_of_range when there is none.
const RunSwitch& run_switch(const std::string& field);

/// A switch's value as text, "true", "4096", "fixed_capacity".
std::string switch_value_text(const RunSwitch& s, const RunSettings& settings);
/// Whether bench.<field> was given in `bench` (a recipe's block or the command line's overlay).
bool switch_given(const RunSwitch& s, const RecipeBench& bench);
/// Whether the effective switch is engaged: a boolean that differs from its default, any other value given in the
/// recipe or on the command line. Only an engaged switch gets a note or a per-node refusal.
bool switch_engaged(const RunSwitch& s, const RunSettings& settings, const RecipeBench& recipe,
                    const RecipeBench& overlay);

/// Sets bench.<field> of `bench` (the command line's overlay) from its text: "true" / "false" for a boolean, a
/// decimal integer within the row's bounds, or a name of the closed set. Throws std::invalid_argument naming the
/// option and what it takes when `text` is none of those.
void set_switch_text(const RunSwitch& s, const std::string& text, RecipeBench& bench);
/// Every row's effective value: the command line's overlay where it gives one, else the recipe's bench block, else
/// RunSettings' default.
void merge_switches(const RecipeBench& recipe, const RecipeBench& overlay, RunSettings& settings);
/// The layout effects of the switches that are on (LayoutEffects, from each row's no_effect).
LayoutEffects layout_effects(const SwitchContext& ctx);
/// The console's notes, one per engaged switch without effect: "recipebench run: bench.overlap_tp_comm: true has
/// no effect on TP1 PP1 EP1 DP1 (TP 1: ...)".
std::vector<std::string> switch_notes(const SwitchContext& ctx, const RecipeBench& recipe, const RecipeBench& overlay);

/// The boolean switches the step-time model prices (pricing kPriced), in the table's order: the ones `predict` takes
/// on its command line and `plan` engages.
std::vector<const RunSwitch*> priced_switches();
/// Sets every priced boolean switch of `bench` to whether it has an effect on `ctx`'s layout (its own no_effect rule,
/// the one `run` notes): on where it applies, off where it has none. The switches `plan` proposes with a layout
/// (ctx.map must be set: the layout's rank map).
void engage_priced_switches(const SwitchContext& ctx, RecipeBench& bench);
/// Every switch `bench` gives, as a recipe's bench block writes it: {"overlap_tp_comm": true, "ep_dispatch":
/// "fixed_capacity", ...} (the table's order; absent ones left out). What a proposed recipe carries.
Json bench_switches_json(const RecipeBench& bench);

/// The located diagnostic of a run setting's value `found` against `expected`: at "<command line>" with field
/// `option` (e.g. "--format") when the command line gave it, else at the recipe field `pointer` (e.g.
/// "/bench/log_format") of `src`, with its file:line:column.
Diagnostic setting_diagnostic(const SourceDoc& src, bool on_command_line, const std::string& option,
                              const std::string& pointer, const std::string& found, const std::string& expected);
/// The located diagnostic of a switch's value `found` against `expected`: at "<command line>" with the option
/// when the overlay gave it, else at /bench/<field> of `src` (file:line:column).
Diagnostic switch_diagnostic(const RunSwitch& s, const SourceDoc& src, const RecipeBench& overlay,
                             const std::string& found, const std::string& expected);
/// A per-node backend's refusals (one per engaged backend switch), e.g. "<command line>: error: --kernels: ops,
/// expected absent (the command backend runs the recipe's own command: its kernels are the command's)".
Diagnostics per_node_refusals(const std::string& backend, const SwitchContext& ctx, const SourceDoc& src,
                              const RecipeBench& recipe, const RecipeBench& overlay);

/// A combination of switches no run can honour: when `check` returns an expected text, the switch `field` is
/// refused with it (located like switch_diagnostic) and the run stops with "recipebench run: <why>; nothing was run"
/// (exit 2).
struct SwitchConflict {
  const char* field;
  std::string (*check)(const SwitchContext&);
  const char* why;
};
/// bench.fail_on_sync with --profile, bench.overlap_p2p_comm with --profile on PP > 1, bench.fail_on_sync with the
/// host_splits dispatcher on CUDA with EP > 1.
const std::vector<SwitchConflict>& switch_conflicts();

/// Writes every row into a record's `settings` object: harness switches always, backend switches when
/// `per_rank_backend` (a command's are its own), and each on switch's <field>_applies.
void switches_to_json(const RunSettings& settings, const LayoutEffects& effects, bool per_rank_backend, Json& out);
/// Reads back what switches_to_json wrote from `s` (the record's settings object at path "settings"); an absent
/// field keeps its default (a record older than its switch). Throws InputError located at settings.<field>.
void switches_from_json(const JsonFields& f, const Json& s, RunSettings& settings, LayoutEffects& effects);

}  // namespace recipebench
