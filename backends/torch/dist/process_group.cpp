#include "dist/process_group.h"

#include "dist/compat_c10d.h"

#include <algorithm>
#include <stdexcept>

namespace recipebench::dist {

#if RECIPEBENCH_HAVE_C10D_GLOO

namespace {
constexpr const char* kFailureCount = "recipebench/failures";
constexpr const char* kFirstFailure = "recipebench/first_failure";
}  // namespace

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;  ///< the run's TCPStore (subgroups: the same, their keys prefixed)
  c10::intrusive_ptr<compat::GlooGroup> group;
  bool one_host = false;
  std::chrono::milliseconds timeout{0};
};

ProcessGroup::ProcessGroup(int rank, int world, const std::string& master_addr, int master_port,
                           std::chrono::seconds timeout)
    : impl_(std::make_unique<Impl>()), rank_(rank), world_(world) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(master_port);
  so.isServer = rank == 0;
  so.numWorkers = static_cast<std::size_t>(world);
  so.waitWorkers = true;
  so.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  impl_->store = c10::make_intrusive<c10d::TCPStore>(master_addr, so);
  // Rank 0 on loopback: every rank is on this host, Gloo talks over loopback too.
  impl_->one_host = master_addr == "127.0.0.1" || master_addr == "localhost";
  impl_->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  impl_->group = compat::make_gloo_group(impl_->store, rank, world, impl_->one_host, impl_->timeout);
}

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl, int rank, int world)
    : impl_(std::move(impl)), rank_(rank), world_(world) {}

ProcessGroup::~ProcessGroup() = default;

std::unique_ptr<ProcessGroup> ProcessGroup::subgroup(const std::string& name, const std::vector<int>& ranks) {
  const auto at = std::find(ranks.begin(), ranks.end(), rank_);
  if (at == ranks.end())
    throw std::runtime_error("subgroup " + name + ": rank " + std::to_string(rank_) + " is not a member");
  const int sub_rank = static_cast<int>(at - ranks.begin()), sub_world = static_cast<int>(ranks.size());
  auto impl = std::make_unique<Impl>();
  impl->store = c10::make_intrusive<c10d::PrefixStore>("recipebench/group/" + name, impl_->store);
  impl->one_host = impl_->one_host;
  impl->timeout = impl_->timeout;
  impl->group = compat::make_gloo_group(impl->store, sub_rank, sub_world, impl->one_host, impl->timeout);
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl), sub_rank, sub_world));
}

void ProcessGroup::all_to_all(const at::Tensor& in, at::Tensor& out, std::vector<int64_t> out_counts,
                              std::vector<int64_t> in_counts) {
  compat::all_to_all(*impl_->group, in, out, out_counts, in_counts);
}

void ProcessGroup::all_reduce_sum(at::Tensor& t) {
  std::vector<at::Tensor> v{t};
  impl_->group->allreduce(v)->wait();
}

void ProcessGroup::all_reduce_max(at::Tensor& t) {
  std::vector<at::Tensor> v{t};
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::MAX;
  impl_->group->allreduce(v, o)->wait();
}

void ProcessGroup::reduce_scatter_sum(at::Tensor& full, at::Tensor& shard) {
  compat::reduce_scatter_sum(*impl_->group, full, shard);
}

void ProcessGroup::all_gather(const at::Tensor& shard, at::Tensor& full) {
  std::vector<std::vector<at::Tensor>> out(1);
  const int64_t n = shard.numel();
  for (int r = 0; r < world_; ++r) out[0].push_back(full.narrow(0, r * n, n));
  std::vector<at::Tensor> in{shard};
  impl_->group->allgather(out, in)->wait();
}

void ProcessGroup::barrier() { impl_->group->barrier()->wait(); }

bool ProcessGroup::report_failure(const std::string& message) {
  try {
    if (impl_->store->add(kFailureCount, 1) != 1) return false;
    const std::string m = "rank " + std::to_string(rank_) + ": " + message;
    impl_->store->set(kFirstFailure, std::vector<uint8_t>(m.begin(), m.end()));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string ProcessGroup::first_failure() {
  try {
    if (!impl_->store->check({kFirstFailure})) return "";
    const auto v = impl_->store->get(kFirstFailure);
    return std::string(v.begin(), v.end());
  } catch (const std::exception&) {
    return "";
  }
}

namespace {
/// A c10d send or receive (compat::WorkPtr) and its tensor.
struct WorkRequest : ProcessGroup::Request {
  WorkRequest(compat::WorkPtr w, std::vector<at::Tensor> t) : work(std::move(w)), tensors(std::move(t)) {}
  void wait() override {
    if (work) work->wait();
    work.reset();
  }
  compat::WorkPtr work;
  std::vector<at::Tensor> tensors;
};
}  // namespace

std::unique_ptr<ProcessGroup::Request> ProcessGroup::isend(const at::Tensor& t, int dst, int tag) {
  std::vector<at::Tensor> v{t.is_contiguous() ? t : t.contiguous()};
  auto work = impl_->group->send(v, dst, tag);
  return std::make_unique<WorkRequest>(std::move(work), std::move(v));
}

std::unique_ptr<ProcessGroup::Request> ProcessGroup::irecv(at::Tensor& t, int src, int tag) {
  if (!t.is_contiguous()) throw std::invalid_argument("ProcessGroup::irecv: the tensor must be contiguous");
  std::vector<at::Tensor> v{t};
  auto work = impl_->group->recv(v, src, tag);
  return std::make_unique<WorkRequest>(std::move(work), std::move(v));
}

#else  // no c10d Gloo in this libtorch: multi-rank runs are refused

struct ProcessGroup::Impl {};

ProcessGroup::ProcessGroup(int rank, int world, const std::string&, int, std::chrono::seconds)
    : rank_(rank), world_(world) {
  throw std::runtime_error("this build's libtorch has no c10d Gloo headers (torch/csrc/distributed/c10d/"
                           "ProcessGroupGloo.hpp, gloo/config.h): multi-rank runs are not available");
}
ProcessGroup::~ProcessGroup() = default;
void ProcessGroup::all_reduce_sum(at::Tensor&) {}
void ProcessGroup::all_reduce_max(at::Tensor&) {}
void ProcessGroup::reduce_scatter_sum(at::Tensor&, at::Tensor&) {}
void ProcessGroup::all_gather(const at::Tensor&, at::Tensor&) {}
void ProcessGroup::barrier() {}
void ProcessGroup::all_to_all(const at::Tensor&, at::Tensor&, std::vector<int64_t>, std::vector<int64_t>) {}
std::unique_ptr<ProcessGroup> ProcessGroup::subgroup(const std::string&, const std::vector<int>&) { return nullptr; }
bool ProcessGroup::report_failure(const std::string&) { return true; }
std::string ProcessGroup::first_failure() { return ""; }
std::unique_ptr<ProcessGroup::Request> ProcessGroup::isend(const at::Tensor&, int, int) { return nullptr; }
std::unique_ptr<ProcessGroup::Request> ProcessGroup::irecv(at::Tensor&, int, int) { return nullptr; }

#endif

}  // namespace recipebench::dist
