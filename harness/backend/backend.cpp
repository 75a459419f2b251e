#include "backend/backend.h"

#include <cmath>
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

ComponentSeconds component_totals(const std::vector<PassSample>& passes) {
  ComponentSeconds c;
  for (const PassSample& p : passes) {
    c.gdn += p.component_seconds(ProfileComponent::kGdn);
    c.attention += p.component_seconds(ProfileComponent::kAttention);
    for (ProfileComponent m : {ProfileComponent::kMoeRouter, ProfileComponent::kMoeSharedExpert,
                               ProfileComponent::kMoeDispatch, ProfileComponent::kMoeExperts,
                               ProfileComponent::kMoeCombine, ProfileComponent::kMoeRest})
      c.moe += p.component_seconds(m);
    c.lm_head_loss += p.component_seconds(ProfileComponent::kLmHeadLoss);
  }
  return c;
}

Json ModelBuild::to_json() const {
  return Json{{"seconds", seconds},
              {"host_rss_before_bytes", host_rss_before_bytes},
              {"host_peak_rss_bytes", host_peak_rss_bytes}};
}

Json GroupTraffic::to_json() const {
  Json o = Json::object();
  for (const OpTraffic& t : ops) {
    Json one{{"calls", t.calls}, {"bytes", t.bytes}};
    if (t.op == "all_to_all") one["received_bytes"] = t.received_bytes;
    o[t.op] = one;
  }
  return Json{{"kinds", kinds}, {"members", members}, {"ops", o}};
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
  if (!passes.empty()) {
    Json p = Json::array();
    for (const PassSample& s : passes) p.push_back(recipebench::to_json(s));
    j["phases"]["passes"] = p;
  }
  if (std::isnan(loss)) j["loss"] = nullptr;
  if (!traffic.empty()) {
    Json t = Json::array();
    for (const GroupTraffic& g : traffic) t.push_back(g.to_json());
    j["traffic"] = t;
  }
  if (comm_waits.measured)
    j["comm_waits"] = Json{{"tp_seconds", comm_waits.tp},
                           {"ep_seconds", comm_waits.ep},
                           {"dp_seconds", comm_waits.dp},
                           {"pp_seconds", comm_waits.pp}};
  return j;
}

}  // namespace recipebench
