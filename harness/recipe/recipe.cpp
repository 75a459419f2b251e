#include "recipe/recipe.h"

#include "catalog/hardware.h"

namespace recipebench {

namespace {

template <typename T>
std::optional<T> opt(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<T>();
}

std::string str(const Json& j, const char* key) {
  auto v = opt<std::string>(j, key);
  return v ? *v : std::string();
}

/// The enum value of the string at doc[pointer]; throws FieldError naming the field when it names none.
template <typename E>
E enum_at(const Json& doc, const std::string& pointer) {
  const std::string found = doc.at(Json::json_pointer(pointer)).get<std::string>();
  if (auto v = parse_enum<E>(found)) return *v;
  throw FieldError(pointer, found, enum_choices<E>());
}

RecipeBench bench_from_json(const Json& doc) {
  RecipeBench b;
  if (!doc.contains("bench") || !doc["bench"].is_object()) return b;
  const Json& j = doc["bench"];
  b.backend = opt<std::string>(j, "backend");
  b.steps = opt<int>(j, "steps");
  if (j.contains("window")) b.window = StepWindow{j["window"][0].get<int>(), j["window"][1].get<int>()};
  b.layers = opt<int64_t>(j, "layers");
  if (j.contains("device")) b.device = enum_at<Device>(doc, "/bench/device");
  b.seed = opt<uint64_t>(j, "seed");
  b.deterministic = opt<bool>(j, "deterministic");
  if (j.contains("kernels")) b.kernels = enum_at<Kernels>(doc, "/bench/kernels");
  b.overlap_grad_reduce = opt<bool>(j, "overlap_grad_reduce");
  b.grad_reduce_bucket_elements = opt<int64_t>(j, "grad_reduce_bucket_elements");
  b.fail_on_sync = opt<bool>(j, "fail_on_sync");
  b.overlap_param_gather = opt<bool>(j, "overlap_param_gather");
  b.overlap_p2p_comm = opt<bool>(j, "overlap_p2p_comm");
  b.overlap_tp_comm = opt<bool>(j, "overlap_tp_comm");
  if (j.contains("ep_dispatch")) b.ep_dispatch = enum_at<EpDispatch>(doc, "/bench/ep_dispatch");
  b.command = opt<std::string>(j, "command");
  b.log_format = opt<std::string>(j, "log_format");
  b.timeout_seconds = opt<double>(j, "timeout_seconds");
  if (j.contains("data") && j["data"].is_object()) {
    const Json& d = j["data"];
    if (d.contains("source")) b.data.source = enum_at<DataSource>(doc, "/bench/data/source");
    b.data.path = opt<std::string>(d, "path");
    b.data.supervised_token_ratio = opt<double>(d, "supervised_token_ratio");
    b.data.min_row_tokens = opt<int64_t>(d, "min_row_tokens");
  }
  return b;
}

RecipeGpu gpu_from_json(const Json& g) {
  RecipeGpu gpu;
  gpu.type = g.at("type").get<std::string>();
  gpu.memory_gb = g.value("memory_gb", 0.0);
  if (!find_gpu(gpu.type))
    if (const GpuSpec* resolved = resolve_gpu(gpu.type, gpu.memory_gb)) {  // "A100" + 80 GB: A100 80GB
      gpu.type_written = gpu.type;
      gpu.type = resolved->name;
    }
  gpu.count = g.at("count").get<int>();
  gpu.per_node = g.value("per_node", gpu.count);
  gpu.instance = str(g, "instance");
  gpu.usd_per_gpu_hour = opt<double>(g, "usd_per_gpu_hour");
  return gpu;
}

RecipeWorkload workload_from_json(const Json& w) {
  RecipeWorkload wl;
  wl.row_tokens = w.at("row_tokens").get<int64_t>();
  wl.global_batch = w.at("global_batch").get<int64_t>();
  wl.rows = str(w, "rows");
  wl.precision = w.at("precision").get<std::string>();
  if (w.contains("dataset") && w["dataset"].is_object()) wl.dataset_name = str(w["dataset"], "name");
  return wl;
}

RecipeLayout layout_from_json(const Json& doc) {
  const Json& l = doc.at("layout");
  RecipeLayout L;
  L.label = str(l, "label");
  L.summary = str(l, "summary");
  L.highlights = str(l, "highlights");
  L.tp = l.at("tp").get<int>();
  L.pp = l.at("pp").get<int>();
  L.vpp = opt<int>(l, "vpp").value_or(1);
  L.cp = l.at("cp").get<int>();
  L.ep = opt<int>(l, "ep").value_or(1);  // a dense model needs none
  L.dp = l.at("dp").get<int>();
  L.etp = opt<int>(l, "etp");
  L.sequence_parallel = l.at("sequence_parallel").get<bool>();
  if (l.contains("layer_split") && l["layer_split"].is_object()) {
    L.first_stage_layers = l["layer_split"].at("first").get<int>();
    L.last_stage_layers = l["layer_split"].at("last").get<int>();
  }
  L.max_tokens_per_gpu = l.at("max_tokens_per_gpu").get<int64_t>();
  L.rows_per_microbatch = opt<int>(l, "rows_per_microbatch");
  const Json& rc = l.at("recompute");
  if (rc.is_null()) {  // null: no recompute (schema/recipe.schema.yaml)
    L.recompute.granularity = "none";
  } else {
    L.recompute.granularity = rc.at("granularity").get<std::string>();
    L.recompute.method = str(rc, "method");
    L.recompute.num_layers = opt<int>(rc, "num_layers").value_or(0);
    if (rc.contains("modules")) {
      L.recompute.modules.clear();
      for (size_t i = 0; i < rc["modules"].size(); ++i)
        L.recompute.modules.push_back(
            enum_at<RecomputeModule>(doc, "/layout/recompute/modules/" + std::to_string(i)));
    }
  }
  L.offload = str(l, "offload");
  L.dispatcher_stated = l.contains("dispatcher") && !l["dispatcher"].is_null();
  if (L.dispatcher_stated) L.dispatcher = enum_at<Dispatcher>(doc, "/layout/dispatcher");
  return L;
}

/// The optimizer block; fields it leaves out keep RecipeOptimizer's defaults.
RecipeOptimizer optimizer_from_json(const Json& doc) {
  RecipeOptimizer O;
  if (!doc.contains("optimizer") || !doc["optimizer"].is_object()) return O;
  const Json& o = doc["optimizer"];
  O.lr = o.value("lr", O.lr);
  O.min_lr = o.value("min_lr", O.min_lr);
  if (o.contains("lr_decay_style")) O.lr_decay_style = enum_at<LrDecay>(doc, "/optimizer/lr_decay_style");
  O.lr_warmup_fraction = o.value("lr_warmup_fraction", O.lr_warmup_fraction);
  O.weight_decay = o.value("weight_decay", O.weight_decay);
  O.adam_beta1 = o.value("adam_beta1", O.adam_beta1);
  O.adam_beta2 = o.value("adam_beta2", O.adam_beta2);
  O.adam_eps = o.value("adam_eps", O.adam_eps);
  O.clip_grad = o.value("clip_grad", O.clip_grad);
  if (o.contains("master_weights")) O.master_weights = enum_at<MasterWeights>(doc, "/optimizer/master_weights");
  if (o.contains("exp_avg_dtype")) O.exp_avg_dtype = enum_at<StateDtype>(doc, "/optimizer/exp_avg_dtype");
  if (o.contains("exp_avg_sq_dtype")) O.exp_avg_sq_dtype = enum_at<StateDtype>(doc, "/optimizer/exp_avg_sq_dtype");
  if (o.contains("grad_reduce_dtype"))
    O.grad_reduce_dtype = enum_at<StateDtype>(doc, "/optimizer/grad_reduce_dtype");
  return O;
}

/// result.window_tokens when not stated: window steps x global_batch x row_tokens (docs/metrics.md), in 128 bits
/// and held to 0..INT64_MAX (the schema bounds each factor by 2^31; a window with last < first has no tokens).
int64_t derived_window_tokens(const StepWindow& w, const RecipeWorkload& workload) {
  if (w.steps() <= 0) return 0;
  const __int128 wide = static_cast<__int128>(w.steps()) * workload.global_batch * workload.row_tokens;
  return wide > INT64_MAX ? INT64_MAX : static_cast<int64_t>(wide);
}

RecipeResult result_from_json(const Json& res, const RecipeWorkload& workload) {
  RecipeResult out;
  out.tokens_per_s_per_gpu = res.at("tokens_per_s_per_gpu").get<double>();
  out.usd_per_million_tokens = opt<double>(res, "usd_per_million_tokens");
  out.step_time_cv_percent = opt<double>(res, "step_time_cv_percent");
  out.mfu = opt<double>(res, "mfu");
  if (const auto convention = opt<std::string>(res, "mfu_convention")) {
    const auto c = parse_enum<MfuConvention>(*convention);
    if (!c) throw FieldError("/result/mfu_convention", *convention, enum_choices<MfuConvention>());
    out.mfu_convention = *c;
  }
  if (res.contains("active_params") && res["active_params"].is_object()) {
    out.active_params = opt<int64_t>(res["active_params"], "count");
    out.active_params_source = str(res["active_params"], "source");
  }
  out.measured = res.at("measured").get<std::string>();
  out.steps_per_run = res.at("steps_per_run").get<int>();
  out.window = StepWindow{res.at("window").at(0).get<int>(), res.at("window").at(1).get<int>()};
  out.window_tokens_stated = res.contains("window_tokens");
  out.window_tokens =
      out.window_tokens_stated ? res["window_tokens"].get<int64_t>() : derived_window_tokens(out.window, workload);
  out.gpu_hours = opt<double>(res, "gpu_hours");
  return out;
}

}  // namespace

Recipe recipe_from_json(const Json& doc, const std::string& file) {
  Recipe r;
  r.file = file;
  r.doc = doc;
  r.schema_version = doc.at("schema_version").get<int>();
  r.model = doc.at("model").get<std::string>();
  if (doc.contains("model_params") && doc["model_params"].is_object()) {
    const Json& p = doc["model_params"];
    RecipeModelParams mp;
    mp.config = opt<std::string>(p, "config");
    mp.active = opt<int64_t>(p, "active");
    mp.total = opt<int64_t>(p, "total");
    mp.source = str(p, "source");
    r.model_params = mp;
  }
  r.status = doc.at("status").get<std::string>();
  r.gpu = gpu_from_json(doc.at("gpu"));
  const Json& a = doc.at("author");
  r.author = a.at("name").get<std::string>();
  r.author_url = str(a, "url");
  r.workload = workload_from_json(doc.at("workload"));
  r.layout = layout_from_json(doc);
  r.optimizer = optimizer_from_json(doc);
  r.bench = bench_from_json(doc);
  if (doc.contains("result") && doc["result"].is_object()) r.result = result_from_json(doc["result"], r.workload);
  return r;
}

Device recipe_device(const Recipe& recipe) {
  if (recipe.bench.device) return *recipe.bench.device;
  return recipe.gpu.type == "CPU" ? Device::kCpu : Device::kCuda;
}

}  // namespace recipebench
