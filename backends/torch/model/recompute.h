// Activation recompute ("activation checkpointing") for libtorch C++, which has no checkpoint utility.
#pragma once

#include <torch/types.h>

#include <functional>
#include <vector>

namespace recipebench::torch_model {

/// A differentiable function of one tensor (e.g. a group of decoder layers with their positions bound).
using TensorFn = std::function<torch::Tensor(const torch::Tensor&)>;

/// fn(x), computed without keeping fn's intermediate activations: the forward pass runs fn under NoGradGuard and
/// saves only x (and fn, with what it captured); the backward pass runs fn(x) again with gradients enabled on a
/// detached copy of x and back-propagates the incoming gradient through it. It returns x's gradient to the graph
/// and the gradients of `params` (the parameters fn uses that require a gradient), which accumulate into their
/// .grad as usual. params also make the result part of the graph when x itself does not require a gradient.
/// fn must be deterministic (no dropout, no random state): it runs twice and must compute the same thing.
/// With gradients disabled (NoGradGuard, inference) this is just fn(x).
torch::Tensor checkpoint(TensorFn fn, const torch::Tensor& x, const std::vector<torch::Tensor>& params);

}  // namespace recipebench::torch_model
