#include "settings/switches.h"

#include <stdexcept>
#include <type_traits>

namespace recipebench {

namespace {

// ---- When a switch has no effect (each row's no_effect) ----

/// "<value> has no effect on <layout> (<why>)", the common form of a note.
std::string on_layout(const SwitchContext& c, const std::string& value, const std::string& why) {
  return value + " has no effect on " + c.recipe.layout.label + " (" + why + ")";
}

/// A distributed optimizer has a group of several ranks to reduce-scatter over and all-gather from: DP > 1 or
/// EDP > 1 (with EP = TP = 1 the experts are among the dense parameters and EDP = DP).
bool shards_optimizer(const SwitchContext& c) { return c.map && (c.map->dp > 1 || c.map->edp > 1); }

std::string grad_reduce_no_effect(const SwitchContext& c) {
  if (!c.map || shards_optimizer(c)) return "";
  return on_layout(c, "true", "DP 1 and EDP 1: no gradient is reduce-scattered");
}

std::string bucket_no_effect(const SwitchContext& c) {
  if (c.settings.overlap_grad_reduce) return "";
  return std::to_string(c.settings.grad_reduce_bucket_elements) +
         " has no effect without bench.overlap_grad_reduce: true";
}

std::string param_gather_no_effect(const SwitchContext& c) {
  if (!c.map || shards_optimizer(c)) return "";
  return on_layout(c, "true", "DP 1 and EDP 1: no parameter is all-gathered");
}

std::string p2p_no_effect(const SwitchContext& c) {
  if (c.recipe.layout.pp > 1) return "";
  return on_layout(c, "true", "PP 1: nothing is sent between pipeline stages");
}

std::string tp_no_effect(const SwitchContext& c) {
  if (c.recipe.layout.tp > 1) return "";
  return on_layout(c, "true", "TP 1: nothing is reduce-scattered over tensor parallelism");
}

std::string fail_on_sync_no_effect(const SwitchContext& c) {
  if (c.settings.device != Device::kCpu) return "";
  return "no CUDA device, nothing to check (device cpu: the step never waits for a GPU)";
}

std::string ep_dispatch_no_effect(const SwitchContext& c) {
  if (c.recipe.layout.ep > 1) return "";
  return on_layout(c, to_string(c.settings.ep_dispatch), "EP 1: every expert is local, no row is dispatched");
}

// ---- The conflicts (switch_conflicts) ----

std::string fail_on_sync_with_profile(const SwitchContext& c) {
  if (!c.settings.fail_on_sync || !c.settings.profile) return "";
  return "false or absent with --profile (it synchronises the device between the phases and components it times)";
}

std::string p2p_with_profile(const SwitchContext& c) {
  if (!c.settings.overlap_p2p_comm || !c.settings.profile || c.recipe.layout.pp < 2) return "";
  return "false or absent with --profile on PP " + std::to_string(c.recipe.layout.pp) +
         " (it synchronises the device after every pass, which would wait for the receives posted ahead)";
}

std::string fail_on_sync_with_host_splits(const SwitchContext& c) {
  const RunSettings& s = c.settings;
  if (!s.fail_on_sync || s.device != Device::kCuda || c.recipe.layout.ep <= 1 ||
      s.ep_dispatch != EpDispatch::kHostSplits)
    return "";
  return "false or absent with bench.ep_dispatch host_splits on EP " + std::to_string(c.recipe.layout.ep) +
         " (its all-to-all's split sizes are read on the host, which the check fails on): use --ep-dispatch "
         "fixed_capacity";
}

// ---- One value, by type ----

std::string text_of(bool v) { return v ? "true" : "false"; }
std::string text_of(int v) { return std::to_string(v); }
std::string text_of(int64_t v) { return std::to_string(v); }
template <typename E>
std::string text_of(E v) {
  return to_string(v);
}

Json json_of(bool v) { return Json(v); }
Json json_of(int v) { return Json(v); }
Json json_of(int64_t v) { return Json(v); }
template <typename E>
Json json_of(E v) {
  return Json(to_string(v));
}

template <typename T>
T read_value(const RunSwitch& row, const JsonFields& f, const Json& v, const std::string& path) {
  if constexpr (std::is_same_v<T, bool>) {
    return f.boolean(v, path);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(f.integer(v, path, row.min, row.max));
  } else {
    return f.closed<T>(v, path);
  }
}

/// The value a RunSettings has before any merge (the switch's default).
const RunSettings& defaults() {
  static const RunSettings d;
  return d;
}

/// Located diagnostic for `c`'s refusal of an engaged switch: "false or absent (why)" for a boolean (its
/// default "or absent"), "absent (why)" for a value.
std::string refused_expected(const RunSwitch& s, const std::string& why) {
  if (const auto* b = std::get_if<SwitchMember<bool>>(&s.member))
    return text_of(defaults().*(b->setting)) + " or absent " + why;
  return "absent " + why;
}

}  // namespace

const std::vector<RunSwitch>& run_switches() {
  using H = SwitchOwner;
  static const std::vector<RunSwitch> table{
      {"steps", "--steps", H::kHarness, SwitchMember<int>{&RecipeBench::steps, &RunSettings::steps},
       "Steps to run, numbered 0..N-1 (default: the recipe's bench.steps, else 20)", nullptr, nullptr, nullptr, 1,
       2'147'483'647, true},
      {"deterministic", "--deterministic", H::kBackend,
       SwitchMember<bool>{&RecipeBench::deterministic, &RunSettings::deterministic},
       "true: the same bits for the same seed (default: the recipe's bench.deterministic, else true); false allows "
       "faster non-deterministic kernels",
       "determinism is"},
      {"kernels", "--kernels", H::kBackend, SwitchMember<Kernels>{&RecipeBench::kernels, &RunSettings::kernels},
       "fused: the backend's fused CUDA kernels where they apply; ops: libtorch operations everywhere, the reference "
       "path (default: the recipe's bench.kernels, else fused)",
       "kernels are"},
      {"fail_on_sync", "--fail-on-sync", H::kBackend,
       SwitchMember<bool>{&RecipeBench::fail_on_sync, &RunSettings::fail_on_sync},
       "Fail the run on a call that makes the host wait for the GPU between a step's first forward pass and the "
       "optimizer (CUDA's synchronisation-debug mode; default: the recipe's bench.fail_on_sync, else false)",
       "synchronisation is", fail_on_sync_no_effect},
      {"overlap_grad_reduce", "--overlap-grad-reduce", H::kBackend,
       SwitchMember<bool>{&RecipeBench::overlap_grad_reduce, &RunSettings::overlap_grad_reduce},
       "Reduce-scatter the gradients in buckets during the last microbatch's backward pass (default: the recipe's "
       "bench.overlap_grad_reduce, else false; no effect with DP 1 and EDP 1)",
       "gradient reduction is", grad_reduce_no_effect, &LayoutEffects::overlap_grad_reduce_applies, 1, 2'147'483'647,
       false, SwitchPricing::kPriced},
      {"grad_reduce_bucket_elements", "--grad-reduce-bucket-elements", H::kBackend,
       SwitchMember<int64_t>{&RecipeBench::grad_reduce_bucket_elements, &RunSettings::grad_reduce_bucket_elements},
       "Gradient elements per bucket with --overlap-grad-reduce (default: the recipe's "
       "bench.grad_reduce_bucket_elements, else 40000000)",
       "gradient reduction is", bucket_no_effect},
      {"overlap_param_gather", "--overlap-param-gather", H::kBackend,
       SwitchMember<bool>{&RecipeBench::overlap_param_gather, &RunSettings::overlap_param_gather},
       "Defer the distributed optimizer's parameter all-gather into the next step's forward passes, each module "
       "waiting for its own buckets (default: the recipe's bench.overlap_param_gather, else false; no effect with "
       "DP 1 and EDP 1)",
       "optimizer is", param_gather_no_effect, &LayoutEffects::overlap_param_gather_applies, 1, 2'147'483'647, false,
       SwitchPricing::kPriced},
      {"overlap_p2p_comm", "--overlap-p2p-comm", H::kBackend,
       SwitchMember<bool>{&RecipeBench::overlap_p2p_comm, &RunSettings::overlap_p2p_comm},
       "Post the pipeline's receives ahead, so each transfer overlaps the passes before its own (default: the "
       "recipe's bench.overlap_p2p_comm, else false; no effect with PP 1)",
       "pipeline is", p2p_no_effect, nullptr, 1, 2'147'483'647, false, SwitchPricing::kPriced},
      {"overlap_tp_comm", "--overlap-tp-comm", H::kBackend,
       SwitchMember<bool>{&RecipeBench::overlap_tp_comm, &RunSettings::overlap_tp_comm},
       "Each column-parallel region's backward reduce-scatters its input gradient while it computes its weight "
       "gradients, the shared expert's forward one while the routed experts compute (default: the recipe's "
       "bench.overlap_tp_comm, else false; no effect with TP 1)",
       "tensor parallelism is", tp_no_effect, nullptr, 1, 2'147'483'647, false, SwitchPricing::kPriced},
      {"ep_dispatch", "--ep-dispatch", H::kBackend,
       SwitchMember<EpDispatch>{&RecipeBench::ep_dispatch, &RunSettings::ep_dispatch},
       "Expert-parallel dispatcher of the MoE layers: host_splits (split sizes read on the host) or fixed_capacity "
       "(fixed blocks per peer, no host synchronisation; default: the recipe's bench.ep_dispatch, else host_splits; "
       "no effect with EP 1)",
       "expert dispatch is", ep_dispatch_no_effect, nullptr, 1, 2'147'483'647, false, SwitchPricing::kPriced},
  };
  return table;
}

const RunSwitch& run_switch(const std::string& field) {
  for (const RunSwitch& s : run_switches())
    if (field == s.field) return s;
  throw std::out_of_range("no run switch bench." + field);
}

std::string switch_value_text(const RunSwitch& s, const RunSettings& settings) {
  return std::visit([&](const auto& m) { return text_of(settings.*(m.setting)); }, s.member);
}

bool switch_given(const RunSwitch& s, const RecipeBench& bench) {
  return std::visit([&](const auto& m) { return (bench.*(m.bench)).has_value(); }, s.member);
}

bool switch_engaged(const RunSwitch& s, const RunSettings& settings, const RecipeBench& recipe,
                    const RecipeBench& overlay) {
  if (const auto* b = std::get_if<SwitchMember<bool>>(&s.member))
    return settings.*(b->setting) != defaults().*(b->setting);
  return switch_given(s, recipe) || switch_given(s, overlay);
}

void set_switch_text(const RunSwitch& s, const std::string& text, RecipeBench& bench) {
  auto bad = [&](const std::string& expected) {
    return std::invalid_argument(std::string(s.option) + ": '" + text + "', expected " + expected);
  };
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(*(bench.*(m.bench)))>;
        if constexpr (std::is_same_v<T, bool>) {
          if (text != "true" && text != "false") throw bad("true or false");
          bench.*(m.bench) = text == "true";
        } else if constexpr (std::is_integral_v<T>) {
          size_t used = 0;
          long long v = 0;
          try {
            v = std::stoll(text, &used);
          } catch (const std::exception&) {
            used = 0;
          }
          if (used == 0 || used != text.size() || v < s.min || v > s.max)
            throw bad("an integer in " + std::to_string(s.min) + ".." + std::to_string(s.max));
          bench.*(m.bench) = static_cast<T>(v);
        } else {
          const std::optional<T> e = parse_enum<T>(text);
          if (!e) throw bad(enum_choices<T>());
          bench.*(m.bench) = *e;
        }
      },
      s.member);
}

void merge_switches(const RecipeBench& recipe, const RecipeBench& overlay, RunSettings& settings) {
  for (const RunSwitch& s : run_switches())
    std::visit(
        [&](const auto& m) {
          if (const auto& v = overlay.*(m.bench))
            settings.*(m.setting) = *v;
          else if (const auto& r = recipe.*(m.bench))
            settings.*(m.setting) = *r;
        },
        s.member);
}

LayoutEffects layout_effects(const SwitchContext& ctx) {
  LayoutEffects e;
  for (const RunSwitch& s : run_switches()) {
    const auto* b = std::get_if<SwitchMember<bool>>(&s.member);
    if (!s.applies || !b || !(ctx.settings.*(b->setting)) || !ctx.map) continue;
    e.*(s.applies) = s.no_effect(ctx).empty();
  }
  return e;
}

std::vector<std::string> switch_notes(const SwitchContext& ctx, const RecipeBench& recipe, const RecipeBench& overlay) {
  std::vector<std::string> notes;
  for (const RunSwitch& s : run_switches()) {
    if (!s.no_effect || !switch_engaged(s, ctx.settings, recipe, overlay)) continue;
    if (const std::string why = s.no_effect(ctx); !why.empty())
      notes.push_back("recipebench run: bench." + std::string(s.field) + ": " + why);
  }
  return notes;
}

std::vector<const RunSwitch*> priced_switches() {
  std::vector<const RunSwitch*> out;
  for (const RunSwitch& s : run_switches())
    if (s.pricing == SwitchPricing::kPriced && std::holds_alternative<SwitchMember<bool>>(s.member)) out.push_back(&s);
  return out;
}

void engage_priced_switches(const SwitchContext& ctx, RecipeBench& bench) {
  for (const RunSwitch* s : priced_switches())
    bench.*(std::get<SwitchMember<bool>>(s->member).bench) = s->no_effect == nullptr || s->no_effect(ctx).empty();
}

Json bench_switches_json(const RecipeBench& bench) {
  Json out = Json::object();
  for (const RunSwitch& s : run_switches())
    std::visit(
        [&](const auto& m) {
          if (const auto& v = bench.*(m.bench)) out[s.field] = json_of(*v);
        },
        s.member);
  return out;
}

Diagnostic setting_diagnostic(const SourceDoc& src, bool on_command_line, const std::string& option,
                              const std::string& pointer, const std::string& found, const std::string& expected) {
  if (on_command_line) return Diagnostic{"<command line>", 0, 0, option, found, expected};
  return src.at(pointer, found, expected);
}

Diagnostic switch_diagnostic(const RunSwitch& s, const SourceDoc& src, const RecipeBench& overlay,
                             const std::string& found, const std::string& expected) {
  return setting_diagnostic(src, switch_given(s, overlay), s.option, "/bench/" + std::string(s.field), found, expected);
}

Diagnostics per_node_refusals(const std::string& backend, const SwitchContext& ctx, const SourceDoc& src,
                              const RecipeBench& recipe, const RecipeBench& overlay) {
  Diagnostics out;
  for (const RunSwitch& s : run_switches()) {
    if (s.owner != SwitchOwner::kBackend || !switch_engaged(s, ctx.settings, recipe, overlay)) continue;
    const std::string why =
        "(the " + backend + " backend runs the recipe's own command: its " + s.owned + " the command's)";
    out.push_back(switch_diagnostic(s, src, overlay, switch_value_text(s, ctx.settings), refused_expected(s, why)));
  }
  return out;
}

const std::vector<SwitchConflict>& switch_conflicts() {
  static const std::vector<SwitchConflict> table{
      {"fail_on_sync", fail_on_sync_with_profile, "--profile synchronises the device by design"},
      {"overlap_p2p_comm", p2p_with_profile, "--profile synchronises the device after every pass"},
      {"fail_on_sync", fail_on_sync_with_host_splits,
       "the host_splits expert dispatcher synchronises the host with the GPU in every MoE layer"},
  };
  return table;
}

void switches_to_json(const RunSettings& settings, const LayoutEffects& effects, bool per_rank_backend, Json& out) {
  for (const RunSwitch& s : run_switches()) {
    if (s.owner == SwitchOwner::kBackend && !per_rank_backend) continue;
    std::visit([&](const auto& m) { out[s.field] = json_of(settings.*(m.setting)); }, s.member);
    if (s.applies && effects.*(s.applies)) out[std::string(s.field) + "_applies"] = *(effects.*(s.applies));
  }
}

void switches_from_json(const JsonFields& f, const Json& s, RunSettings& settings, LayoutEffects& effects) {
  for (const RunSwitch& row : run_switches()) {
    const std::string path = std::string("settings.") + row.field;
    if (row.required || JsonFields::has(s, row.field))
      std::visit(
          [&](const auto& m) {
            using T = std::decay_t<decltype(settings.*(m.setting))>;
            settings.*(m.setting) = read_value<T>(row, f, f.get(s, "settings", row.field), path);
          },
          row.member);
    const std::string applies = std::string(row.field) + "_applies";
    if (row.applies && JsonFields::has(s, applies.c_str()))
      effects.*(row.applies) = f.boolean(s[applies], path + "_applies");
  }
}

}  // namespace recipebench
