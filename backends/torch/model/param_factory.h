// Where the model's parameters are allocated: float32 on the CPU (a model built on its own, e.g. in a test), or the
// meta device (shapes only, no memory) while the model builder lays out a rank's part before it allocates and
// initialises that part alone (docs/initialization.md).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>

namespace recipebench::torch_model {

/// A new, uninitialised parameter tensor of `shape`: float32 on the CPU, or on the meta device while a MetaParams
/// guard is alive on this thread. Module constructors allocate every parameter through it.
at::Tensor new_param(at::IntArrayRef shape);

/// True while a MetaParams guard is alive on this thread (constructors then skip their value initialisation).
bool building_on_meta();

/// While alive, new_param on this thread gives meta tensors (shape and dtype only: a model of any size is laid out
/// in microseconds per parameter and no memory). Nests; restores the previous state when destroyed.
class MetaParams {
 public:
  MetaParams();
  ~MetaParams();
  MetaParams(const MetaParams&) = delete;
  MetaParams& operator=(const MetaParams&) = delete;

 private:
  bool previous_;
};

}  // namespace recipebench::torch_model
