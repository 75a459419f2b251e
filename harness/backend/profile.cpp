#include "backend/profile.h"

#include <numeric>

namespace recipebench {

namespace {
constexpr std::array<const char*, kProfileComponents> kComponentNames = {
    "embedding",   "gdn",         "attention", "moe_router",   "moe_shared_expert", "moe_dispatch",
    "moe_experts", "moe_combine", "moe_rest",  "lm_head_loss", "other"};
constexpr std::array<const char*, kPassPhases> kPhaseNames = {"forward", "backward", "recompute"};
}  // namespace

const char* to_string(ProfileComponent c) { return kComponentNames[static_cast<size_t>(c)]; }

std::optional<ProfileComponent> profile_component_named(const std::string& name) {
  for (int i = 0; i < kProfileComponents; ++i)
    if (name == kComponentNames[static_cast<size_t>(i)]) return ProfileComponent(i);
  return std::nullopt;
}

const char* to_string(PassPhase p) { return kPhaseNames[static_cast<size_t>(p)]; }

std::optional<PassPhase> pass_phase_named(const std::string& name) {
  for (int i = 0; i < kPassPhases; ++i)
    if (name == kPhaseNames[static_cast<size_t>(i)]) return PassPhase(i);
  return std::nullopt;
}

double PassSample::phase_seconds(PassPhase p) const {
  const ComponentCells& c = phases[static_cast<size_t>(p)];
  return std::accumulate(c.begin(), c.end(), 0.0);
}

double PassSample::component_seconds(ProfileComponent c) const {
  double s = 0;
  for (const ComponentCells& p : phases) s += p[static_cast<size_t>(c)];
  return s;
}

Json to_json(const PassSample& p) {
  Json j{{"kind", p.backward ? "backward" : "forward"},
         {"virtual_stage", p.virtual_stage},
         {"microbatch", p.microbatch},
         {"seconds", p.seconds}};
  for (int ph = 0; ph < kPassPhases; ++ph) {
    Json cells = Json::object();
    for (int c = 0; c < kProfileComponents; ++c)
      if (const double s = p.phases[static_cast<size_t>(ph)][static_cast<size_t>(c)]; s > 0)
        cells[to_string(ProfileComponent(c))] = s;
    if (!cells.empty()) j[to_string(PassPhase(ph))] = cells;
  }
  return j;
}

}  // namespace recipebench
