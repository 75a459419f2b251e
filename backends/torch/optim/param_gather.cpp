#include "optim/param_gather.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace recipebench::train {

void ParamGatherOrder::add(GatherLauncher* owner, size_t bucket, int64_t key) {
  if (sealed_) throw std::logic_error("parameter gather order: a bucket added after the first deferred gather");
  for (const Entry& e : entries_)
    if (e.owner == owner && e.bucket == bucket)
      throw std::logic_error("parameter gather order: bucket " + std::to_string(bucket) + " added twice");
  entries_.push_back(Entry{owner, bucket, key});
}

void ParamGatherOrder::seal() {
  if (sealed_) return;
  std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
  sealed_ = true;
}

void ParamGatherOrder::defer(const GatherLauncher* owner) {
  seal();
  for (Entry& e : entries_) {
    if (e.owner != owner) continue;
    if (e.state != State::kIdle)
      throw std::logic_error("parameter gather order: bucket " + std::to_string(e.bucket) +
                             " deferred again before its previous all-gather finished");
    e.state = State::kPending;
  }
}

void ParamGatherOrder::launch(Entry& e) {
  e.owner->launch_gather(e.bucket);
  e.state = State::kInFlight;
  ++launched_;
}

void ParamGatherOrder::finish(Entry& e) {
  e.owner->finish_gather(e.bucket);
  e.state = State::kIdle;
}

void ParamGatherOrder::launch() {
  bool any = false;
  for (Entry& e : entries_)
    if (e.state == State::kPending) {
      launch(e);
      any = true;
    }
  if (any) next_wait_ = 0;
}

void ParamGatherOrder::wait_through(int64_t last) {
  launch();
  for (; next_wait_ < entries_.size() && entries_[next_wait_].key <= last; ++next_wait_)
    if (entries_[next_wait_].state == State::kInFlight) finish(entries_[next_wait_]);
}

void ParamGatherOrder::finish(const GatherLauncher* owner) {
  for (Entry& e : entries_)
    if (e.state == State::kPending && (!owner || e.owner == owner)) launch(e);
  for (Entry& e : entries_)
    if (e.state == State::kInFlight && (!owner || e.owner == owner)) finish(e);
}

size_t ParamGatherOrder::outstanding() const {
  return static_cast<size_t>(
      std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.state != State::kIdle; }));
}

std::vector<std::pair<const GatherLauncher*, size_t>> ParamGatherOrder::order() const {
  std::vector<Entry> sorted = entries_;
  if (!sealed_)
    std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
  std::vector<std::pair<const GatherLauncher*, size_t>> out;
  for (const auto& e : sorted) out.emplace_back(e.owner, e.bucket);
  return out;
}

}  // namespace recipebench::train
