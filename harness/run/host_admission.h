// What this host cannot run, refused before the backend is made, any rank starts or a record is written (docs/
// memory-plan.md, "Before a run starts"): CUDA devices for the ranks, CPU memory for the memory plan.
#pragma once

#include <optional>

#include "run/admission.h"

namespace recipebench {

/// Refuses (exit 1), for a backend that starts its own ranks (Launch::kPerRank), a run this host cannot start or
/// hold: on CUDA fewer CUDA devices than the ranks this process runs or starts (suggesting --device cpu only when
/// the CPU run fits this host); on the CPU, for a backend the memory plan models, a plan that needs more memory than
/// the host has available (the plan's figure in GB; --layers K suggested only when K's plan fits). `request.host`
/// stands in for this machine in tests. nullopt when the host can run it.
std::optional<Refusal> host_refusal(const Admission& a);

}  // namespace recipebench
