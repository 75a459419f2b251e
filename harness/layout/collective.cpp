#include "layout/collective.h"

namespace recipebench {

namespace {

constexpr CollectiveRow kRows[kCollectives] = {
    {Collective::kAllReduce, "all_reduce", "all-reduce", "the buffer"},
    {Collective::kReduceScatter, "reduce_scatter", "reduce-scatter", "the full input"},
    {Collective::kAllGather, "all_gather", "all-gather", "the full output"},
    {Collective::kAllToAll, "all_to_all", "all-to-all", "the rows one rank sends, its own share included"},
    {Collective::kSend, "send", "send/recv", "the message"},
    {Collective::kRecv, "recv", "send/recv", "the message"},
    {Collective::kBarrier, "barrier", "barrier", "nothing"},
};

}  // namespace

const CollectiveRow& collective_row(Collective op) { return kRows[static_cast<int>(op)]; }

}  // namespace recipebench
