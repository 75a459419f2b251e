// The collectives of a layout's process groups, one table shared by the step-time model (plan/collective_time.h)
// and the traffic a rank's process groups record (the torch backend's dist/traffic.h; docs/emulation.md,
// "Traffic"): each operation's name as the record writes it, its name in text, and what its bytes count (nccl-tests'
// "size"). The bus factor and the ring's latency steps of each are plan/collective_time.h's, from this table.
#pragma once

namespace recipebench {

/// A collective operation (a closed set).
enum class Collective { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kSend, kRecv, kBarrier };
constexpr int kCollectives = 7;

/// One row of the table.
struct CollectiveRow {
  Collective op;
  const char* record_name;  ///< as run records write it: "all_reduce", ..., "send", "recv", "barrier"
  const char* text_name;    ///< in predictions and messages: "all-reduce", ..., "send/recv", "barrier"
  const char* bytes;        ///< what its bytes count (nccl-tests' "size"), for docs and messages
};

/// The row of `op`.
const CollectiveRow& collective_row(Collective op);

}  // namespace recipebench
