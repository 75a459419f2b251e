#include "settings/run_options.h"

#include <cstdlib>
#include <stdexcept>

#include "settings/switches.h"

namespace recipebench {

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

const char* fail_kind_name(FailKind k) {
  switch (k) {
    case FailKind::kKill:
      return "kill";
    case FailKind::kNanLoss:
      return "nan_loss";
    case FailKind::kThrow:
      break;
  }
  return "throw";
}

FailKind fail_kind_from(const std::string& text) {
  for (FailKind k : {FailKind::kThrow, FailKind::kKill, FailKind::kNanLoss})
    if (text == fail_kind_name(k)) return k;
  throw std::invalid_argument("RECIPEBENCH_FAIL_KIND=" + text + ", expected throw, kill or nan_loss");
}

void apply_environment_hooks(RunOptions& o) {
  if (const auto t = env_int("RECIPEBENCH_DIST_TIMEOUT")) o.place.dist_timeout_seconds = *t;
  if (const auto r = env_int("RECIPEBENCH_FAIL_RANK")) o.hooks.fail_rank = *r;
  if (const auto s = env_int("RECIPEBENCH_FAIL_STEP")) o.hooks.fail_step = *s;
  if (const char* k = std::getenv("RECIPEBENCH_FAIL_KIND"); k && *k) o.hooks.fail_kind = fail_kind_from(k);
  if (const char* n = std::getenv("RECIPEBENCH_LAUNCH_NOTE"); n && *n) o.place.launch_note_path = n;
  if (const char* dump = std::getenv("RECIPEBENCH_DUMP_PARAMS"); dump && *dump) o.hooks.dump_params_path = dump;
  if (const char* dump = std::getenv("RECIPEBENCH_DUMP_INIT_PARAMS"); dump && *dump)
    o.hooks.dump_init_params_path = dump;
  if (const auto d = env_int("RECIPEBENCH_DUMP_STEP_PARAMS")) o.hooks.dump_step_params = *d != 0;
  if (const auto s = env_int("RECIPEBENCH_INJECT_SYNC_STEP")) o.hooks.inject_sync_step = *s;
  if (const char* dump = std::getenv("RECIPEBENCH_DUMP_TRAFFIC"); dump && *dump) o.hooks.dump_traffic_path = dump;
}

Json RunOptions::to_json(bool per_rank_backend) const {
  const RunSettings& s = settings;
  Json j{{"backend", s.backend},
         {"window", Json::array({s.window.first, s.window.last})},
         {"layers", s.layers ? Json(*s.layers) : Json(nullptr)},
         {"emulate_rank", s.emulate_rank ? Json(*s.emulate_rank) : Json(nullptr)},
         {"emulated_stage_layers", s.emulated_stage_layers ? Json(*s.emulated_stage_layers) : Json(nullptr)},
         {"device", to_string(s.device)},
         {"seed", s.seed},
         {"profile", s.profile},
         {"ranks", place.world},
         {"dist_timeout_seconds", place.dist_timeout_seconds},
         {"data", Json{{"source", to_string(s.data.source)}}}};
  switches_to_json(s, effects, per_rank_backend, j);  // steps and the bench.* switches (settings/switches.h)
  if (s.data.source == DataSource::kFile)
    j["data"]["path"] = s.data.path;
  else
    j["data"]["supervised_token_ratio"] = s.data.supervised_token_ratio;
  if (s.data.source != DataSource::kFile && s.data.min_row_tokens > 0)
    j["data"]["min_row_tokens"] = s.data.min_row_tokens;
  if (s.backend == "command") {
    j["command"] = Json{{"log_format", command.log_format ? Json(*command.log_format) : Json("detect")},
                        {"timeout_seconds", command.timeout_seconds ? Json(*command.timeout_seconds) : Json(nullptr)},
                        {"source", command.import_log.empty() ? "run" : "import"}};
  }
  if (hooks.any()) {
    Json h = Json::object();
    if (hooks.fail_rank) h["fail_rank"] = *hooks.fail_rank;
    if (hooks.fail_step) h["fail_step"] = *hooks.fail_step;
    if (hooks.fail_rank || hooks.fail_step) h["fail_kind"] = fail_kind_name(hooks.fail_kind);
    if (!hooks.dump_params_path.empty()) h["dump_params"] = hooks.dump_params_path;
    if (!hooks.dump_init_params_path.empty()) h["dump_init_params"] = hooks.dump_init_params_path;
    if (hooks.dump_step_params) h["dump_step_params"] = true;
    if (hooks.inject_sync_step) h["inject_sync_step"] = *hooks.inject_sync_step;
    if (!hooks.dump_traffic_path.empty()) h["dump_traffic"] = hooks.dump_traffic_path;
    j["hooks"] = h;
  }
  return j;
}

}  // namespace recipebench
