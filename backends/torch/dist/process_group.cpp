#include "dist/process_group.h"

#include "dist/compat_c10d.h"
#include "dist/stand_in.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>

#if RECIPEBENCH_HAVE_C10D_NCCL
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace recipebench::dist {

bool transport_available(Transport t) {
  switch (t) {
    case Transport::kNccl:
      return RECIPEBENCH_HAVE_C10D_NCCL == 1;
    case Transport::kGloo:
      return RECIPEBENCH_HAVE_C10D_GLOO == 1;
    case Transport::kStandIn:
      return RECIPEBENCH_HAVE_C10D == 1;
  }
  return false;
}

namespace {
std::vector<int> run_ranks(int world) {
  std::vector<int> r(static_cast<size_t>(world));
  for (int i = 0; i < world; ++i) r[static_cast<size_t>(i)] = i;
  return r;
}

/// Notes an operation on `t` in `log` (dist/traffic.h says which tensor each operation names); its shape only when
/// the log keeps calls (a real run's collectives allocate nothing for it).
void note(TrafficLog& log, CollectiveOp op, const at::Tensor& t, int64_t received_bytes = 0) {
  const int64_t bytes = t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
  CollectiveCall c{op, {}, bytes, received_bytes};
  if (t.defined() && log.keeping_calls()) c.shape = t.sizes().vec();
  log.note(c);
}

/// A stand-in operation's request: done when issued.
struct DoneRequest : ProcessGroup::Request {
  void wait() override {}
};
}  // namespace

#if RECIPEBENCH_HAVE_C10D

namespace {
/// Gloo's all-gather refuses BF16 tensors (libtorch 1.13's "Invalid scalar type"); it only moves bytes, so a BF16
/// tensor travels as an FP16 view of the same bits (bitwise the same result).
at::Tensor gloo_gather_view(const at::Tensor& t) { return t.scalar_type() == at::kBFloat16 ? t.view(at::kHalf) : t; }

constexpr const char* kFailureCount = "recipebench/failures";
constexpr const char* kFirstFailure = "recipebench/first_failure";
constexpr const char* kFinished = "recipebench/finished";

/// The group of `world` ranks over `store` on `transport`; throws std::runtime_error when this build lacks it.
c10::intrusive_ptr<compat::Group> make_group(Transport transport, const c10::intrusive_ptr<c10d::Store>& store,
                                             int rank, int world, bool one_host, std::chrono::milliseconds timeout) {
  if (transport == Transport::kNccl) {
#if RECIPEBENCH_HAVE_C10D_NCCL
    return compat::make_nccl_group(store, rank, world, timeout);
#else
    throw std::runtime_error(
        "this build has no c10d NCCL (a CUDA libtorch with torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.hpp and nccl.h): multi-rank CUDA runs are not available");
#endif
  }
#if RECIPEBENCH_HAVE_C10D_GLOO
  return compat::make_gloo_group(store, rank, world, one_host, timeout);
#else
  (void)store, (void)rank, (void)world, (void)one_host, (void)timeout;
  throw std::runtime_error(
      "this build's libtorch has no c10d Gloo headers (torch/csrc/distributed/c10d/"
      "ProcessGroupGloo.hpp, gloo/config.h): multi-rank CPU runs are not available");
#endif
}
}  // namespace

#if RECIPEBENCH_HAVE_C10D_NCCL && TORCH_VERSION_MAJOR >= 2
#define RECIPEBENCH_NCCL_FAILURE_WATCHER 1
/// An NCCL wait never throws when a peer has failed, so a rank blocked in a collective would wait for NCCL's
/// watchdog (the whole timeout). This watcher, a thread of the run's NCCL group, polls the store for another
/// rank's failure (report_failure) and then aborts every NCCL group of this process (ncclCommAbort), which makes
/// the blocked work return and the next collective throw, so this rank takes the failure path (and rank 0 writes
/// its run record) within about a second.
struct NcclFailureWatcher {
  std::mutex m;
  std::vector<c10::intrusive_ptr<compat::Group>> groups;  ///< every NCCL group of this process
  std::atomic<bool> stop{false};
  std::thread thread;

  void add(const c10::intrusive_ptr<compat::Group>& g) {
    std::lock_guard<std::mutex> lock(m);
    groups.push_back(g);
  }
  void start(c10::intrusive_ptr<c10d::Store> store, int rank) {
    thread = std::thread([this, store = std::move(store), rank] {
      const std::string own = "rank " + std::to_string(rank) + ": ";
      while (!stop) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        try {
          if (!store->check({kFirstFailure})) continue;
          const auto v = store->get(kFirstFailure);
          if (std::string(v.begin(), v.end()).rfind(own, 0) == 0) return;  // this rank's own failure
          std::lock_guard<std::mutex> lock(m);
          for (auto& g : groups) static_cast<c10d::ProcessGroupNCCL*>(g.get())->abort();
          return;
        } catch (const std::exception&) {
          return;  // the store is gone: the run is over
        }
      }
    });
  }
  void halt() {
    stop = true;
    if (thread.joinable()) thread.join();
  }
};
#endif

