// What a process group's collectives moved (docs/emulation.md, "Traffic"): per operation the calls and the bytes,
// and on request every call's shape, so that an emulated rank's traffic can be compared with a real rank's and the
// step-time model can price it. Pure bookkeeping: no libtorch.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "layout/collective.h"

namespace recipebench::dist {

/// The operations of a process group: the layout's table of collectives (layout/collective.h), shared with the
/// step-time model.
using CollectiveOp = Collective;
constexpr int kCollectiveOps = kCollectives;

/// "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send", "recv", "barrier" (collective_row's
/// record_name).
const char* to_string(CollectiveOp op);

/// One call: the operation, the shape of the tensor it was given (all_reduce: the buffer; reduce_scatter: the full
/// input; all_gather: the full output; all_to_all: the rows sent; send / recv: the tensor) and its bytes (that
/// tensor's elements x element size: nccl-tests' "size" of the operation).
struct CollectiveCall {
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::vector<int64_t> shape;  ///< empty unless the log keeps its calls (TrafficLog::keep_calls)
  int64_t bytes = 0;
  int64_t received_bytes = 0;  ///< all_to_all: the rows received (bytes); 0 for the others
};

/// Calls and bytes per operation.
struct TrafficTotals {
  std::array<int64_t, kCollectiveOps> calls{};
  std::array<int64_t, kCollectiveOps> bytes{};
  int64_t received_bytes = 0;  ///< all_to_all rows received, summed (bytes)
  bool empty() const;
};

/// A group's traffic, noted by each of its operations. Thread-safe (autograd's device thread runs the backward's
/// collectives). The call list is kept only while `keep_calls` is on (a test hook: it grows with every step).
class TrafficLog {
 public:
  void note(const CollectiveCall& call);
  /// The totals since the last take_totals(), and forgets them.
  TrafficTotals take_totals();
  void keep_calls(bool on);
  /// True while calls are kept: only then does a call need its shape.
  bool keeping_calls() const;
  /// Every call noted while keep_calls was on, in order.
  std::vector<CollectiveCall> calls() const;

 private:
  mutable std::mutex mutex_;
  TrafficTotals totals_;
  bool keep_ = false;
  std::vector<CollectiveCall> calls_;
};

}  // namespace recipebench::dist
