// --profile's pass timer (docs/metrics.md, "Profile"): the pipeline executor opens and closes each pass of the step's
// schedule, the model marks its components' boundaries in the forward and, through identity autograd functions, in
// the backward, and the recompute marks the forward it runs again inside a backward. Every moment of a pass is
// charged to one cell (phase x innermost open component, or `other`), between device synchronisations, so the time
// is the device's and a pass's cells add up to its seconds. Off (no timer installed) every mark returns its input
// and costs one atomic load.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "backend/profile.h"

namespace recipebench::torch_model {

/// Charges the time of the passes it is told about to (phase, component) cells (backend/profile.h PassSample).
/// Components nest (the MoE block's parts inside the block): the innermost open one is charged. Used from the
/// training thread and from autograd's device thread, never at once (the backward runs while the training thread
/// waits in backward()). Marks outside a pass are ignored.
class ComponentTimer {
 public:
  explicit ComponentTimer(std::function<void()> sync) : sync_(std::move(sync)) {}
  /// A pass of the schedule starts (synchronises the device first): forward or backward of `microbatch` through the
  /// rank's model chunk `virtual_stage`.
  void begin_pass(bool backward, int virtual_stage, int64_t microbatch);
  /// The pass ends (synchronises the device): its sample joins passes().
  void end_pass();
  /// Component c opens (pushed) or closes (the innermost open c is taken off, with what is open inside it).
  void open(ProfileComponent c);
  void close(ProfileComponent c);
  /// Inside a backward pass: the recompute's forward starts / ends (the phase is recompute in between).
  void begin_recompute();
  void end_recompute();
  /// The passes ended since construction, in the order they ran.
  const std::vector<PassSample>& passes() const { return passes_; }

 private:
  using Clock = std::chrono::steady_clock;
  /// Synchronises and charges the time since the last charge to the current phase's innermost open component.
  void charge();
  std::function<void()> sync_;
  std::optional<PassSample> pass_;  // the pass running, if any
  PassPhase phase_ = PassPhase::kForward;
  std::vector<ProfileComponent> open_;  // open components, innermost last
  Clock::time_point since_{};
  std::vector<PassSample> passes_;
};

/// Installs `timer` as the process's active timer (nullptr: none). The caller keeps it alive while installed.
void set_active_component_timer(ComponentTimer* timer);

/// With an active timer: begin_pass / end_pass, begin_recompute / end_recompute on it; nothing otherwise.
void profile_begin_pass(bool backward, int virtual_stage, int64_t microbatch);
void profile_end_pass();
void profile_begin_recompute();
void profile_end_recompute();

/// Marks that `x` enters component c: the forward opens c; the backward (the gradient leaving c) closes it.
/// Returns x itself (an alias) when no timer is active. Shapes and dtype unchanged. On a tensor without gradient
/// (token ids) only the forward's mark exists: the backward of c then lasts until the pass ends.
at::Tensor component_enter(const at::Tensor& x, ProfileComponent c);
/// Marks that `y` leaves component c: the forward closes c; the backward (the gradient entering c) opens it.
at::Tensor component_exit(const at::Tensor& y, ProfileComponent c);

}  // namespace recipebench::torch_model
