#include "run/backend.h"

#include <cstdlib>
#include <map>
#include <stdexcept>

namespace recipebench {

namespace {
struct Registered {
  BackendCapabilities capabilities;
  BackendFactory factory;  ///< empty: declared, not built
};

std::map<std::string, Registered>& registry() {
  static std::map<std::string, Registered> r;
  return r;
}
}  // namespace

void register_backend(const std::string& name, BackendCapabilities capabilities, BackendFactory factory) {
  registry()[name] = Registered{std::move(capabilities), std::move(factory)};
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() || !it->second.factory ? nullptr : it->second.factory();
}

const BackendCapabilities* backend_capabilities(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second.capabilities;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> out;
  for (const auto& [name, r] : registry())
    if (r.factory) out.push_back(name);
  return out;
}

namespace {
/// The environment variable `name` as an int, or nullopt when unset or empty.
std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  try {
    size_t used = 0;
    const int n = std::stoi(v, &used);
    if (v[used] == '\0') return n;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(std::string(name) + "=" + v + ", expected an integer");
}
}  // namespace

void apply_environment_hooks(RunOptions& o) {
  if (const auto t = env_int("RECIPEBENCH_DIST_TIMEOUT")) o.dist_timeout_seconds = *t;
  if (const auto r = env_int("RECIPEBENCH_FAIL_RANK")) o.hooks.fail_rank = *r;
  if (const auto s = env_int("RECIPEBENCH_FAIL_STEP")) o.hooks.fail_step = *s;
  if (const char* dump = std::getenv("RECIPEBENCH_DUMP_PARAMS"); dump && *dump) o.hooks.dump_params_path = dump;
  if (const char* dump = std::getenv("RECIPEBENCH_DUMP_INIT_PARAMS"); dump && *dump)
    o.hooks.dump_init_params_path = dump;
  if (const auto s = env_int("RECIPEBENCH_INJECT_SYNC_STEP")) o.hooks.inject_sync_step = *s;
}

Json RunOptions::to_json() const {
  Json j{{"backend", backend},
         {"steps", steps},
         {"window", Json::array({window.first, window.last})},
         {"layers", layers ? Json(*layers) : Json(nullptr)},
         {"device", to_string(device)},
         {"seed", seed},
         {"profile", profile},
         {"deterministic", deterministic},
         {"overlap_grad_reduce", overlap_grad_reduce},
         {"grad_reduce_bucket_elements", grad_reduce_bucket_elements},
         {"overlap_param_gather", overlap_param_gather},
         {"overlap_p2p_comm", overlap_p2p_comm},
         {"overlap_tp_comm", overlap_tp_comm},
         {"ranks", world},
         {"dist_timeout_seconds", dist_timeout_seconds},
         {"data", Json{{"source", to_string(data_source)}}}};
  if (overlap_grad_reduce_applies) j["overlap_grad_reduce_applies"] = *overlap_grad_reduce_applies;
  if (overlap_param_gather_applies) j["overlap_param_gather_applies"] = *overlap_param_gather_applies;
  // bench.kernels picks a backend's own kernels; a command's kernels are its own (the command backend refuses it).
  if (backend != "command") j["kernels"] = to_string(kernels);
  if (backend != "command") j["fail_on_sync"] = fail_on_sync;  // the same: the command's synchronisation is its own
  if (backend != "command") j["ep_dispatch"] = to_string(ep_dispatch);  // and its dispatcher
  if (data_source == DataSource::kFile)
    j["data"]["path"] = data_path;
  else
    j["data"]["supervised_token_ratio"] = supervised_token_ratio;
  if (data_source != DataSource::kFile && min_row_tokens > 0) j["data"]["min_row_tokens"] = min_row_tokens;
  if (backend == "command") {
    j["command"] = Json{{"log_format", log_format ? Json(*log_format) : Json("detect")},
                        {"timeout_seconds", timeout_seconds ? Json(*timeout_seconds) : Json(nullptr)},
                        {"source", import_log.empty() ? "run" : "import"}};
  }
  if (hooks.any()) {
    Json h = Json::object();
    if (hooks.fail_rank) h["fail_rank"] = *hooks.fail_rank;
    if (hooks.fail_step) h["fail_step"] = *hooks.fail_step;
    if (!hooks.dump_params_path.empty()) h["dump_params"] = hooks.dump_params_path;
    if (!hooks.dump_init_params_path.empty()) h["dump_init_params"] = hooks.dump_init_params_path;
    if (hooks.inject_sync_step) h["inject_sync_step"] = *hooks.inject_sync_step;
    j["hooks"] = h;
  }
  return j;
}

Json ModelBuild::to_json() const {
  return Json{{"seconds", seconds},
              {"host_rss_before_bytes", host_rss_before_bytes},
              {"host_peak_rss_bytes", host_peak_rss_bytes}};
}

Json StepSample::to_json() const {
  Json j{{"step", step},
         {"seconds", seconds},
         {"tokens", tokens},
         {"supervised_tokens", supervised_tokens},
         {"microbatches", microbatches},
         {"loss", loss},
         {"grad_norm", grad_norm},
         {"learning_rate", learning_rate},
         {"peak_memory_bytes", peak_memory_bytes},
         {"data_seconds", data_seconds},
         {"overhead_seconds", overhead_seconds},
         {"phases", Json{{"forward_seconds", forward_seconds},
                         {"backward_seconds", backward_seconds},
                         {"optimizer_seconds", optimizer_seconds},
                         {"gdn_seconds", components.gdn},
                         {"attention_seconds", components.attention},
                         {"moe_seconds", components.moe},
                         {"lm_head_loss_seconds", components.lm_head_loss}}}};
  if (comm_waits.measured)
    j["comm_waits"] = Json{{"tp_seconds", comm_waits.tp},
                           {"ep_seconds", comm_waits.ep},
                           {"dp_seconds", comm_waits.dp},
                           {"pp_seconds", comm_waits.pp}};
  return j;
}

}  // namespace recipebench
