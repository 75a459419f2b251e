// RunRecord::from_json: a run record read back typed, every field located by file and field path on error.
#include <cmath>
#include <limits>
#include <utility>

#include "backend/step_bounds.h"
#include "recipe/enums.h"
#include "recipe/json_fields.h"
#include "record/run_record.h"
#include "settings/switches.h"
#include "util/format.h"

namespace recipebench {

namespace {

StepWindow window_of(const JsonFields& f, const Json& v, const std::string& path) {
  const Json& w = f.array(v, path);
  if (w.size() != 2) f.fail(path, JsonFields::describe(w), "[first, last]");
  return StepWindow{f.int32(w[0], JsonFields::item(path, 0)), f.int32(w[1], JsonFields::item(path, 1))};
}

/// settings.command: the command backend's settings (RunOptions::to_json).
CommandSettings command_of(const JsonFields& f, const Json& c) {
  const std::string p = "settings.command";
  f.object(c, p);
  CommandSettings out;
  const std::string format = f.string(f.get(c, p, "log_format"), p + ".log_format");
  if (format != "detect") out.log_format = format;
  if (JsonFields::has(c, "timeout_seconds"))
    out.timeout_seconds = f.number(c["timeout_seconds"], p + ".timeout_seconds");
  if (JsonFields::has(c, "source") && f.string(c["source"], p + ".source") == "import") out.import_log = "(log)";
  return out;
}

RunData data_of(const JsonFields& f, const Json& d) {
  const std::string p = "settings.data";
  f.object(d, p);
  RunData out;
  out.source = f.closed<DataSource>(f.get(d, p, "source"), p + ".source");
  if (JsonFields::has(d, "path")) out.path = f.string(d["path"], p + ".path");
  if (JsonFields::has(d, "supervised_token_ratio"))
    out.supervised_token_ratio = f.number(d["supervised_token_ratio"], p + ".supervised_token_ratio");
  if (JsonFields::has(d, "min_row_tokens"))
    out.min_row_tokens = f.integer(d["min_row_tokens"], p + ".min_row_tokens", 0);
  return out;
}

RunOptions options_of(const JsonFields& f, const Json& s) {
  const std::string p = "settings";
  f.object(s, p);
  RunOptions o;
  RunSettings& t = o.settings;
  t.backend = f.string(f.get(s, p, "backend"), p + ".backend");
  t.window = window_of(f, f.get(s, p, "window"), p + ".window");
  if (JsonFields::has(s, "layers")) t.layers = f.integer(s["layers"], p + ".layers", 1);
  if (JsonFields::has(s, "emulate_rank")) t.emulate_rank = f.int32(s["emulate_rank"], p + ".emulate_rank", 0);
  if (JsonFields::has(s, "emulated_stage_layers"))
    t.emulated_stage_layers = f.integer(s["emulated_stage_layers"], p + ".emulated_stage_layers", 1);
  t.device = f.closed<Device>(f.get(s, p, "device"), p + ".device");
  t.seed = static_cast<uint64_t>(f.integer(f.get(s, p, "seed"), p + ".seed", 0));
  if (JsonFields::has(s, "profile")) t.profile = f.boolean(s["profile"], p + ".profile");
  switches_from_json(f, s, t, o.effects);  // steps and the bench.* switches (settings/switches.h)
  if (JsonFields::has(s, "ranks")) o.place.world = f.int32(s["ranks"], p + ".ranks", 1);
  if (JsonFields::has(s, "command")) o.command = command_of(f, s["command"]);
  t.data = data_of(f, f.get(s, p, "data"));
  return o;
}

/// steps[].traffic: an emulated rank's groups and what their operations moved.
std::vector<GroupTraffic> traffic_of(const JsonFields& f, const Json& a, const std::string& p) {
  std::vector<GroupTraffic> out;
  f.array(a, p);
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string gp = JsonFields::item(p, i);
    const Json& g = f.object(a[i], gp);
    GroupTraffic t;
    const Json& kinds = f.array(f.get(g, gp, "kinds"), gp + ".kinds");
    for (size_t k = 0; k < kinds.size(); ++k) t.kinds.push_back(f.string(kinds[k], JsonFields::item(gp + ".kinds", k)));
    const Json& members = f.array(f.get(g, gp, "members"), gp + ".members");
    for (size_t k = 0; k < members.size(); ++k)
      t.members.push_back(f.int32(members[k], JsonFields::item(gp + ".members", k), 0));
    const Json& ops = f.object(f.get(g, gp, "ops"), gp + ".ops");
    for (const auto& [op, v] : ops.items()) {
      const std::string op_path = gp + ".ops." + op;
      f.object(v, op_path);
      OpTraffic o{op, f.integer(f.get(v, op_path, "calls"), op_path + ".calls", 0),
                  f.integer(f.get(v, op_path, "bytes"), op_path + ".bytes", 0), 0};
      if (JsonFields::has(v, "received_bytes"))
        o.received_bytes = f.integer(v["received_bytes"], op_path + ".received_bytes", 0);
      t.ops.push_back(o);
    }
    out.push_back(std::move(t));
  }
  return out;
}

/// steps[].phases.passes[i]: one pass of the schedule under --profile (backend/profile.h to_json).
PassSample pass_of(const JsonFields& f, const Json& j, const std::string& p) {
  f.object(j, p);
  PassSample s;
  const std::string kind = f.string(f.get(j, p, "kind"), p + ".kind");
  if (kind != "forward" && kind != "backward") f.fail(p + ".kind", JsonFields::describe(j["kind"]), "forward or backward");
  s.backward = kind == "backward";
  s.virtual_stage = f.int32(f.get(j, p, "virtual_stage"), p + ".virtual_stage", 0);
  s.microbatch = f.integer(f.get(j, p, "microbatch"), p + ".microbatch", 0);
  s.seconds = f.number(f.get(j, p, "seconds"), p + ".seconds");
  for (const auto& [key, cells] : j.items()) {
    if (key == "kind" || key == "virtual_stage" || key == "microbatch" || key == "seconds") continue;
    const auto phase = pass_phase_named(key);
    if (!phase) f.fail(JsonFields::join(p, key), "a field", "kind, virtual_stage, microbatch, seconds or a phase "
                                                             "(forward, backward, recompute)");
    const std::string pp = JsonFields::join(p, key);
    f.object(cells, pp);
    for (const auto& [name, v] : cells.items()) {
      const auto c = profile_component_named(name);
      if (!c) f.fail(JsonFields::join(pp, name), "a field", "a component of the profile (docs/metrics.md, Profile)");
      s.phases[static_cast<size_t>(*phase)][static_cast<size_t>(*c)] = f.number(v, JsonFields::join(pp, name));
    }
  }
  return s;
}

/// A step's figures by the rule a log's step lines obey (backend/step_bounds.h): a record import or run writes
/// is never one report refuses, and one report takes is never one import would have refused.
void check_step_bounds(const JsonFields& f, const StepSample& s, const std::string& p) {
  const std::pair<StepFigure, double> figures[] = {
      {StepFigure::kSeconds, s.seconds},
      {StepFigure::kTokens, static_cast<double>(s.tokens)},
      {StepFigure::kLoss, s.loss},
      {StepFigure::kGradNorm, s.grad_norm},
      {StepFigure::kLearningRate, s.learning_rate},
      {StepFigure::kPeakMemoryBytes, static_cast<double>(s.peak_memory_bytes)}};
  for (const auto& [figure, v] : figures)
    if (!within_step_bounds(figure, v))
      f.fail(JsonFields::join(p, record_field(figure)), shortest(v), step_bounds_text(figure));
}

StepSample step_of(const JsonFields& f, const Json& j, const std::string& p) {
  f.object(j, p);
  StepSample s;
  auto num = [&](const char* key) { return f.number(f.get(j, p, key), JsonFields::join(p, key)); };
  auto count = [&](const char* key) { return f.integer(f.get(j, p, key), JsonFields::join(p, key), 0); };
  s.step = f.int32(f.get(j, p, "step"), p + ".step");
  s.seconds = num("seconds");
  s.tokens = count("tokens");
  s.supervised_tokens = count("supervised_tokens");
  if (JsonFields::has(j, "microbatches")) s.microbatches = count("microbatches");
  const Json& loss = f.get(j, p, "loss");  // null: an emulated rank without a last pipeline stage
  s.loss = loss.is_null() ? std::numeric_limits<double>::quiet_NaN() : f.number(loss, p + ".loss");
  s.grad_norm = num("grad_norm");
  s.learning_rate = num("learning_rate");
  s.peak_memory_bytes = count("peak_memory_bytes");
  check_step_bounds(f, s, p);
  if (JsonFields::has(j, "data_seconds")) s.data_seconds = num("data_seconds");
  if (JsonFields::has(j, "overhead_seconds")) s.overhead_seconds = num("overhead_seconds");
  if (JsonFields::has(j, "phases")) {
    const Json& ph = f.object(j["phases"], p + ".phases");
    const std::string pp = p + ".phases";
    if (JsonFields::has(ph, "forward_seconds"))
      s.forward_seconds = f.number(ph["forward_seconds"], pp + ".forward_seconds");
    if (JsonFields::has(ph, "backward_seconds"))
      s.backward_seconds = f.number(ph["backward_seconds"], pp + ".backward_seconds");
    if (JsonFields::has(ph, "optimizer_seconds"))
      s.optimizer_seconds = f.number(ph["optimizer_seconds"], pp + ".optimizer_seconds");
    const std::pair<const char*, double*> parts[] = {{"gdn_seconds", &s.components.gdn},
                                                     {"attention_seconds", &s.components.attention},
                                                     {"moe_seconds", &s.components.moe},
                                                     {"lm_head_loss_seconds", &s.components.lm_head_loss}};
    for (const auto& [key, out] : parts)
      if (JsonFields::has(ph, key)) *out = f.number(ph[key], pp + "." + key);
    if (JsonFields::has(ph, "passes")) {
      const Json& a = f.array(ph["passes"], pp + ".passes");
      for (size_t i = 0; i < a.size(); ++i) s.passes.push_back(pass_of(f, a[i], JsonFields::item(pp + ".passes", i)));
    }
  }
  if (JsonFields::has(j, "comm_waits")) {
    const Json& cw = f.object(j["comm_waits"], p + ".comm_waits");
    const std::pair<const char*, double*> waits[] = {{"tp_seconds", &s.comm_waits.tp},
                                                     {"ep_seconds", &s.comm_waits.ep},
                                                     {"dp_seconds", &s.comm_waits.dp},
                                                     {"pp_seconds", &s.comm_waits.pp}};
    const std::string cp = p + ".comm_waits";
    for (const auto& [key, out] : waits) *out = f.number(f.get(cw, cp, key), JsonFields::join(cp, key));
    s.comm_waits.measured = true;
  }
  if (JsonFields::has(j, "traffic")) s.traffic = traffic_of(f, j["traffic"], p + ".traffic");
  return s;
}

std::optional<double> optional_number(const JsonFields& f, const Json& o, const char* key, const std::string& p) {
  if (!JsonFields::has(o, key)) return std::nullopt;
  return f.number(o[key], JsonFields::join(p, key));
}

RunMetrics metrics_of(const JsonFields& f, const Json& m) {
  const std::string p = "metrics";
  f.object(m, p);
  auto num = [&](const char* key) { return f.number(f.get(m, p, key), JsonFields::join(p, key)); };
  RunMetrics r;
  r.window.window = window_of(f, f.get(m, p, "window"), p + ".window");
  r.window.tokens = f.integer(f.get(m, p, "window_tokens"), p + ".window_tokens", 0);
  r.window.seconds = num("window_seconds");
  r.window.mean_step_seconds = num("mean_step_seconds");
  r.window.tokens_per_s_per_gpu = num("tokens_per_s_per_gpu");
  r.window.step_time_cv_percent = num("step_time_cv_percent");
  r.mfu = optional_number(f, m, "mfu", p);
  r.usd_per_million_tokens = optional_number(f, m, "usd_per_million_tokens", p);
  if (JsonFields::has(m, "mfu_inputs")) {
    const Json& in = f.object(m["mfu_inputs"], p + ".mfu_inputs");
    if (JsonFields::has(in, "active_params"))
      r.active_params = f.integer(in["active_params"], p + ".mfu_inputs.active_params", 0);
    if (JsonFields::has(in, "peak_flops")) r.peak_flops = f.number(in["peak_flops"], p + ".mfu_inputs.peak_flops");
  }
  if (JsonFields::has(m, "price")) {
    const Json& price = f.object(m["price"], p + ".price");
    r.usd_per_gpu_hour = optional_number(f, price, "usd_per_gpu_hour", p + ".price");
    if (JsonFields::has(price, "source")) r.price_source = f.string(price["source"], p + ".price.source");
  }
  r.gpu_hours = num("gpu_hours");
  r.peak_memory_bytes = f.integer(f.get(m, p, "peak_memory_bytes"), p + ".peak_memory_bytes", 0);
  if (JsonFields::has(m, "harness_overhead_fraction")) r.harness_overhead_fraction = num("harness_overhead_fraction");
  return r;
}

ModelBuild model_build_of(const JsonFields& f, const Json& b) {
  const std::string p = "model_build";
  f.object(b, p);
  ModelBuild m;
  m.seconds = f.number(f.get(b, p, "seconds"), p + ".seconds");
  auto bytes = [&](const char* key) {
    std::vector<int64_t> v;
    const std::string kp = JsonFields::join(p, key);
    const Json& a = f.array(f.get(b, p, key), kp);
    for (size_t i = 0; i < a.size(); ++i) v.push_back(f.integer(a[i], JsonFields::item(kp, i), 0));
    return v;
  };
  m.host_rss_before_bytes = bytes("host_rss_before_bytes");
  m.host_peak_rss_bytes = bytes("host_peak_rss_bytes");
  return m;
}

/// The environment's facts the report reads, type-checked (the block itself is kept as written).
std::optional<std::string> optional_string(const JsonFields& f, const Json& o, const char* key, const std::string& p) {
  if (!JsonFields::has(o, key)) return std::nullopt;
  return f.string(o[key], JsonFields::join(p, key));
}

/// environment.device: what the backend reported (absent members keep BackendEnvironment's defaults).
BackendEnvironment device_of(const JsonFields& f, const Json& d) {
  const std::string p = "environment.device";
  f.object(d, p);
  BackendEnvironment out;
  out.device_name = optional_string(f, d, "name", p).value_or("");
  if (JsonFields::has(d, "count"))
    out.device_count = static_cast<int>(f.integer(d["count"], p + ".count", 1, std::numeric_limits<int>::max()));
  if (JsonFields::has(d, "memory_bytes")) out.device_memory_bytes = f.number(d["memory_bytes"], p + ".memory_bytes");
  out.driver = optional_string(f, d, "driver", p).value_or("");
  out.cuda = optional_string(f, d, "cuda", p).value_or("");
  out.nccl = optional_string(f, d, "nccl", p).value_or("");
  out.libtorch = optional_string(f, d, "libtorch", p).value_or("");
  return out;
}

RunEnvironment environment_of(const JsonFields& f, const Json& env) {
  const std::string p = "environment";
  f.object(env, p);
  RunEnvironment out;
  out.host = f.string(f.get(env, p, "host"), p + ".host");
  out.compiler = f.string(f.get(env, p, "compiler"), p + ".compiler");
  out.recipebench_version = f.string(f.get(env, p, "recipebench_version"), p + ".recipebench_version");
  out.recipebench_commit = f.string(f.get(env, p, "recipebench_commit"), p + ".recipebench_commit");
  out.os = optional_string(f, env, "os", p);
  if (JsonFields::has(env, "cpu_cores")) out.cpu_cores = f.int32(env["cpu_cores"], p + ".cpu_cores");
  out.build_type = optional_string(f, env, "build_type", p);
  if (JsonFields::has(env, "device")) out.device = device_of(f, env["device"]);
  if (JsonFields::has(env, "recipe_env_applied"))
    out.recipe_env_applied = f.object(env["recipe_env_applied"], p + ".recipe_env_applied");
  return out;
}

/// The error block (null when the run did not fail).
std::optional<RunFailure> failure_of(const JsonFields& f, const Json& e) {
  if (e.is_null()) return std::nullopt;
  f.object(e, "error");
  RunFailure out;
  if (JsonFields::has(e, "step")) out.step = f.int32(e["step"], "error.step");
  out.message = optional_string(f, e, "message", "error").value_or("");
  if (JsonFields::has(e, "log_tail")) {
    const Json& tail = f.array(e["log_tail"], "error.log_tail");
    for (size_t i = 0; i < tail.size(); ++i)
      out.log_tail.push_back(f.string(tail[i], JsonFields::item("error.log_tail", i)));
  }
  return out;
}

}  // namespace

