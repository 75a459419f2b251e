#include "cuda/adamw_cuda.h"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuda/adamw_kernels.h"
#include "cuda/glue_util.h"

namespace recipebench::torch_model {

namespace {

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

/// `t` defined, contiguous, of `dtype` and `like`'s shape on its device.
bool array_like(const at::Tensor& t, const at::Tensor& like, at::ScalarType dtype) {
  return t.defined() && t.is_cuda() && t.device() == like.device() && t.scalar_type() == dtype &&
         t.is_contiguous() && t.sizes() == like.sizes();
}

bool moment_like(const at::Tensor& t, const at::Tensor& like) {
  return array_like(t, like, at::kFloat) || array_like(t, like, at::kBFloat16);
}

/// The arrays' shape and device: the master's, else the parameter's (held with a remainder).
const at::Tensor& shape_of(const AdamwArrays& a) { return a.master.defined() ? a.master : a.param; }

bool arrays_supported(const AdamwArrays& a, const at::Device& device) {
  const at::Tensor& like = shape_of(a);
  if (!like.defined() || !like.is_cuda() || like.device() != device) return false;
  const bool master_ok = a.remainder.defined()
                             ? !a.master.defined() && array_like(a.param, like, at::kBFloat16) &&
                                   array_like(a.remainder, like, at::kShort)
                             : array_like(a.master, like, at::kFloat) &&
                                   (!a.param.defined() || array_like(a.param, like, at::kBFloat16));
  return master_ok && array_like(a.grad, like, at::kFloat) && moment_like(a.exp_avg, like) &&
         moment_like(a.exp_avg_sq, like);
}

/// 16 bytes for an FP32 array, 8 for a 16-bit one: the alignment of a 4-element load.
bool aligned_for_four(const void* p, bool sixteen_bit) {
  return !p || aligned(p, sixteen_bit ? 8 : 16);
}

/// `bytes` of host data as a device tensor of uint8 (one blocking copy, at construction only).
at::Tensor to_device(const void* data, size_t bytes, const at::Device& device) {
  auto host = at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(host.data_ptr(), data, bytes);
  return host.to(device);
}

}  // namespace

struct CudaAdamw::Table {
  std::vector<AdamwArrays> arrays;  ///< kept alive: the table points into them
  at::Tensor slots, chunks;         ///< device copies of the TensorSlot and Chunk tables
  at::Tensor partial, total;        ///< FP64 scratch of sum_of_squares
  int64_t num_chunks = 0;
};

bool cuda_adamw_supports(const std::vector<AdamwArrays>& arrays) {
  if (arrays.empty() || !shape_of(arrays[0]).defined()) return false;
  const auto device = shape_of(arrays[0]).device();
  for (const auto& a : arrays)
    if (!arrays_supported(a, device)) return false;
  return true;
}

namespace {

/// The kernel's view of one parameter's arrays.
adamw::TensorSlot slot_of(AdamwArrays& a) {
  adamw::TensorSlot s;
  s.master = a.master.defined() ? a.master.data_ptr<float>() : nullptr;
  s.grad = a.grad.data_ptr<float>();
  s.exp_avg = a.exp_avg.data_ptr();
  s.exp_avg_sq = a.exp_avg_sq.data_ptr();
  s.exp_avg_bf16 = a.exp_avg.scalar_type() == at::kBFloat16;
  s.exp_avg_sq_bf16 = a.exp_avg_sq.scalar_type() == at::kBFloat16;
  s.param = a.param.defined() ? bf16_mut(a.param) : nullptr;
  s.remainder = a.remainder.defined() ? a.remainder.data_ptr<int16_t>() : nullptr;
  s.n = shape_of(a).numel();
  s.decay = a.decay ? 1 : 0;
  s.vectorized = aligned_for_four(s.master, false) && aligned_for_four(s.grad, false) &&
                 aligned_for_four(s.exp_avg, s.exp_avg_bf16) && aligned_for_four(s.exp_avg_sq, s.exp_avg_sq_bf16) &&
                 aligned_for_four(s.param, true) && aligned_for_four(s.remainder, true);
  return s;
}

}  // namespace

CudaAdamw::CudaAdamw(std::vector<AdamwArrays> arrays) : table_(std::make_unique<Table>()) {
  TORCH_CHECK(cuda_adamw_supports(arrays), "CUDA AdamW: contiguous arrays of one shape on one CUDA device expected: ",
              "FP32 master (or BF16 parameter + int16 remainder), FP32 grad, FP32 or BF16 moments");
  std::vector<adamw::TensorSlot> slots;
  std::vector<adamw::Chunk> chunks;
  for (auto& a : arrays) {
    const adamw::TensorSlot s = slot_of(a);
    for (int64_t begin = 0; begin < s.n; begin += adamw::kChunkElements) {
      adamw::Chunk c;
      c.begin = begin;
      c.slot = static_cast<int32_t>(slots.size());
      c.count = static_cast<int32_t>(std::min(adamw::kChunkElements, s.n - begin));
      chunks.push_back(c);
    }
    slots.push_back(s);
  }
  const auto device = shape_of(arrays[0]).device();
  Table& t = *table_;
  t.arrays = std::move(arrays);
  t.num_chunks = static_cast<int64_t>(chunks.size());
  t.slots = to_device(slots.data(), slots.size() * sizeof(adamw::TensorSlot), device);
  t.chunks = to_device(chunks.data(), chunks.size() * sizeof(adamw::Chunk), device);
  const auto f64 = at::TensorOptions().dtype(at::kDouble).device(device);
  t.partial = at::empty({std::max<int64_t>(1, t.num_chunks)}, f64);
  t.total = at::empty({1}, f64);
}

CudaAdamw::~CudaAdamw() = default;

double CudaAdamw::sum_of_squares() const {
  const Table& t = *table_;
  const c10::cuda::CUDAGuard guard(t.total.device());
  check_launch(adamw::sum_of_squares(reinterpret_cast<const adamw::TensorSlot*>(t.slots.data_ptr()),
                                     reinterpret_cast<const adamw::Chunk*>(t.chunks.data_ptr()), t.num_chunks,
                                     t.partial.data_ptr<double>(), t.total.data_ptr<double>(),
                                     c10::cuda::getCurrentCUDAStream()),
               "CUDA AdamW: gradient sum of squares");
  return t.total.item<double>();
}

void CudaAdamw::step(double lr, int64_t t_step, double beta1, double beta2, double eps, double weight_decay,
                     double grad_scale) {
  const Table& t = *table_;
  adamw::Hyper h;
  h.beta1 = static_cast<float>(beta1);
  h.beta2 = static_cast<float>(beta2);
  h.one_minus_beta1 = static_cast<float>(1.0 - beta1);
  h.one_minus_beta2 = static_cast<float>(1.0 - beta2);
  h.step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, static_cast<double>(t_step))));
  h.bias_correction2 = static_cast<float>(1.0 - std::pow(beta2, static_cast<double>(t_step)));
  h.eps = static_cast<float>(eps);
  h.decay_factor = static_cast<float>(1.0 - lr * weight_decay);
  h.grad_scale = static_cast<float>(grad_scale);
  const c10::cuda::CUDAGuard guard(t.total.device());
  check_launch(adamw::adamw_step(reinterpret_cast<const adamw::TensorSlot*>(t.slots.data_ptr()),
                                 reinterpret_cast<const adamw::Chunk*>(t.chunks.data_ptr()), t.num_chunks, h,
                                 c10::cuda::getCurrentCUDAStream()),
               "CUDA AdamW: step");
}

}  // namespace recipebench::torch_model
