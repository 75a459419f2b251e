// Safetensors files (https://github.com/huggingface/safetensors, the format of Hugging Face checkpoints):
// reading, writing, and loading a file's tensors into a module by its parameter names.
//
// Layout: 8 bytes (little-endian uint64) N = header size; N bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}
// padded with spaces; then the data buffer, every tensor's bytes (C order, little-endian) at
// [begin, end) relative to the start of the buffer, the tensors covering the buffer without gaps or overlaps.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace torch::nn {
class Module;
}

namespace recipebench::torch_model {

/// Tensors with their names, in order.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// The contents of a safetensors file.
struct SafetensorsFile {
  NamedTensors tensors;                         ///< in the order of their data in the file
  std::map<std::string, std::string> metadata;  ///< the "__metadata__" object (empty when absent)

  /// True when a tensor of that name is in the file.
  bool contains(const std::string& name) const;
  /// The tensor of that name; std::runtime_error naming `name` and the file when it is absent.
  const at::Tensor& get(const std::string& name) const;

  std::string path;  ///< the file it was read from (for messages)
};

/// Writes `tensors` (any device; copied to the CPU, made contiguous) to `path` in the given order, with an
/// optional "__metadata__" object. Dtypes: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL. The header is
/// padded with spaces to a multiple of 8 bytes. The file is written to "<path>.tmp" and renamed into place.
/// std::runtime_error for an empty or duplicate name, the reserved name "__metadata__", an unsupported dtype,
/// or an I/O failure.
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// Reads a whole safetensors file into CPU tensors (the dtypes above). std::runtime_error naming the file for:
/// a file shorter than 8 bytes, a header size beyond the file (or above 100 MB), a header that is not a JSON
/// object, a tensor entry without dtype / shape / data_offsets, an unknown dtype, offsets out of range or not
/// matching the shape, tensors that overlap or leave gaps in the data buffer, and metadata values that are not
/// strings.
SafetensorsFile read_safetensors(const std::string& path);

/// Copies `tensors` into the parameters of `module` by name (module.named_parameters(), e.g. Hugging Face's
/// "model.layers.0.mlp.gate.weight"), converting each to the parameter's dtype and device. Every parameter
/// must be present with the same shape and no tensor may be left over: otherwise std::runtime_error listing the
/// missing names, the names that are not parameters, and the shape mismatches (`source` names the origin in
/// the message, e.g. the file). Nothing is copied unless all names and shapes match.
void load_named_parameters(torch::nn::Module& module, const NamedTensors& tensors, const std::string& source);

/// The named parameters of `module` as NamedTensors (the tensors themselves, not copies).
NamedTensors named_parameters_of(const torch::nn::Module& module);

}  // namespace recipebench::torch_model
