#include "run/backend.h"

#include <map>

namespace recipebench {

namespace {
std::map<std::string, BackendFactory>& registry() {
  static std::map<std::string, BackendFactory> r;
  return r;
}
}  // namespace

void register_backend(const std::string& name, BackendFactory factory) { registry()[name] = std::move(factory); }

std::unique_ptr<Backend> make_backend(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second();
}

std::vector<std::string> backend_names() {
  std::vector<std::string> out;
  for (const auto& [name, _] : registry()) out.push_back(name);
  return out;
}

Json RunOptions::to_json() const {
  Json j{{"backend", backend},
         {"steps", steps},
         {"window", Json::array({window.first, window.last})},
         {"layers", layers ? Json(*layers) : Json(nullptr)},
         {"device", device},
         {"seed", seed},
         {"profile", profile},
         {"deterministic", deterministic},
         {"ranks", world},
         {"data", Json{{"source", data_source}}}};
  if (data_source == "file") j["data"]["path"] = data_path;
  else j["data"]["supervised_token_ratio"] = supervised_token_ratio;
  if (data_source != "file" && min_row_tokens > 0) j["data"]["min_row_tokens"] = min_row_tokens;
  return j;
}

Json StepSample::to_json() const {
  return Json{{"step", step},
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
                              {"optimizer_seconds", optimizer_seconds}}}};
}

}  // namespace recipebench
