#include "optim/grad_sync_order.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace recipebench::train {

void GradSyncOrder::add(BucketLauncher* owner, size_t bucket, int64_t key) {
  if (sealed_) throw std::logic_error("gradient sync order: a bucket added after the order was fixed");
  entries_.push_back(Entry{owner, bucket, key});
}

void GradSyncOrder::seal() {
  if (sealed_) return;
  std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.key > b.key; });
  std::map<BucketLauncher*, size_t> last;  // each owner's bucket launched last so far
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    const auto at = last.find(e.owner);
    if (at != last.end() && at->second >= e.bucket)
      throw std::logic_error("gradient sync order: bucket " + std::to_string(e.bucket) + " would launch after bucket " +
                             std::to_string(at->second) + " of the same optimizer");
    last[e.owner] = e.bucket;
    if (!index_.emplace(std::make_pair(e.owner, e.bucket), i).second)
      throw std::logic_error("gradient sync order: bucket " + std::to_string(e.bucket) + " added twice");
  }
  sealed_ = true;
}

void GradSyncOrder::reset() {
  seal();
  for (auto& e : entries_) e.ready = false;
  next_ = 0;
}

void GradSyncOrder::ready(BucketLauncher* owner, size_t bucket) {
  seal();
  const auto at = index_.find(std::make_pair(owner, bucket));
  if (at == index_.end())
    throw std::logic_error("gradient sync order: bucket " + std::to_string(bucket) + " was never added");
  Entry& e = entries_[at->second];
  if (e.ready || at->second < next_)
    throw std::logic_error("gradient sync order: bucket " + std::to_string(bucket) + " made ready twice in a step");
  e.ready = true;
  launch_ready_prefix();
}

void GradSyncOrder::flush() {
  seal();
  for (auto& e : entries_) e.ready = true;
  launch_ready_prefix();
}

std::vector<std::pair<BucketLauncher*, size_t>> GradSyncOrder::order() const {
  std::vector<Entry> sorted = entries_;
  if (!sealed_)
    std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) { return a.key > b.key; });
  std::vector<std::pair<BucketLauncher*, size_t>> out;
  for (const auto& e : sorted) out.emplace_back(e.owner, e.bucket);
  return out;
}

void GradSyncOrder::launch_ready_prefix() {
  while (next_ < entries_.size() && entries_[next_].ready) {
    Entry& e = entries_[next_++];  // counted as launched first: a launch that throws is not retried
    e.owner->launch_bucket(e.bucket);
  }
}

}  // namespace recipebench::train
