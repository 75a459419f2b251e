// RunRecord::from_json: a run record read back typed, every field located by file and field path on error.
#include <cmath>
#include <limits>
#include <utility>

#include "recipe/enums.h"
#include "run/run_record.h"

namespace recipebench {

namespace {

/// Reads typed fields of one JSON document; a wrong or missing field throws InputError naming the file and the
/// dotted field path (`steps[3].seconds`).
class Fields {
 public:
  explicit Fields(const std::string& file) : file_(file) {}

  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }
  static std::string item(const std::string& parent, size_t i) { return parent + "[" + std::to_string(i) + "]"; }

  [[noreturn]] void fail(const std::string& path, const std::string& found, const std::string& expected) const {
    throw InputError(Diagnostic{file_, 0, 0, path, found, expected});
  }

  /// Member `key` of the object `o` at `path`; throws when it is absent.
  const Json& get(const Json& o, const std::string& path, const char* key) const {
    if (!o.is_object()) fail(path, describe(o), "an object");
    const auto it = o.find(key);
    if (it == o.end()) fail(join(path, key), "missing", "a value");
    return *it;
  }
  /// True when `o` has member `key` and it is not null.
  static bool has(const Json& o, const char* key) { return o.is_object() && o.contains(key) && !o[key].is_null(); }

  double number(const Json& v, const std::string& path) const {
    if (!v.is_number()) fail(path, describe(v), "a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(path, v.dump(), "a finite number");
    return d;
  }
  int64_t integer(const Json& v, const std::string& path, int64_t lo = std::numeric_limits<int64_t>::min(),
                  int64_t hi = std::numeric_limits<int64_t>::max()) const {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) fail(path, v.dump(), range(lo, hi));
    if (!v.is_number_integer()) fail(path, describe(v), "an integer");
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) fail(path, v.dump(), range(lo, hi));
    return i;
  }
  int int32(const Json& v, const std::string& path, int lo = 0) const {
    return static_cast<int>(integer(v, path, lo, std::numeric_limits<int>::max()));
  }
  std::string string(const Json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, describe(v), "a string");
    return v.get<std::string>();
  }
  /// A closed set's name (recipe/enums.h), e.g. "cuda" for Device.
  template <typename E>
  E closed(const Json& v, const std::string& path) const {
    const std::string name = string(v, path);
    const std::optional<E> e = parse_enum<E>(name);
    if (!e) fail(path, "'" + name + "'", "one of the names recipe/enums.h lists");
    return *e;
  }
  bool boolean(const Json& v, const std::string& path) const {
    if (!v.is_boolean()) fail(path, describe(v), "true or false");
    return v.get<bool>();
  }
  const Json& object(const Json& v, const std::string& path) const {
    if (!v.is_object()) fail(path, describe(v), "an object");
    return v;
  }
  const Json& array(const Json& v, const std::string& path) const {
    if (!v.is_array()) fail(path, describe(v), "an array");
    return v;
  }

  /// A short rendering of a value for a message: its JSON type and, for scalars, the value (60 characters at most).
  static std::string describe(const Json& v) {
    if (v.is_object()) return "an object";
    if (v.is_array()) return "an array of " + std::to_string(v.size()) + " items";
    if (v.is_null()) return "null";
    std::string text = v.dump();
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    if (v.is_string()) return "string " + text;
    if (v.is_boolean()) return "boolean " + text;
    return "number " + text;
  }

 private:
  static std::string range(int64_t lo, int64_t hi) {
    return "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
  }
  const std::string& file_;
};

StepWindow window_of(const Fields& f, const Json& v, const std::string& path) {
  const Json& w = f.array(v, path);
  if (w.size() != 2) f.fail(path, Fields::describe(w), "[first, last]");
  return StepWindow{f.int32(w[0], Fields::item(path, 0)), f.int32(w[1], Fields::item(path, 1))};
}

