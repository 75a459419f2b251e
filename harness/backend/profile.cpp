#include "backend/profile.h"

#include <numeric>

namespace recipebench {

namespace {
constexpr std::array<const char*, kProfileComponents> kComponentNames = {
    "embedding",   "gdn",         "attention", "moe_router",   "moe_shared_expert", "moe_dispatch",
    "moe_experts", "moe_combine", "moe_rest",  "lm_head_loss", "other",     "dense_mlp"};
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

Json phase_cells_json(const std::array<ComponentCells, kPassPhases>& cells, double divisor) {
  Json out = Json::object();
  for (int ph = 0; ph < kPassPhases; ++ph) {
    Json c = Json::object();
    for (int k = 0; k < kProfileComponents; ++k)
      if (const double s = cells[static_cast<size_t>(ph)][static_cast<size_t>(k)]; s > 0)
        c[to_string(ProfileComponent(k))] = s / divisor;
    if (!c.empty()) out[to_string(PassPhase(ph))] = c;
  }
  return out;
}

Json to_json(const PassSample& p) {
  Json j{{"kind", p.backward ? "backward" : "forward"},
         {"virtual_stage", p.virtual_stage},
         {"microbatch", p.microbatch},
         {"seconds", p.seconds}};
  j.update(phase_cells_json(p.phases));
  return j;
}

}  // namespace recipebench