struct ProcessGroup::Impl {
#if RECIPEBENCH_NCCL_FAILURE_WATCHER
  std::shared_ptr<NcclFailureWatcher> watcher;  ///< shared by the run's NCCL group and its subgroups
  bool owns_watcher = false;                    ///< the run's group: it runs the thread
  ~Impl() {
    if (owns_watcher) watcher->halt();
  }
#endif
  c10::intrusive_ptr<c10d::Store> store;  ///< the run's TCPStore (subgroups: the same, their keys prefixed)
  c10::intrusive_ptr<compat::Group> group;
  Transport transport = Transport::kGloo;
  int cuda_device = -1;  ///< NCCL: this rank's GPU
  bool one_host = false;
  std::chrono::milliseconds timeout{0};

  /// The tensor a collective runs on: `t` itself, or with NCCL and a CPU `t` a copy on this rank's GPU.
  at::Tensor on_transport(const at::Tensor& t) const {
    if (transport == Transport::kNccl && !t.is_cuda()) return t.to(at::Device(at::kCUDA, cuda_device));
    return t;
  }
  /// Copies a collective's result back into `t` when on_transport made a GPU copy of it.
  static void back(at::Tensor& t, const at::Tensor& on) {
    if (!on.is_same(t)) t.copy_(on);
  }
};

ProcessGroup::ProcessGroup(int rank, int world, const std::string& master_addr, int master_port,
                           std::chrono::seconds timeout, Transport transport, int cuda_device)
    : impl_(std::make_unique<Impl>()),
      rank_(rank),
      world_(world),
      members_(run_ranks(world)),
      traffic_(std::make_unique<TrafficLog>()) {
  if (transport == Transport::kStandIn)
    throw std::invalid_argument("ProcessGroup: the stand-in transport has no rendezvous (ProcessGroup::make_stand_in)");
#if RECIPEBENCH_HAVE_C10D_NCCL
  // NCCL's communicator lives on the current device: this rank's GPU.
  if (transport == Transport::kNccl) c10::cuda::set_device(static_cast<c10::DeviceIndex>(cuda_device));
#endif
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
  impl_->transport = transport;
  impl_->cuda_device = cuda_device;
  impl_->group = make_group(transport, impl_->store, rank, world, impl_->one_host, impl_->timeout);
#if RECIPEBENCH_NCCL_FAILURE_WATCHER
  if (transport == Transport::kNccl) {
    impl_->watcher = std::make_shared<NcclFailureWatcher>();
    impl_->owns_watcher = true;
    impl_->watcher->add(impl_->group);
    impl_->watcher->start(impl_->store, rank);
  }
#endif
}

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl, int rank, int world, std::vector<int> members)
    : impl_(std::move(impl)),
      rank_(rank),
      world_(world),
      members_(std::move(members)),
      traffic_(std::make_unique<TrafficLog>()) {}

std::unique_ptr<ProcessGroup> ProcessGroup::make_stand_in(int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world)
    throw std::invalid_argument("ProcessGroup::make_stand_in: rank " + std::to_string(rank) + " of " +
                                std::to_string(world) + " ranks");
  std::unique_ptr<ProcessGroup> g(new ProcessGroup(nullptr, rank, world, run_ranks(world)));
  g->receiver_ = std::make_unique<stand_in::Receiver>();
  return g;
}

ProcessGroup::~ProcessGroup() = default;

Transport ProcessGroup::transport() const { return standing_in() ? Transport::kStandIn : impl_->transport; }

