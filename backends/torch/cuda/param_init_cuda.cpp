#include "cuda/param_init_cuda.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>

#include "cuda/glue_util.h"
#include "cuda/param_init_kernels.h"

namespace recipebench::torch_model {

void cuda_init_shard(at::Tensor& local, const std::vector<std::vector<int64_t>>& global_index,
                     const std::vector<int64_t>& global_stride, init::DrawKind kind, double a, double b,
                     bool per_expert, uint64_t seed, uint64_t name_hash) {
  TORCH_CHECK(local.is_cuda() && local.is_contiguous(), "init: CUDA fill of a non-contiguous or host tensor");
  const int dims = static_cast<int>(local.dim());
  TORCH_CHECK(dims >= 1 && dims <= init::kMaxInitDims && global_index.size() == static_cast<size_t>(dims) &&
                  global_stride.size() == static_cast<size_t>(dims),
              "init: CUDA fill of a ", dims, "-D shard");
  const c10::cuda::CUDAGuard guard(local.device());
  // The per-dimension index tables, concatenated, copied to the device once.
  std::vector<int64_t> flat;
  for (const auto& t : global_index) flat.insert(flat.end(), t.begin(), t.end());
  const auto tables = at::from_blob(flat.data(), {static_cast<int64_t>(flat.size())}, at::kLong).to(local.device());
  init::ShardFill f;
  f.dims = dims;
  int64_t offset = 0;
  for (int d = 0; d < dims; ++d) {
    f.local_size[d] = local.size(d);
    f.global_stride[d] = global_stride[static_cast<size_t>(d)];
    f.global_index[d] = tables.data_ptr<int64_t>() + offset;
    offset += local.size(d);
  }
  f.kind = kind;
  f.a = a;
  f.b = b;
  f.per_expert = per_expert;
  f.seed = seed;
  f.name_hash = name_hash;
  constexpr int64_t kBlock = int64_t{1} << 26;  // 64M elements: 256 MB of float32
  const int64_t n = local.numel();
  auto buf = at::empty({std::min(kBlock, n)}, local.options().dtype(at::kFloat));
  auto out = local.view({-1});
  for (int64_t first = 0; first < n; first += kBlock) {
    const int64_t count = std::min(kBlock, n - first);
    check_launch(init::fill_shard_values(buf.data_ptr<float>(), first, count, f, c10::cuda::getCurrentCUDAStream()),
                 "init: CUDA fill");
    out.narrow(0, first, count).copy_(buf.narrow(0, 0, count));
  }
}

}  // namespace recipebench::torch_model