RunOptions options_of(const Fields& f, const Json& s) {
  const std::string p = "settings";
  f.object(s, p);
  RunOptions o;
  o.backend = f.string(f.get(s, p, "backend"), p + ".backend");
  o.steps = f.int32(f.get(s, p, "steps"), p + ".steps", 1);
  o.window = window_of(f, f.get(s, p, "window"), p + ".window");
  if (Fields::has(s, "layers")) o.layers = f.integer(s["layers"], p + ".layers", 1);
  o.device = f.closed<Device>(f.get(s, p, "device"), p + ".device");
  o.seed = static_cast<uint64_t>(f.integer(f.get(s, p, "seed"), p + ".seed", 0));
  if (Fields::has(s, "profile")) o.profile = f.boolean(s["profile"], p + ".profile");
  if (Fields::has(s, "deterministic")) o.deterministic = f.boolean(s["deterministic"], p + ".deterministic");
  if (Fields::has(s, "kernels")) o.kernels = f.closed<Kernels>(s["kernels"], p + ".kernels");
  if (Fields::has(s, "overlap_grad_reduce"))
    o.overlap_grad_reduce = f.boolean(s["overlap_grad_reduce"], p + ".overlap_grad_reduce");
  if (Fields::has(s, "grad_reduce_bucket_elements"))
    o.grad_reduce_bucket_elements = f.integer(s["grad_reduce_bucket_elements"], p + ".grad_reduce_bucket_elements", 1);
  if (Fields::has(s, "overlap_grad_reduce_applies"))
    o.overlap_grad_reduce_applies = f.boolean(s["overlap_grad_reduce_applies"], p + ".overlap_grad_reduce_applies");
  if (Fields::has(s, "overlap_param_gather"))
    o.overlap_param_gather = f.boolean(s["overlap_param_gather"], p + ".overlap_param_gather");
  if (Fields::has(s, "overlap_param_gather_applies"))
    o.overlap_param_gather_applies = f.boolean(s["overlap_param_gather_applies"], p + ".overlap_param_gather_applies");
  if (Fields::has(s, "overlap_p2p_comm"))
    o.overlap_p2p_comm = f.boolean(s["overlap_p2p_comm"], p + ".overlap_p2p_comm");
  if (Fields::has(s, "overlap_tp_comm")) o.overlap_tp_comm = f.boolean(s["overlap_tp_comm"], p + ".overlap_tp_comm");
  if (Fields::has(s, "fail_on_sync")) o.fail_on_sync = f.boolean(s["fail_on_sync"], p + ".fail_on_sync");
  if (Fields::has(s, "ep_dispatch")) o.ep_dispatch = f.closed<EpDispatch>(s["ep_dispatch"], p + ".ep_dispatch");
  if (Fields::has(s, "ranks")) o.world = f.int32(s["ranks"], p + ".ranks", 1);
  if (Fields::has(s, "command")) {  // the command backend's settings (RunOptions::to_json)
    const Json& c = f.object(s["command"], p + ".command");
    const std::string format = f.string(f.get(c, p + ".command", "log_format"), p + ".command.log_format");
    if (format != "detect") o.log_format = format;
    if (Fields::has(c, "timeout_seconds"))
      o.timeout_seconds = f.number(c["timeout_seconds"], p + ".command.timeout_seconds");
    if (Fields::has(c, "source") && f.string(c["source"], p + ".command.source") == "import") o.import_log = "(log)";
  }
  const Json& d = f.object(f.get(s, p, "data"), p + ".data");
  o.data_source = f.closed<DataSource>(f.get(d, p + ".data", "source"), p + ".data.source");
  if (Fields::has(d, "path")) o.data_path = f.string(d["path"], p + ".data.path");
  if (Fields::has(d, "supervised_token_ratio"))
    o.supervised_token_ratio = f.number(d["supervised_token_ratio"], p + ".data.supervised_token_ratio");
  if (Fields::has(d, "min_row_tokens"))
    o.min_row_tokens = f.integer(d["min_row_tokens"], p + ".data.min_row_tokens", 0);
  return o;
}

