// The exposed-communication clock of a multi-rank step (docs/distributed.md, "Where a step's time goes"): how long
// this rank's compute waited for each kind of communication, measured where the compute waits and without
// synchronising the device, so the overlap being measured is left intact.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

namespace recipebench::dist {

/// The kinds of communication a step waits for (a closed set; the run record's steps[].comm_waits).
enum class CommKind {
  kTensorParallel,  ///< TP / sequence-parallel all-gathers, reduce-scatters and the vocab-parallel loss's reductions
  kExpertParallel,  ///< the MoE dispatcher's all-to-alls (counts and token rows)
  kDataParallel,    ///< the optimizers' gradient reduce-scatters / all-reduces, norm reductions and all-gathers
  kPipeline,        ///< pipeline receives and sends (the bubble and the transfers)
};
constexpr int kCommKinds = 4;

/// Seconds waited per CommKind (indexed by the enum's value).
using WaitSecondsByKind = std::array<double, kCommKinds>;

/// Accumulates, per CommKind, the time between a wait's begin and end marks. On a CUDA device each mark is a CUDA
/// event recorded on the current stream, so a wait spans the time the stream's compute could not go on: a
/// collective launched and waited in one call counts whole, an asynchronous one (a gradient bucket) from its wait
/// on; the events are read in collect(), after the step's device synchronisation. On the CPU (Gloo, whose waits
/// block the host) the marks are host clock readings. Thread-safe (autograd's device thread marks the backward's
/// collectives).
class CommClock {
 public:
  /// `cuda`: mark with CUDA events on the current stream (a CUDA build; std::runtime_error otherwise).
  explicit CommClock(bool cuda);
  ~CommClock();
  CommClock(const CommClock&) = delete;
  CommClock& operator=(const CommClock&) = delete;

  /// Marks the begin of a wait of kind k; returns its slot for end().
  size_t begin(CommKind k);
  /// Marks the end of the wait begun at `slot`.
  void end(size_t slot);
  /// Seconds waited per kind since the last collect(), and forgets them. With CUDA the device must have finished
  /// the marked work (call it after synchronising); throws c10::Error otherwise.
  WaitSecondsByKind collect();

 private:
  struct Events;  // CUDA events (comm_clock.cpp)
  using Clock = std::chrono::steady_clock;
  struct Mark {
    CommKind kind;
    Clock::time_point host_begin, host_end;
  };
  bool cuda_;
  std::mutex mutex_;
  std::vector<Mark> marks_;
  std::unique_ptr<Events> events_;
};

/// Installs `clock` as the process's active clock (nullptr: none; the caller keeps it alive while installed).
void set_active_comm_clock(CommClock* clock);

/// Marks one wait of kind k on the active clock for the scope's lifetime (nothing without an active clock).
class CommWait {
 public:
  explicit CommWait(CommKind k);
  ~CommWait();
  CommWait(const CommWait&) = delete;
  CommWait& operator=(const CommWait&) = delete;

 private:
  CommClock* clock_;
  size_t slot_ = 0;
};

}  // namespace recipebench::dist
