// libtorch glue of the multi-tensor AdamW kernels (adamw_kernels.h) for MixedPrecisionAdam (optim/adam.h).
// Declared without CUDA headers; built only when the kernels are.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

namespace recipebench::torch_model {

/// The arrays of one parameter that the step reads and writes, contiguous, of one shape on one CUDA device: FP32
/// `master` (undefined when `remainder` holds it with `param`), FP32 `grad`, `exp_avg` and `exp_avg_sq` FP32 or
/// BF16; `param` BF16 (written from the master weight) or undefined when the parameter is the FP32 master itself;
/// `remainder` int16, the master's low half beside `param` (optim/master_weights.h), or undefined.
struct AdamwArrays {
  at::Tensor master, grad, exp_avg, exp_avg_sq, param;
  bool decay = false;  ///< weight decay applies (matrices)
  at::Tensor remainder;
};

/// True when CudaAdamw takes these arrays: every tensor as AdamwArrays says, on one CUDA device.
bool cuda_adamw_supports(const std::vector<AdamwArrays>& arrays);

/// The optimizer's arrays as a fixed chunk table on the device (built once: the arrays must not be reallocated
/// while this lives; it keeps references to them). Each call runs on the current CUDA stream.
class CudaAdamw {
 public:
  /// Throws c10::Error when cuda_adamw_supports is false.
  explicit CudaAdamw(std::vector<AdamwArrays> arrays);
  ~CudaAdamw();
  CudaAdamw(const CudaAdamw&) = delete;
  CudaAdamw& operator=(const CudaAdamw&) = delete;

  /// Sum over every gradient element of g^2 (FP64 over FP32 chunk partials, fixed order: deterministic). Copies one
  /// double to the host: synchronises with the stream.
  double sum_of_squares() const;

  /// One AdamW step, t >= 1 (adamw_kernels.h Hyper: the formula of optim/adam.h adamw_update_ on g scaled by
  /// grad_scale), then each BF16 parameter = its master weight rounded to nearest even. Throws c10::Error when a
  /// launch fails.
  void step(double lr, int64_t t, double beta1, double beta2, double eps, double weight_decay, double grad_scale);

 private:
  struct Table;
  std::unique_ptr<Table> table_;
};

}  // namespace recipebench::torch_model
