// bench.fail_on_sync in the torch backend (docs/distributed.md, "Host synchronisation"): a step's region from its
// first forward pass to the optimizer's gradient norm runs with libtorch's CUDA synchronisation-debug mode set to
// error, so a call that makes the host wait for the GPU there (.item(), .cpu(), a copy from pageable host memory, a
// size-dependent operator such as nonzero, a stream synchronisation) fails the run, naming the operator and the step.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace recipebench::train {

/// True when `message` is libtorch's synchronisation-debug error ("called a synchronizing CUDA operation", thrown by
/// c10::cuda::warn_or_error_on_sync in mode L_ERROR).
bool is_host_sync_error(const std::string& message);

/// The run's message for libtorch's synchronisation error `libtorch_message` at `step`, naming the operators that
/// the error unwound, innermost first (`ops`, libtorch's RecordFunction names such as "aten::_local_scalar_dense",
/// "aten::item"; at most the first four are named): "step 3: fail_on_sync: a call synchronised the host with the GPU
/// between the first forward pass and the optimizer: aten::_local_scalar_dense, called from aten::item (libtorch:
/// called a synchronizing CUDA operation)": the first line of libtorch's message (no backtrace). With no operator
/// recorded it says so.
std::string host_sync_message(int step, const std::string& libtorch_message, const std::vector<std::string>& ops);

/// The operators that exceptions unwind while it lives, innermost first (libtorch's RecordFunction names, e.g.
/// "aten::_local_scalar_dense", then "aten::item"): a global RecordFunction callback, run at the end of every
/// operator (also the operators autograd runs on its device threads), keeps the names of those ended by an
/// exception. At most one at a time. Costs a callback per operator while it lives.
class UnwoundOpRecorder {
 public:
  UnwoundOpRecorder();
  ~UnwoundOpRecorder();
  UnwoundOpRecorder(const UnwoundOpRecorder&) = delete;
  UnwoundOpRecorder& operator=(const UnwoundOpRecorder&) = delete;
  /// The names recorded since the last take() (at most 16), and forgets them.
  std::vector<std::string> take();

 private:
  uint64_t callback_ = 0;  ///< the RecordFunction callback's handle
};

/// bench.fail_on_sync for one run. When `on` and `cuda` (the run's device is a CUDA device and libtorch has CUDA:
/// RECIPEBENCH_TORCH_CUDA), it holds an UnwoundOpRecorder to name the operator that synchronised (a callback per
/// operator: a run with the check is slower and its step times are not for comparison); otherwise the check does
/// nothing. Not copyable: one per run.
class HostSyncCheck {
 public:
  HostSyncCheck(bool on, bool cuda);
  ~HostSyncCheck();
  HostSyncCheck(const HostSyncCheck&) = delete;
  HostSyncCheck& operator=(const HostSyncCheck&) = delete;

  /// True when region() checks anything.
  bool active() const { return recorder_ != nullptr; }

  /// Runs `body`, step `step`'s no-synchronisation region. When active: with libtorch's synchronisation-debug mode
  /// at error, the previous mode restored afterwards (also when `body` throws); libtorch's synchronisation error
  /// becomes RunError(host_sync_message(...), step). Other exceptions pass unchanged.
  void region(int step, const std::function<void()>& body) const;

 private:
  std::unique_ptr<UnwoundOpRecorder> recorder_;  ///< set when active
};

/// The test hook RunHooks::inject_sync_step (RECIPEBENCH_INJECT_SYNC_STEP): reads a value of a new tensor on
/// `device` on the host (.item()), a synchronising call when the device is a CUDA device (nothing to catch on the
/// CPU). Called inside the region at that step, it is the fail_on_sync test's negative control.
void inject_host_sync(const c10::Device& device);

}  // namespace recipebench::train
