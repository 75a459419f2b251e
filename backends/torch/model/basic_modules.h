// The model's single-weight modules, allocated through new_param (model/param_factory.h) so that a model can be
// laid out on the meta device (torch::nn::Linear, Embedding and Conv1d allocate and fill their weights on the CPU in
// their constructors). Parameter names are torch's: "weight".
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>

namespace recipebench::torch_model {

/// Linear map without bias: y = x W^T. weight [out, in], initialised N(0, 0.02^2) (kInitStd) unless on meta.
struct ProjectionImpl : torch::nn::Module {
  ProjectionImpl(int64_t in, int64_t out);
  /// x: [..., in] -> [..., out] (dtype of x and weight, which must agree).
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;
};
TORCH_MODULE(Projection);

/// Token embedding table: weight [vocab, hidden], initialised N(0, 0.02^2) unless on meta.
struct TokenEmbeddingImpl : torch::nn::Module {
  TokenEmbeddingImpl(int64_t vocab, int64_t hidden);
  /// ids: int64 [...] in [0, vocab) -> [..., hidden].
  torch::Tensor forward(const torch::Tensor& ids);
  torch::Tensor weight;
};
TORCH_MODULE(TokenEmbedding);

/// The weight of a depthwise 1-D convolution: weight [channels, 1, kernel], initialised like torch's Conv1d
/// (Kaiming uniform with a = sqrt(5): U(-1/sqrt(kernel), 1/sqrt(kernel)), fan_in = kernel) unless on meta. The
/// convolution itself is computed by its user (causal, fused with its activation).
struct DepthwiseConvWeightImpl : torch::nn::Module {
  DepthwiseConvWeightImpl(int64_t channels, int64_t kernel);
  torch::Tensor weight;
};
TORCH_MODULE(DepthwiseConvWeight);

}  // namespace recipebench::torch_model