std::unique_ptr<ProcessGroup> ProcessGroup::subgroup(const std::string& name, const std::vector<int>& ranks) {
  const auto at = std::find(ranks.begin(), ranks.end(), rank_);
  if (at == ranks.end())
    throw std::runtime_error("subgroup " + name + ": rank " + std::to_string(rank_) + " is not a member");
  const int sub_rank = static_cast<int>(at - ranks.begin()), sub_world = static_cast<int>(ranks.size());
  std::vector<int> members;
  for (const int r : ranks) members.push_back(members_.at(static_cast<size_t>(r)));
  if (standing_in()) {
    std::unique_ptr<ProcessGroup> g(new ProcessGroup(nullptr, sub_rank, sub_world, std::move(members)));
    g->receiver_ = std::make_unique<stand_in::Receiver>();
    return g;
  }
  auto impl = std::make_unique<Impl>();
  impl->store = c10::make_intrusive<c10d::PrefixStore>("recipebench/group/" + name, impl_->store);
  impl->one_host = impl_->one_host;
  impl->timeout = impl_->timeout;
  impl->transport = impl_->transport;
  impl->cuda_device = impl_->cuda_device;
  impl->group = make_group(impl->transport, impl->store, sub_rank, sub_world, impl->one_host, impl->timeout);
#if RECIPEBENCH_NCCL_FAILURE_WATCHER
  if (impl_->watcher) {
    impl->watcher = impl_->watcher;
    impl->watcher->add(impl->group);
  }
#endif
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl), sub_rank, sub_world, std::move(members)));
}

void ProcessGroup::all_to_all(const at::Tensor& in, at::Tensor& out, std::vector<int64_t> out_counts,
                              std::vector<int64_t> in_counts) {
  note(*traffic_, CollectiveOp::kAllToAll, in, out.numel() * static_cast<int64_t>(out.element_size()));
  if (standing_in()) return stand_in::all_to_all(in, out, out_counts, in_counts, rank_);
  at::Tensor input = impl_->on_transport(in), output = impl_->on_transport(out);
  impl_->group->alltoall_base(output, input, out_counts, in_counts)->wait();
  Impl::back(out, output);
}

void ProcessGroup::all_reduce_sum(at::Tensor& t) {
  note(*traffic_, CollectiveOp::kAllReduce, t);
  if (standing_in()) return stand_in::all_reduce_sum(t, world_);
  std::vector<at::Tensor> v{impl_->on_transport(t)};
  impl_->group->allreduce(v)->wait();
  Impl::back(t, v[0]);
}

void ProcessGroup::all_reduce_max(at::Tensor& t) {
  note(*traffic_, CollectiveOp::kAllReduce, t);
  if (standing_in()) return;  // the maximum over members holding the same values
  std::vector<at::Tensor> v{impl_->on_transport(t)};
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::MAX;
  impl_->group->allreduce(v, o)->wait();
  Impl::back(t, v[0]);
}

void ProcessGroup::reduce_scatter_sum(at::Tensor& full, at::Tensor& shard) {
  note(*traffic_, CollectiveOp::kReduceScatter, full);
  if (standing_in()) return stand_in::reduce_scatter_sum(full, shard, rank_, world_);
  if (impl_->transport == Transport::kNccl) {
    at::Tensor in = impl_->on_transport(full), out = impl_->on_transport(shard);
    impl_->group->_reduce_scatter_base(out, in)->wait();
    Impl::back(shard, out);
    return;
  }
  // Gloo (1.13 has no reduce-scatter): all-reduce, then this rank's slice of the sum.
  std::vector<at::Tensor> t{full};
  impl_->group->allreduce(t)->wait();
  shard.copy_(full.narrow(0, static_cast<int64_t>(rank_) * shard.numel(), shard.numel()));
}

void ProcessGroup::all_gather(const at::Tensor& shard, at::Tensor& full) {
  note(*traffic_, CollectiveOp::kAllGather, full);
  if (standing_in()) return stand_in::all_gather(shard, full, world_);
  if (impl_->transport == Transport::kNccl) {
    at::Tensor in = impl_->on_transport(shard), out = impl_->on_transport(full);
    impl_->group->_allgather_base(out, in)->wait();
    Impl::back(full, out);
    return;
  }
  std::vector<std::vector<at::Tensor>> out(1);
  const int64_t n = shard.numel();
  for (int r = 0; r < world_; ++r) out[0].push_back(gloo_gather_view(full.narrow(0, r * n, n)));
  std::vector<at::Tensor> in{gloo_gather_view(shard)};
  impl_->group->allgather(out, in)->wait();
}

