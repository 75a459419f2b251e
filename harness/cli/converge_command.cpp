// `recipebench converge REFERENCE CANDIDATE [--recipe R] [--log-format F] [--format text|json] [thresholds]
// [--write-recipe R]`: the convergence check of two runs' loss curves (metrics/convergence.h, docs/correctness.md)
// with Megatron-Bridge validate_convergence's thresholds unless overridden. Inputs are run records (*.json) or
// training logs read by the import path's parsers (a log needs --recipe). Exit 0 on pass, 1 on fail or an input
// refused, 2 on usage errors.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.h"
#include "option_checks.h"
#include "logparse/log_format.h"
#include "logparse/log_reader.h"
#include "metrics/convergence.h"
#include "recipe/recipe_edit.h"
#include "recipe/validate.h"
#include "recipe/yaml_write.h"
#include "report/compare.h"
#include "util/atomic_file.h"
#include "util/format.h"
#include "util/input_file.h"

namespace recipebench::cli {

namespace {

struct ConvergeArgs {
  std::string reference, candidate, format = "text";
  std::optional<std::string> recipe, log_format, write_recipe, note;
  ConvergenceThresholds thresholds;
};

/// One input's loss curve and, for a run record, its settings block.
struct LoadedCurve {
  LossCurve curve;
  Json settings;  ///< null for a log
};

/// A CLI11 validator for a finite number from `lo` to `hi` (a fraction, a tolerance): "<value>, expected a finite
/// number from lo to hi".
CLI::Validator number_in(double lo, double hi, bool lo_open) {
  return CLI::Validator(
      [lo, hi, lo_open](std::string& s) -> std::string {
        const std::string expected = std::string(", expected a finite number ") + (lo_open ? "above " : "from ") +
                                     shortest(lo) + (lo_open ? " and at most " : " to ") + shortest(hi);
        const char* begin = s.c_str();
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(begin, &end);
        if (end == begin || *end != '\0') return "'" + s + "' is not a number" + expected;
        if (!std::isfinite(v) || errno == ERANGE || v < lo || v > hi || (lo_open && v == lo)) return s + expected;
        return "";
      },
      std::string("NUMBER in ") + (lo_open ? "(" : "[") + shortest(lo) + ", " + shortest(hi) + "]");
}

/// The loss curve of `file`: a run record (*.json, checked as `report` checks it) or a training log read with the
/// recipe's workload (as `import` reads it). Prints each problem located; nullopt when the input is refused.
std::optional<LoadedCurve> load_curve(const std::string& file, const ConvergeArgs& a) {
  LoadedCurve out;
  if (std::filesystem::path(file).extension() == ".json") {
    std::vector<RunRecordInput> runs;
    if (!add_one_run_record(file, runs)) return std::nullopt;
    const RunRecord& rec = runs.front().record;
    if (!rec.complete()) {  // a failed run's first steps, or one emulated rank, is no evidence of convergence
      std::string why;
      if (rec.error)
        why = " (error" + (rec.error->step ? " at step " + std::to_string(*rec.error->step) : std::string()) + ": " +
              rec.error->message + ")";
      std::cerr << Diagnostic{file, 0, 0, "status", to_string(rec.status) + why, "a complete run"}.to_string() << "\n";
      return std::nullopt;
    }
    for (const StepSample& s : rec.steps) out.curve.emplace_back(s.step, s.loss);
    out.settings = rec.options.to_json(rec.log.is_null());
    return out;
  }
  // A log: read with the recipe's workload and its (or --log-format's) format, as `import` reads it.
  const ValidatedRecipe v = validate_recipe_file(*a.recipe);
  for (const auto& d : v.errors) std::cerr << d.to_string() << "\n";
  if (!v.ok()) return std::nullopt;
  std::optional<LogFormatSpec> format;
  const std::optional<std::string> text = a.log_format ? a.log_format : v.recipe->bench.log_format;
  if (text) format = parse_log_format(*text);  // checked when parsing the options
  LogContext context;
  context.file = file;
  context.row_tokens = v.recipe->workload.row_tokens;
  if (v.recipe->workload.global_batch > 0) context.global_batch = v.recipe->workload.global_batch;
  context.gpus = std::max(1, v.recipe->gpu.count);
  try {
    const ParsedLog log = read_log_file(file, format, context);
    for (const auto& d : log.problems) std::cerr << d.to_string() << "\n";
    if (!log.problems.empty()) return std::nullopt;
    if (log.steps.empty()) {
      std::cerr << file << ": error: no step lines, expected a training log ("
                << (format ? format->to_string() : std::string("megatron, torchtitan or hf, detected")) << ")\n";
      return std::nullopt;
    }
    for (const StepSample& s : log.steps) out.curve.emplace_back(s.step, s.loss);
  } catch (const InputError& e) {
    std::cerr << e.diagnostic().to_string() << "\n";
    return std::nullopt;
  } catch (const std::exception& e) {
    std::cerr << file << ": error: " << e.what() << "\n";
    return std::nullopt;
  }
  return out;
}

/// The note written beside the figures in the recipe: the two inputs and the thresholds.
std::string default_note(const ConvergeArgs& a) {
  return "reference " + std::filesystem::path(a.reference).filename().string() + ", candidate " +
         std::filesystem::path(a.candidate).filename().string() +
         "; recipebench converge, Megatron-Bridge validate_convergence thresholds: " + thresholds_text(a.thresholds);
}

/// The block as it sits under `correctness:` (two spaces, then four for its members), to paste.
std::string yaml_block_text(const Json& block) {
  std::string out = "  convergence:\n";
  const std::string body = yaml_text(block);
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    out += "    " + body.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

/// Writes the check's block into the recipe (atomically, the rest of the file kept) after validating the edited
/// text; prints the block to paste instead when the file cannot be edited. Returns the exit code.
int write_recipe(const std::string& recipe, const Json& block, std::ostream& msg) {
  const std::string paste = yaml_block_text(block);
  std::string text;
  try {
    text = read_input_file(recipe);
  } catch (const std::exception& e) {
    std::cerr << recipe << ": error: cannot read: " << e.what() << "\n";
    return kFailed;
  }
  std::string edited;
  try {
    edited = set_convergence_block(text, recipe, block);
  } catch (const InputError& e) {
    std::cerr << e.diagnostic().to_string() << "\nnot written; paste this under correctness:\n" << paste;
    return kFailed;
  }
  const ValidatedRecipe v = validate_recipe_text(edited, recipe);
  if (!v.ok()) {
    for (const auto& d : v.errors) std::cerr << d.to_string() << "\n";
    std::cerr << recipe << ": error: not written: the recipe with this block would not validate (above); the block:\n"
              << paste;
    return kFailed;
  }
  try {
    write_file_atomic(recipe, edited);
  } catch (const std::exception& e) {
    std::cerr << recipe << ": error: cannot write: " << e.what() << "\n";
    return kFailed;
  }
  msg << "wrote correctness.convergence into " << recipe << "\n";
  return kOk;
}

int run_converge(const ConvergeArgs& a) {
  const auto ref = load_curve(a.reference, a);
  const auto cand = load_curve(a.candidate, a);
  if (!ref || !cand) return kFailed;
  const ConvergenceResult r = check_convergence(ref->curve, cand->curve, a.thresholds);
  std::vector<std::string> warnings = settings_warnings(ref->settings, cand->settings);
  if (const auto same = same_input_warning(a.reference, a.candidate)) warnings.insert(warnings.begin(), *same);
  std::error_code ec;
  const bool same_file = std::filesystem::equivalent(a.reference, a.candidate, ec);
  if (same_file)
    warnings.push_back("the candidate is the reference's own file: a run against itself always agrees (nothing "
                       "written into a recipe)");
  const bool json = a.format == "json";
  const Json block = convergence_block(r, a.note ? *a.note : default_note(a));
  if (json) {
    Json j = Json{{"reference", a.reference}, {"candidate", a.candidate}};
    const Json figures = convergence_to_json(r);
    for (const auto& [k, v] : figures.items()) j[k] = v;
    j["warnings"] = warnings;
    j["recipe_block"] = block;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "reference: " << a.reference << "\ncandidate: " << a.candidate << "\n";
    for (const auto& w : warnings) std::cout << "warning: " << w << "\n";
    std::cout << convergence_to_text(r);
  }
  if (a.write_recipe && !same_file) {
    const int rc = write_recipe(*a.write_recipe, block, json ? std::cerr : std::cout);
    if (rc != kOk) return rc;
  }
  return r.passed() ? kOk : kFailed;
}

}  // namespace

void add_converge_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand(
      "converge",
      "Check a candidate run's loss curve against a reference run's (Megatron-Bridge validate_convergence)");
  auto a = std::make_shared<ConvergeArgs>();
  ConvergenceThresholds& t = a->thresholds;
  cmd->add_option("REFERENCE", a->reference, "The reference run: a run record (*.json) or a training log")
      ->required()
      ->check(existing_file("a run record (*.json) or a training log"));
  cmd->add_option("CANDIDATE", a->candidate, "The candidate run: a run record (*.json) or a training log")
      ->required()
      ->check(existing_file("a run record (*.json) or a training log"));
  cmd->add_option("--recipe", a->recipe, "The recipe the logs' runs followed (needed for a log; as import reads it)")
      ->check(existing_file("a recipe file (*.yaml)"));
  cmd->add_option("--log-format", a->log_format,
                  "megatron, torchtitan, hf or regex:<pattern> (default: the recipe's bench.log_format, else "
                  "detected)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            return parse_log_format(s) ? "" : "'" + s + "', expected megatron, torchtitan, hf or regex:<pattern>";
          },
          "FORMAT"));
  cmd->add_option("--format", a->format, "text (default) or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--min-correlation", t.min_correlation, "Least Pearson correlation (default 0.95)")
      ->check(number_in(-1, 1, false));
  cmd->add_option("--high-loss-tolerance", t.high_loss_tolerance,
                  "Relative tolerance where the reference loss is above 2.0 (default 0.10)")
      ->check(number_in(0, 1e9, false));
  cmd->add_option("--medium-loss-tolerance", t.medium_loss_tolerance,
                  "Relative tolerance where the reference loss is above 0.5 and at most 2.0 (default 0.05)")
      ->check(number_in(0, 1e9, false));
  cmd->add_option("--low-loss-tolerance", t.low_loss_tolerance,
                  "Relative tolerance where the reference loss is at most 0.5 (default 0.02)")
      ->check(number_in(0, 1e9, false));
  cmd->add_option("--max-outlier-ratio", t.max_outlier_ratio,
                  "Most pointwise failures and most outliers, as a fraction of the steps (default 0.1)")
      ->check(number_in(0, 1, false));
  cmd->add_option("--outlier-sigma", t.outlier_sigma, "Standard deviations that make a residual an outlier (default 3)")
      ->check(number_in(0, 1e9, true));
  cmd->add_option("--final-loss-tolerance", t.final_loss_tolerance,
                  "Relative tolerance of the final loss (default 0.03)")
      ->check(number_in(0, 1e9, false));
  cmd->add_option("--skip-first-fraction", t.skip_first_fraction,
                  "Fraction of the compared steps left out at the start (default 0)")
      ->check(number_in(0, 1, false));
  cmd->add_option("--min-steps", t.min_steps, "Least steps compared (default 10)")
      ->check(integer_in(2, 1LL << 40));
  cmd->add_option("--write-recipe", a->write_recipe,
                  "Write the check's correctness.convergence block into this recipe (the rest of the file kept)")
      ->check(existing_file("a recipe file (*.yaml)"));
  cmd->add_option("--note", a->note, "The block's note (default: the two inputs and the thresholds)");
  cmd->callback([&run, a] {
    for (const std::string* f : {&a->reference, &a->candidate})
      if (std::filesystem::path(*f).extension() != ".json" && !a->recipe)
        throw CLI::ValidationError(*f, "not a run record (*.json): a training log needs --recipe");
    run = [a]() -> int { return run_converge(*a); };
  });
}

}  // namespace recipebench::cli
