#include "train/host_sync_check.h"

#include <ATen/record_function.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <atomic>
#include <exception>
#include <mutex>

#include "backend/backend.h"

// RECIPEBENCH_TORCH_CUDA is set by CMake when libtorch was built with CUDA (libc10_cuda present).
#ifdef RECIPEBENCH_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace recipebench::train {

namespace {

constexpr const char* kSyncError = "called a synchronizing CUDA operation";  // c10/cuda/CUDAFunctions.cpp
constexpr size_t kMaxOps = 16;

/// The operators unwound by exceptions since the last clear(), innermost first (a RecordFunction end callback runs in
/// the RecordFunction's destructor, so also while an exception unwinds the operator). Global: autograd runs a CUDA
/// device's backward passes on its own thread.
struct UnwoundOps {
  std::mutex mutex;
  std::vector<std::string> names;
};

UnwoundOps& unwound_ops() {
  static UnwoundOps ops;
  return ops;
}

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction&) { return nullptr; }

void on_op_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (std::uncaught_exceptions() == 0) return;
  UnwoundOps& ops = unwound_ops();
  const std::lock_guard<std::mutex> lock(ops.mutex);
  if (ops.names.size() < kMaxOps) ops.names.emplace_back(fn.name());
}

/// The exception's message without libtorch's C++ backtrace.
std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

#ifdef RECIPEBENCH_TORCH_CUDA
/// libtorch's CUDA synchronisation-debug mode at error while it lives; the previous mode restored on destruction.
class SyncDebugError {
 public:
  SyncDebugError() : previous_(c10::cuda::warning_state().get_sync_debug_mode()) {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
  }
  ~SyncDebugError() { c10::cuda::warning_state().set_sync_debug_mode(previous_); }
  SyncDebugError(const SyncDebugError&) = delete;
  SyncDebugError& operator=(const SyncDebugError&) = delete;

 private:
  c10::cuda::SyncDebugMode previous_;
};
#endif

}  // namespace

bool is_host_sync_error(const std::string& message) { return message.find(kSyncError) != std::string::npos; }

std::string host_sync_message(int step, const std::string& libtorch_message, const std::vector<std::string>& ops) {
  std::string where;
  for (size_t i = 0; i < ops.size() && i < 4; ++i) where += (i == 0 ? "" : i == 1 ? ", called from " : " < ") + ops[i];
  if (where.empty()) where = "no operator recorded (a call outside libtorch's dispatcher)";
  std::string libtorch = libtorch_message.substr(0, libtorch_message.find('\n'));  // without a backtrace
  while (!libtorch.empty() && (libtorch.back() == '\n' || libtorch.back() == '.')) libtorch.pop_back();
  return "step " + std::to_string(step) +
         ": fail_on_sync: a call synchronised the host with the GPU between the first forward pass and the "
         "optimizer: " +
         where + " (libtorch: " + libtorch + ")";
}

UnwoundOpRecorder::UnwoundOpRecorder() {
  take();
  at::RecordFunctionCallback cb(&on_op_start, &on_op_end);
  cb.scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION});
  callback_ = at::addGlobalCallback(cb);
}

UnwoundOpRecorder::~UnwoundOpRecorder() { at::removeCallback(callback_); }

std::vector<std::string> UnwoundOpRecorder::take() {
  UnwoundOps& ops = unwound_ops();
  const std::lock_guard<std::mutex> lock(ops.mutex);
  std::vector<std::string> out;
  out.swap(ops.names);
  return out;
}

HostSyncCheck::HostSyncCheck(bool on, bool cuda) {
#ifdef RECIPEBENCH_TORCH_CUDA
  if (on && cuda) recorder_ = std::make_unique<UnwoundOpRecorder>();
#else
  (void)on;
  (void)cuda;
#endif
}

HostSyncCheck::~HostSyncCheck() = default;

void HostSyncCheck::region(int step, const std::function<void()>& body) const {
  if (!recorder_) {
    body();
    return;
  }
  recorder_->take();  // what an earlier, handled exception left
  try {
#ifdef RECIPEBENCH_TORCH_CUDA
    const SyncDebugError mode;
#endif
    body();
  } catch (const std::exception& e) {
    const std::string message = message_of(e);
    if (!is_host_sync_error(message)) throw;
    throw RunError(host_sync_message(step, message, recorder_->take()), step);
  }
}

void inject_host_sync(const c10::Device& device) {
  (void)torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat32).device(device)).item<float>();
}

}  // namespace recipebench::train
