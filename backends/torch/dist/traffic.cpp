#include "dist/traffic.h"

namespace recipebench::dist {

const char* to_string(CollectiveOp op) { return collective_row(op).record_name; }

bool TrafficTotals::empty() const {
  for (const int64_t c : calls)
    if (c) return false;
  return true;
}

void TrafficLog::note(const CollectiveCall& call) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto i = static_cast<size_t>(call.op);
  totals_.calls[i] += 1;
  totals_.bytes[i] += call.bytes;
  if (call.op == CollectiveOp::kAllToAll) totals_.received_bytes += call.received_bytes;
  if (keep_) calls_.push_back(call);
}

TrafficTotals TrafficLog::take_totals() {
  const std::lock_guard<std::mutex> lock(mutex_);
  TrafficTotals t = totals_;
  totals_ = TrafficTotals{};
  return t;
}

void TrafficLog::keep_calls(bool on) {
  const std::lock_guard<std::mutex> lock(mutex_);
  keep_ = on;
}

bool TrafficLog::keeping_calls() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return keep_;
}

std::vector<CollectiveCall> TrafficLog::calls() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}

}  // namespace recipebench::dist