RunRecord RunRecord::from_json(const Json& j, const std::string& file) {
  const JsonFields f(file);
  f.object(j, "");
  RunRecord r;
  const std::string status = f.string(f.get(j, "", "status"), "status");
  const std::optional<RunStatus> known = parse_enum<RunStatus>(status);
  if (!known) f.fail("status", "'" + status + "'", "complete or failed");
  r.status = *known;
  r.error = failure_of(f, f.get(j, "", "error"));
  const Json& recipe = f.object(f.get(j, "", "recipe"), "recipe");
  r.recipe_path = f.string(f.get(recipe, "recipe", "path"), "recipe.path");
  r.recipe_sha256 = f.string(f.get(recipe, "recipe", "sha256"), "recipe.sha256");
  r.recipe = f.object(f.get(recipe, "recipe", "document"), "recipe.document");
  r.options = options_of(f, f.get(j, "", "settings"));
  const std::string backend = f.string(f.get(j, "", "backend"), "backend");
  if (backend != r.options.settings.backend)
    f.fail("backend", "'" + backend + "'", "the settings' backend '" + r.options.settings.backend + "'");
  const Json& model = f.object(f.get(j, "", "model"), "model");
  r.model_name = f.string(f.get(model, "model", "name"), "model.name");
  r.model_layers = f.integer(f.get(model, "model", "layers"), "model.layers", 0);  // 0: not known (stated counts)
  r.model_layers_full = f.integer(f.get(model, "model", "layers_full"), "model.layers_full", 0);
  f.boolean(f.get(model, "model", "proxy"), "model.proxy");
  r.model_config = model.value("config", Json());
  r.started_at = f.string(f.get(j, "", "started_at"), "started_at");
  r.finished_at = f.string(f.get(j, "", "finished_at"), "finished_at");
  r.wall_seconds = f.number(f.get(j, "", "wall_seconds"), "wall_seconds");
  r.environment = environment_of(f, f.get(j, "", "environment"));
  if (JsonFields::has(j, "capabilities")) r.capabilities = f.object(j["capabilities"], "capabilities");
  if (JsonFields::has(j, "log")) {
    r.log = f.object(j["log"], "log");
    for (const char* key : {"source", "path", "sha256", "parser"})
      f.string(f.get(r.log, "log", key), JsonFields::join("log", key));
    if (!r.options.command.import_log.empty()) r.options.command.import_log = r.log["path"].get<std::string>();
  }
  const Json& steps = f.array(f.get(j, "", "steps"), "steps");
  for (size_t i = 0; i < steps.size(); ++i) r.steps.push_back(step_of(f, steps[i], JsonFields::item("steps", i)));
  const Json& metrics = f.get(j, "", "metrics");
  if (!metrics.is_null()) r.metrics = metrics_of(f, metrics);
  if (JsonFields::has(j, "model_build")) r.model_build = model_build_of(f, j["model_build"]);
  if (JsonFields::has(j, "emulation")) r.emulation = f.object(j["emulation"], "emulation");
  return r;
}

std::string RunRecord::build_type() const { return environment.build_type.value_or(""); }

int RunRecord::device_count() const { return environment.device ? std::max(1, environment.device->device_count) : 1; }

std::string RunRecord::device_name() const {
  return environment.device && !environment.device->device_name.empty() ? environment.device->device_name : "?";
}

}  // namespace recipebench
