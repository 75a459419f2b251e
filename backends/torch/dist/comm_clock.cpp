#include "dist/comm_clock.h"

#include <atomic>
#include <stdexcept>
#include <utility>

// RECIPEBENCH_TORCH_CUDA is set by CMake when libtorch was built with CUDA (libc10_cuda present).
#ifdef RECIPEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace recipebench::dist {

namespace {
std::atomic<CommClock*> g_active{nullptr};
}  // namespace

#ifdef RECIPEBENCH_TORCH_CUDA
/// One timing event pair per wait slot, kept from step to step (an event is re-recorded, not re-created).
struct CommClock::Events {
  std::vector<std::pair<std::unique_ptr<at::cuda::CUDAEvent>, std::unique_ptr<at::cuda::CUDAEvent>>> pairs;
  void record_begin(size_t slot) {
    while (pairs.size() <= slot)
      pairs.emplace_back(std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault),
                         std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault));
    pairs[slot].first->record();
  }
  void record_end(size_t slot) { pairs[slot].second->record(); }
  double seconds(size_t slot) const { return pairs[slot].first->elapsed_time(*pairs[slot].second) / 1e3; }
};
#else
struct CommClock::Events {
  void record_begin(size_t) {}
  void record_end(size_t) {}
  double seconds(size_t) const { return 0; }
};
#endif

CommClock::CommClock(bool cuda) : cuda_(cuda), events_(std::make_unique<Events>()) {
#ifndef RECIPEBENCH_TORCH_CUDA
  if (cuda_) throw std::runtime_error("CommClock: CUDA events need a CUDA build of libtorch");
#endif
}

CommClock::~CommClock() = default;

size_t CommClock::begin(CommKind k) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t slot = marks_.size();
  marks_.push_back(Mark{k, Clock::now(), {}});
  if (cuda_) events_->record_begin(slot);
  return slot;
}

void CommClock::end(size_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cuda_)
    events_->record_end(slot);
  else
    marks_[slot].host_end = Clock::now();
}

WaitSecondsByKind CommClock::collect() {
  std::lock_guard<std::mutex> lock(mutex_);
  WaitSecondsByKind s{};
  for (size_t i = 0; i < marks_.size(); ++i) {
    const double t =
        cuda_ ? events_->seconds(i) : std::chrono::duration<double>(marks_[i].host_end - marks_[i].host_begin).count();
    s[static_cast<size_t>(marks_[i].kind)] += t;
  }
  marks_.clear();
  return s;
}

void set_active_comm_clock(CommClock* clock) { g_active.store(clock); }

CommWait::CommWait(CommKind k) : clock_(g_active.load()) {
  if (clock_) slot_ = clock_->begin(k);
}

CommWait::~CommWait() {
  if (clock_) clock_->end(slot_);
}

}  // namespace recipebench::dist
