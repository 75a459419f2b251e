// --profile's per-component timer (docs/metrics.md, "Profile"): boundaries of the model's components marked in the
// forward and, through identity autograd functions, in the backward, so that each component's forward and backward
// time is measured where it runs. Off (no timer installed) the marks return their input and cost one atomic load.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <chrono>
#include <functional>

namespace recipebench::torch_model {

/// The model components the profile names (a closed set; train/ maps them onto the run record's ComponentSeconds).
enum class Component { Gdn, Attention, Moe, LmHeadLoss };
constexpr int kComponents = 4;

/// Accumulates wall time per component between start() and stop(), after waiting for the device (`sync`), so the
/// time is the device's, not the host's queueing. Components do not nest; the forward and the backward of one
/// component are both counted. Used from the training thread and from autograd's device thread, never at once
/// (the backward runs while the training thread waits in backward()).
class ComponentTimer {
 public:
  explicit ComponentTimer(std::function<void()> sync) : sync_(std::move(sync)) {}
  void start(Component c);
  void stop(Component c);
  /// Seconds accumulated per component since construction or the last reset(), indexed by Component.
  const std::array<double, kComponents>& seconds() const { return seconds_; }
  void reset() { seconds_.fill(0); }

 private:
  using Clock = std::chrono::steady_clock;
  std::function<void()> sync_;
  std::array<double, kComponents> seconds_{};
  std::array<Clock::time_point, kComponents> started_{};
};

/// Installs `timer` as the process's active timer (nullptr: none). The caller keeps it alive while installed.
void set_active_component_timer(ComponentTimer* timer);

/// Marks that `x` enters component c: forward starts c's clock; backward (the gradient leaving c) stops it.
/// Returns x itself (an alias) when no timer is active. Shapes and dtype unchanged.
at::Tensor component_enter(const at::Tensor& x, Component c);
/// Marks that `y` leaves component c: forward stops c's clock; backward (the gradient entering c) starts it.
at::Tensor component_exit(const at::Tensor& y, Component c);

}  // namespace recipebench::torch_model
