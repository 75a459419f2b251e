#include "data/packing.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace recipebench::train {

int64_t padded_tokens(const Microbatch& mb, const std::vector<int64_t>& lengths) {
  int64_t longest = 0;
  for (const int64_t i : mb) longest = std::max(longest, lengths[static_cast<size_t>(i)]);
  return static_cast<int64_t>(mb.size()) * longest;
}

std::vector<Microbatch> pack_first_fit(const std::vector<int64_t>& lengths, int64_t max_tokens) {
  std::vector<Microbatch> mbs;
  std::vector<int64_t> longest;  // per microbatch
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int64_t len = lengths[i];
    if (len <= 0 || len > max_tokens)
      throw std::invalid_argument("row " + std::to_string(i) + " has " + std::to_string(len) + " tokens, expected 1.." +
                                  std::to_string(max_tokens) + " (max_tokens_per_gpu)");
    size_t b = 0;
    for (; b < mbs.size(); ++b)
      if (static_cast<int64_t>(mbs[b].size() + 1) * std::max(longest[b], len) <= max_tokens) break;
    if (b == mbs.size()) {
      mbs.emplace_back();
      longest.push_back(0);
    }
    mbs[b].push_back(static_cast<int64_t>(i));
    longest[b] = std::max(longest[b], len);
  }
  return mbs;
}

void split_to_count(std::vector<Microbatch>& mbs, int64_t count) {
  int64_t rows = 0;
  for (const auto& mb : mbs) rows += static_cast<int64_t>(mb.size());
  if (count < static_cast<int64_t>(mbs.size()) || count > rows)
    throw std::invalid_argument("cannot make " + std::to_string(count) + " microbatches of " + std::to_string(rows) +
                                " rows packed into " + std::to_string(mbs.size()));
  while (static_cast<int64_t>(mbs.size()) < count) {
    size_t big = 0;
    for (size_t b = 1; b < mbs.size(); ++b)
      if (mbs[b].size() > mbs[big].size()) big = b;
    const size_t keep = (mbs[big].size() + 1) / 2;
    Microbatch tail(mbs[big].begin() + static_cast<std::ptrdiff_t>(keep), mbs[big].end());
    mbs[big].resize(keep);
    mbs.insert(mbs.begin() + static_cast<std::ptrdiff_t>(big) + 1, std::move(tail));
  }
}

}  // namespace recipebench::train
