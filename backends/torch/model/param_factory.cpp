#include "model/param_factory.h"

#include <ATen/ops/empty.h>

namespace recipebench::torch_model {

namespace {
thread_local bool meta_params = false;
}  // namespace

at::Tensor new_param(at::IntArrayRef shape) {
  return at::empty(shape, at::TensorOptions().dtype(at::kFloat).device(meta_params ? at::kMeta : at::kCPU));
}

bool building_on_meta() { return meta_params; }

MetaParams::MetaParams() : previous_(meta_params) { meta_params = true; }

MetaParams::~MetaParams() { meta_params = previous_; }

}  // namespace recipebench::torch_model
