#include "model/basic_modules.h"

#include "model/common.h"
#include "model/param_factory.h"

#include <cmath>

namespace recipebench::torch_model {

ProjectionImpl::ProjectionImpl(int64_t in, int64_t out) {
  weight = register_parameter("weight", new_param({out, in}));
  init_normal_(weight, kInitStd);
}

torch::Tensor ProjectionImpl::forward(const torch::Tensor& x) { return torch::linear(x, weight); }

TokenEmbeddingImpl::TokenEmbeddingImpl(int64_t vocab, int64_t hidden) {
  weight = register_parameter("weight", new_param({vocab, hidden}));
  init_normal_(weight, kInitStd);
}

torch::Tensor TokenEmbeddingImpl::forward(const torch::Tensor& ids) { return torch::embedding(weight, ids); }

DepthwiseConvWeightImpl::DepthwiseConvWeightImpl(int64_t channels, int64_t kernel) {
  weight = register_parameter("weight", new_param({channels, 1, kernel}));
  if (!weight.is_meta()) {
    torch::NoGradGuard no_grad;
    const double bound = 1.0 / std::sqrt(static_cast<double>(kernel));
    weight.uniform_(-bound, bound);
  }
}

}  // namespace recipebench::torch_model