StepSample step_of(const Fields& f, const Json& j, const std::string& p) {
  f.object(j, p);
  StepSample s;
  auto num = [&](const char* key) { return f.number(f.get(j, p, key), Fields::join(p, key)); };
  auto count = [&](const char* key) { return f.integer(f.get(j, p, key), Fields::join(p, key), 0); };
  s.step = f.int32(f.get(j, p, "step"), p + ".step");
  s.seconds = num("seconds");
  s.tokens = count("tokens");
  s.supervised_tokens = count("supervised_tokens");
  if (Fields::has(j, "microbatches")) s.microbatches = count("microbatches");
  s.loss = num("loss");
  s.grad_norm = num("grad_norm");
  s.learning_rate = num("learning_rate");
  s.peak_memory_bytes = count("peak_memory_bytes");
  if (Fields::has(j, "data_seconds")) s.data_seconds = num("data_seconds");
  if (Fields::has(j, "overhead_seconds")) s.overhead_seconds = num("overhead_seconds");
  if (Fields::has(j, "phases")) {
    const Json& ph = f.object(j["phases"], p + ".phases");
    const std::string pp = p + ".phases";
    if (Fields::has(ph, "forward_seconds"))
      s.forward_seconds = f.number(ph["forward_seconds"], pp + ".forward_seconds");
    if (Fields::has(ph, "backward_seconds"))
      s.backward_seconds = f.number(ph["backward_seconds"], pp + ".backward_seconds");
    if (Fields::has(ph, "optimizer_seconds"))
      s.optimizer_seconds = f.number(ph["optimizer_seconds"], pp + ".optimizer_seconds");
    const std::pair<const char*, double*> parts[] = {{"gdn_seconds", &s.components.gdn},
                                                     {"attention_seconds", &s.components.attention},
                                                     {"moe_seconds", &s.components.moe},
                                                     {"lm_head_loss_seconds", &s.components.lm_head_loss}};
    for (const auto& [key, out] : parts)
      if (Fields::has(ph, key)) *out = f.number(ph[key], pp + "." + key);
  }
  if (Fields::has(j, "comm_waits")) {
    const Json& cw = f.object(j["comm_waits"], p + ".comm_waits");
    const std::pair<const char*, double*> waits[] = {{"tp_seconds", &s.comm_waits.tp},
                                                     {"ep_seconds", &s.comm_waits.ep},
                                                     {"dp_seconds", &s.comm_waits.dp},
                                                     {"pp_seconds", &s.comm_waits.pp}};
    const std::string cp = p + ".comm_waits";
    for (const auto& [key, out] : waits) *out = f.number(f.get(cw, cp, key), Fields::join(cp, key));
    s.comm_waits.measured = true;
  }
  return s;
}

std::optional<double> optional_number(const Fields& f, const Json& o, const char* key, const std::string& p) {
  if (!Fields::has(o, key)) return std::nullopt;
  return f.number(o[key], Fields::join(p, key));
}

RunMetrics metrics_of(const Fields& f, const Json& m) {
  const std::string p = "metrics";
  f.object(m, p);
  auto num = [&](const char* key) { return f.number(f.get(m, p, key), Fields::join(p, key)); };
  RunMetrics r;
  r.window.window = window_of(f, f.get(m, p, "window"), p + ".window");
  r.window.tokens = f.integer(f.get(m, p, "window_tokens"), p + ".window_tokens", 0);
  r.window.seconds = num("window_seconds");
  r.window.mean_step_seconds = num("mean_step_seconds");
  r.window.tokens_per_s_per_gpu = num("tokens_per_s_per_gpu");
  r.window.step_time_cv_percent = num("step_time_cv_percent");
  r.mfu = optional_number(f, m, "mfu", p);
  r.usd_per_million_tokens = optional_number(f, m, "usd_per_million_tokens", p);
  if (Fields::has(m, "mfu_inputs")) {
    const Json& in = f.object(m["mfu_inputs"], p + ".mfu_inputs");
    if (Fields::has(in, "active_params"))
      r.active_params = f.integer(in["active_params"], p + ".mfu_inputs.active_params", 0);
    if (Fields::has(in, "peak_flops")) r.peak_flops = f.number(in["peak_flops"], p + ".mfu_inputs.peak_flops");
  }
  if (Fields::has(m, "price")) {
    const Json& price = f.object(m["price"], p + ".price");
    r.usd_per_gpu_hour = optional_number(f, price, "usd_per_gpu_hour", p + ".price");
    if (Fields::has(price, "source")) r.price_source = f.string(price["source"], p + ".price.source");
  }
  r.gpu_hours = num("gpu_hours");
  r.peak_memory_bytes = f.integer(f.get(m, p, "peak_memory_bytes"), p + ".peak_memory_bytes", 0);
  if (Fields::has(m, "harness_overhead_fraction")) r.harness_overhead_fraction = num("harness_overhead_fraction");
  return r;
}

ModelBuild model_build_of(const Fields& f, const Json& b) {
  const std::string p = "model_build";
  f.object(b, p);
  ModelBuild m;
  m.seconds = f.number(f.get(b, p, "seconds"), p + ".seconds");
  auto bytes = [&](const char* key) {
    std::vector<int64_t> v;
    const std::string kp = Fields::join(p, key);
    const Json& a = f.array(f.get(b, p, key), kp);
    for (size_t i = 0; i < a.size(); ++i) v.push_back(f.integer(a[i], Fields::item(kp, i), 0));
    return v;
  };
  m.host_rss_before_bytes = bytes("host_rss_before_bytes");
  m.host_peak_rss_bytes = bytes("host_peak_rss_bytes");
  return m;
}

