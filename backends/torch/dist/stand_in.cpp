#include "dist/stand_in.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>
#include <string>

namespace recipebench::dist::stand_in {

void all_reduce_sum(at::Tensor& t, int size) {
  if (size != 1) t.mul_(size);
}

void reduce_scatter_sum(const at::Tensor& full, const at::Tensor& shard, int rank, int size) {
  const int64_t n = shard.numel();
  if (full.numel() != n * size)
    throw std::invalid_argument("reduce_scatter_sum: " + std::to_string(full.numel()) + " elements for " +
                                std::to_string(size) + " shards of " + std::to_string(n));
  at::Tensor s = shard;
  at::mul_out(s, full.narrow(0, static_cast<int64_t>(rank) * n, n), size);
}

void all_gather(const at::Tensor& shard, const at::Tensor& full, int size) {
  const int64_t n = shard.numel();
  if (full.numel() != n * size)
    throw std::invalid_argument("all_gather: " + std::to_string(full.numel()) + " elements for " +
                                std::to_string(size) + " shards of " + std::to_string(n));
  full.view({size, n}).copy_(shard.reshape({1, n}).expand({size, n}));
}

namespace {
int64_t sum_checked(const std::vector<int64_t>& counts, size_t members, int64_t rows, const char* which) {
  int64_t s = 0;
  for (const int64_t c : counts) s += c;
  if (counts.size() != members || s != rows)
    throw std::invalid_argument(std::string("all_to_all: ") + which + " counts of " + std::to_string(counts.size()) +
                                " members add up to " + std::to_string(s) + " rows, the tensor has " +
                                std::to_string(rows));
  return s;
}
}  // namespace

void all_to_all(const at::Tensor& in, at::Tensor& out, const std::vector<int64_t>& out_counts,
                const std::vector<int64_t>& in_counts, int rank) {
  sum_checked(in_counts, out_counts.size(), in.size(0), "send");
  sum_checked(out_counts, in_counts.size(), out.size(0), "receive");
  int64_t own_start = 0;
  for (int r = 0; r < rank; ++r) own_start += in_counts[static_cast<size_t>(r)];
  const at::Tensor own = in.narrow(0, own_start, in_counts[static_cast<size_t>(rank)]);
  int64_t at_row = 0;
  for (const int64_t want : out_counts) {
    at::Tensor block = out.narrow(0, at_row, want);
    at_row += want;
    if (want == 0) continue;
    if (own.size(0) == 0) {
      block.zero_();
      continue;
    }
    for (int64_t done = 0; done < want;) {  // own's rows, repeated and cut to length
      const int64_t n = std::min(own.size(0), want - done);
      block.narrow(0, done, n).copy_(own.narrow(0, 0, n));
      done += n;
    }
  }
}

void Receiver::fill(at::Tensor& t) {
  const auto key = std::make_tuple(t.sizes().vec(), static_cast<int>(t.scalar_type()),
                                   static_cast<int>(t.device().type()), static_cast<int>(t.device().index()));
  auto it = values_.find(key);
  if (it == values_.end()) {
    at::Generator g = at::make_generator<at::CPUGeneratorImpl>(/*seed_in=*/20261202);
    at::Tensor v = at::empty(t.sizes(), at::TensorOptions().dtype(at::kFloat));
    v.normal_(0.0, 1.0, g);
    it = values_.emplace(key, v.to(t.options())).first;
  }
  t.copy_(it->second);
}

}  // namespace recipebench::dist::stand_in