void ProcessGroup::barrier() {
  note(*traffic_, CollectiveOp::kBarrier, at::Tensor());
  if (standing_in()) return;
  c10d::BarrierOptions o;
  if (impl_->transport == Transport::kNccl) o.device_ids = {impl_->cuda_device};
  impl_->group->barrier(o)->wait();
}

void ProcessGroup::finish() {
  if (standing_in()) return;
#if RECIPEBENCH_NCCL_FAILURE_WATCHER
  if (impl_->owns_watcher) impl_->watcher->halt();  // a clean end: nothing to abort any more
#endif
#if RECIPEBENCH_HAVE_C10D_NCCL && TORCH_VERSION_MAJOR >= 2
  if (impl_->transport == Transport::kNccl) static_cast<c10d::ProcessGroupNCCL*>(impl_->group.get())->shutdown();
#endif
  impl_->store->add(kFinished, 1);
  if (rank_ != 0) return;
  const auto deadline = std::chrono::steady_clock::now() + impl_->timeout;
  while (impl_->store->add(kFinished, 0) < world_ && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

bool ProcessGroup::report_failure(const std::string& message) {
  if (standing_in()) return true;  // no peers: this rank's failure is the run's first
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
  if (standing_in()) return "";
  try {
    if (!impl_->store->check({kFirstFailure})) return "";
    const auto v = impl_->store->get(kFirstFailure);
    return std::string(v.begin(), v.end());
  } catch (const std::exception&) {
    return "";
  }
}

namespace {
/// A c10d send or receive (compat::WorkPtr) and its tensor. With NCCL a CPU tensor travels through a GPU copy:
/// `back_to` (a receive's CPU tensor) gets the received values when the request is waited for.
/// `then`, when set, runs once after the work completed (before back_to is filled).
struct WorkRequest : ProcessGroup::Request {
  WorkRequest(compat::WorkPtr w, std::vector<at::Tensor> t, at::Tensor back = {}, std::function<void()> then_ = {})
      : work(std::move(w)), tensors(std::move(t)), back_to(std::move(back)), then(std::move(then_)) {}
  void wait() override {
    if (work) work->wait();
    work.reset();
    if (then) then();
    then = nullptr;
    if (back_to.defined()) back_to.copy_(tensors[0]);
    back_to = at::Tensor();
  }
  compat::WorkPtr work;
  std::vector<at::Tensor> tensors;
  at::Tensor back_to;
  std::function<void()> then;
};
}  // namespace

std::unique_ptr<ProcessGroup::Request> ProcessGroup::isend(const at::Tensor& t, int dst, int tag) {
  note(*traffic_, CollectiveOp::kSend, t);
  if (standing_in()) return std::make_unique<DoneRequest>();
  std::vector<at::Tensor> v{impl_->on_transport(t.is_contiguous() ? t : t.contiguous())};
  auto work = impl_->group->send(v, dst, tag);
  return std::make_unique<WorkRequest>(std::move(work), std::move(v));
}

std::unique_ptr<ProcessGroup::Request> ProcessGroup::irecv(at::Tensor& t, int src, int tag) {
  if (!t.is_contiguous()) throw std::invalid_argument("ProcessGroup::irecv: the tensor must be contiguous");
  note(*traffic_, CollectiveOp::kRecv, t);
  if (standing_in()) {
    receiver_->fill(t);
    return std::make_unique<DoneRequest>();
  }
  std::vector<at::Tensor> v{impl_->on_transport(t)};
  at::Tensor back = v[0].is_same(t) ? at::Tensor() : t;
  auto work = impl_->group->recv(v, src, tag);
  return std::make_unique<WorkRequest>(std::move(work), std::move(v), std::move(back));
}

std::unique_ptr<ProcessGroup::Request> ProcessGroup::ireduce_scatter_sum(const at::Tensor& full,
                                                                         const at::Tensor& shard) {
  note(*traffic_, CollectiveOp::kReduceScatter, full);
  if (standing_in()) {
    stand_in::reduce_scatter_sum(full, shard, rank_, world_);
    return std::make_unique<DoneRequest>();
  }
  if (impl_->transport == Transport::kNccl) {
    at::Tensor in = impl_->on_transport(full), out = impl_->on_transport(shard);
    auto work = impl_->group->_reduce_scatter_base(out, in);
    at::Tensor back = out.is_same(shard) ? at::Tensor() : shard;
    return std::make_unique<WorkRequest>(std::move(work), std::vector<at::Tensor>{out, in}, std::move(back));
  }
  // Gloo (1.13 has no reduce-scatter): all-reduce, then this rank's slice of the sum.
  std::vector<at::Tensor> t{full};
  auto work = impl_->group->allreduce(t);
  const int64_t n = shard.numel(), lo = static_cast<int64_t>(rank_) * n;
  return std::make_unique<WorkRequest>(std::move(work), std::move(t), at::Tensor(),
                                       [full, shard, lo, n]() mutable { shard.copy_(full.narrow(0, lo, n)); });
}

std::unique_ptr<ProcessGroup::Request> ProcessGroup::iall_gather(const at::Tensor& shard, const at::Tensor& full) {
  note(*traffic_, CollectiveOp::kAllGather, full);
  if (standing_in()) {
    stand_in::all_gather(shard, full, world_);
    return std::make_unique<DoneRequest>();
  }
  if (impl_->transport == Transport::kNccl) {
    at::Tensor in = impl_->on_transport(shard), out = impl_->on_transport(full);
    auto work = impl_->group->_allgather_base(out, in);
    at::Tensor back = out.is_same(full) ? at::Tensor() : full;
    return std::make_unique<WorkRequest>(std::move(work), std::vector<at::Tensor>{out, in}, std::move(back));
  }
  std::vector<std::vector<at::Tensor>> out(1);
  const int64_t n = shard.numel();
  for (int r = 0; r < world_; ++r) out[0].push_back(gloo_gather_view(full.narrow(0, r * n, n)));
  std::vector<at::Tensor> in{gloo_gather_view(shard)};
  auto work = impl_->group->allgather(out, in);
  std::vector<at::Tensor> held{full, shard};
  return std::make_unique<WorkRequest>(std::move(work), std::move(held));
}

#else  // no c10d Gloo nor NCCL in this libtorch: multi-rank runs are refused

struct ProcessGroup::Impl {};

ProcessGroup::ProcessGroup(int rank, int world, const std::string&, int, std::chrono::seconds, Transport, int)
    : rank_(rank), world_(world), traffic_(std::make_unique<TrafficLog>()) {
  throw std::runtime_error(
      "this build's libtorch has neither c10d Gloo headers (torch/csrc/distributed/c10d/"
      "ProcessGroupGloo.hpp, gloo/config.h) nor c10d NCCL: multi-rank runs are not available");
}
ProcessGroup::~ProcessGroup() = default;
std::unique_ptr<ProcessGroup> ProcessGroup::make_stand_in(int, int) {
  throw std::runtime_error("this build's libtorch has no c10d: an emulated rank is not available");
}
Transport ProcessGroup::transport() const { return Transport::kGloo; }
void ProcessGroup::all_reduce_sum(at::Tensor&) {}
void ProcessGroup::all_reduce_max(at::Tensor&) {}
void ProcessGroup::reduce_scatter_sum(at::Tensor&, at::Tensor&) {}
void ProcessGroup::all_gather(const at::Tensor&, at::Tensor&) {}
void ProcessGroup::barrier() {}
void ProcessGroup::all_to_all(const at::Tensor&, at::Tensor&, std::vector<int64_t>, std::vector<int64_t>) {}
std::unique_ptr<ProcessGroup> ProcessGroup::subgroup(const std::string&, const std::vector<int>&) { return nullptr; }
void ProcessGroup::finish() {}
bool ProcessGroup::report_failure(const std::string&) { return true; }
std::string ProcessGroup::first_failure() { return ""; }
std::unique_ptr<ProcessGroup::Request> ProcessGroup::isend(const at::Tensor&, int, int) { return nullptr; }
std::unique_ptr<ProcessGroup::Request> ProcessGroup::irecv(at::Tensor&, int, int) { return nullptr; }
std::unique_ptr<ProcessGroup::Request> ProcessGroup::ireduce_scatter_sum(const at::Tensor&, const at::Tensor&) {
  return nullptr;
}
std::unique_ptr<ProcessGroup::Request> ProcessGroup::iall_gather(const at::Tensor&, const at::Tensor&) {
  return nullptr;
}

#endif

}  // namespace recipebench::dist