/// The environment's facts the report reads, type-checked (the block itself is kept as written).
void check_environment(const Fields& f, const Json& env) {
  const std::string p = "environment";
  f.object(env, p);
  for (const char* key : {"host", "compiler", "recipebench_version", "recipebench_commit"})
    f.string(f.get(env, p, key), Fields::join(p, key));
  if (Fields::has(env, "build_type")) f.string(env["build_type"], p + ".build_type");
  if (Fields::has(env, "device")) {
    const Json& d = f.object(env["device"], p + ".device");
    if (Fields::has(d, "count")) f.integer(d["count"], p + ".device.count", 1, std::numeric_limits<int>::max());
    if (Fields::has(d, "name")) f.string(d["name"], p + ".device.name");
  }
}

}  // namespace

RunRecord RunRecord::from_json(const Json& j, const std::string& file) {
  const Fields f(file);
  f.object(j, "");
  RunRecord r;
  r.status = f.string(f.get(j, "", "status"), "status");
  if (r.status != "complete" && r.status != "failed") f.fail("status", "'" + r.status + "'", "complete or failed");
  r.error = f.get(j, "", "error");
  if (!r.error.is_null()) {
    f.object(r.error, "error");
    if (Fields::has(r.error, "step")) f.int32(r.error["step"], "error.step");
    if (Fields::has(r.error, "message")) f.string(r.error["message"], "error.message");
  }
  const Json& recipe = f.object(f.get(j, "", "recipe"), "recipe");
  r.recipe_path = f.string(f.get(recipe, "recipe", "path"), "recipe.path");
  r.recipe_sha256 = f.string(f.get(recipe, "recipe", "sha256"), "recipe.sha256");
  r.recipe = f.object(f.get(recipe, "recipe", "document"), "recipe.document");
  r.options = options_of(f, f.get(j, "", "settings"));
  const std::string backend = f.string(f.get(j, "", "backend"), "backend");
  if (backend != r.options.backend)
    f.fail("backend", "'" + backend + "'", "the settings' backend '" + r.options.backend + "'");
  const Json& model = f.object(f.get(j, "", "model"), "model");
  r.model_name = f.string(f.get(model, "model", "name"), "model.name");
  r.model_layers = f.integer(f.get(model, "model", "layers"), "model.layers", 1);
  r.model_layers_full = f.integer(f.get(model, "model", "layers_full"), "model.layers_full", 1);
  f.boolean(f.get(model, "model", "proxy"), "model.proxy");
  r.model_config = model.value("config", Json());
  r.started_at = f.string(f.get(j, "", "started_at"), "started_at");
  r.finished_at = f.string(f.get(j, "", "finished_at"), "finished_at");
  r.wall_seconds = f.number(f.get(j, "", "wall_seconds"), "wall_seconds");
  r.environment = f.get(j, "", "environment");
  if (Fields::has(j, "capabilities")) r.capabilities = f.object(j["capabilities"], "capabilities");
  if (Fields::has(j, "log")) {
    r.log = f.object(j["log"], "log");
    for (const char* key : {"source", "path", "sha256", "parser"})
      f.string(f.get(r.log, "log", key), Fields::join("log", key));
    if (!r.options.import_log.empty()) r.options.import_log = r.log["path"].get<std::string>();
  }
  check_environment(f, r.environment);
  const Json& steps = f.array(f.get(j, "", "steps"), "steps");
  for (size_t i = 0; i < steps.size(); ++i) r.steps.push_back(step_of(f, steps[i], Fields::item("steps", i)));
  const Json& metrics = f.get(j, "", "metrics");
  if (!metrics.is_null()) r.metrics = metrics_of(f, metrics);
  if (Fields::has(j, "model_build")) r.model_build = model_build_of(f, j["model_build"]);
  return r;
}

std::string RunRecord::build_type() const {
  return environment.is_object() ? environment.value("build_type", std::string()) : std::string();
}

int RunRecord::device_count() const {
  if (!environment.is_object() || !environment.contains("device") || !environment["device"].is_object()) return 1;
  return std::max(1, environment["device"].value("count", 1));
}

std::string RunRecord::device_name() const {
  if (!environment.is_object() || !environment.contains("device") || !environment["device"].is_object()) return "?";
  return environment["device"].value("name", std::string("?"));
}

}  // namespace recipebench
