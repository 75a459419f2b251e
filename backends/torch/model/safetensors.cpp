#include "model/safetensors.h"

#include <ATen/Functions.h>
#include <torch/nn/module.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.cpp copies tensor bytes as they are: it needs a little-endian host"
#endif

namespace recipebench::torch_model {

namespace {

struct DtypeInfo {
  c10::ScalarType type;
  const char* name;
  int64_t size;
};

constexpr DtypeInfo kDtypes[] = {
    {c10::kDouble, "F64", 8}, {c10::kFloat, "F32", 4}, {c10::kHalf, "F16", 2},  {c10::kBFloat16, "BF16", 2},
    {c10::kLong, "I64", 8},   {c10::kInt, "I32", 4},   {c10::kShort, "I16", 2}, {c10::kChar, "I8", 1},
    {c10::kByte, "U8", 1},    {c10::kBool, "BOOL", 1},
};

const DtypeInfo* dtype_by_type(c10::ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.type == t) return &d;
  return nullptr;
}

const DtypeInfo* dtype_by_name(const std::string& n) {
  for (const auto& d : kDtypes)
    if (n == d.name) return &d;
  return nullptr;
}

std::string supported_dtypes() {
  std::string s;
  for (const auto& d : kDtypes) s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the limit of the reference implementation

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("safetensors file " + path + ": " + what);
}

std::string shape_str(at::IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os.str() + "]";
}

/// Lists names for an error message: all of them up to `max`, then "... and N more".
std::string name_list(const std::vector<std::string>& names, size_t max = 20) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += ", ... and " + std::to_string(names.size() - max) + " more";
  return s;
}

}  // namespace

bool SafetensorsFile::contains(const std::string& name) const {
  return std::any_of(tensors.begin(), tensors.end(), [&](const auto& nt) { return nt.first == name; });
}

const at::Tensor& SafetensorsFile::get(const std::string& name) const {
  for (const auto& nt : tensors)
    if (nt.first == name) return nt.second;
  throw std::runtime_error("safetensors file " + path + ": no tensor named '" + name + "'");
}

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    auto& m = header["__metadata__"] = nlohmann::ordered_json::object();
    for (const auto& kv : metadata) m[kv.first] = kv.second;
  }
  std::vector<at::Tensor> data;
  data.reserve(tensors.size());
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty()) fail(path, "cannot write a tensor with an empty name");
    if (name == "__metadata__") fail(path, "'__metadata__' is reserved and cannot name a tensor");
    if (!seen.insert(name).second) fail(path, "tensor name '" + name + "' given twice");
    if (!tensor.defined()) fail(path, "tensor '" + name + "' is undefined");
    const DtypeInfo* d = dtype_by_type(tensor.scalar_type());
    if (!d)
      fail(path, "tensor '" + name + "' has dtype " + std::string(c10::toString(tensor.scalar_type())) +
                     ", which safetensors writing supports only as " + supported_dtypes());
    auto c = tensor.detach().to(c10::kCPU).contiguous();
    const uint64_t bytes = static_cast<uint64_t>(c.numel()) * static_cast<uint64_t>(d->size);
    header[name] = {{"dtype", d->name}, {"shape", c.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(c));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(path, "cannot open " + tmp + " for writing");
    unsigned char size_le[8];
    const uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) size_le[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xff);
    out.write(reinterpret_cast<const char*>(size_le), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& c : data)
      if (c.numel() > 0)
        out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * c.element_size()));
    out.flush();
    if (!out) fail(path, "write to " + tmp + " failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail(path, "cannot rename " + tmp + " into place: " + ec.message());
}

namespace {

/// A tensor's entry in the header: its bytes [begin, end) of the data buffer.
struct HeaderEntry {
  uint64_t begin, end;
  std::string name;
  const DtypeInfo* dtype;
  std::vector<int64_t> shape;
};

/// The JSON header of the file open as `in` (file_size bytes); `header_bytes` is set to its size n (the data
/// buffer starts at 8 + n).
nlohmann::json read_header(std::ifstream& in, const std::string& path, uint64_t file_size, uint64_t& header_bytes) {
  if (file_size < 8)
    fail(path,
         "bad header size: the file has " + std::to_string(file_size) + " bytes, fewer than the 8 of the header size");
  unsigned char size_le[8];
  in.read(reinterpret_cast<char*>(size_le), 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(size_le[i]) << (8 * i);
  if (n > file_size - 8 || n > kMaxHeaderBytes)
    fail(path, "bad header size " + std::to_string(n) + ": the file has " + std::to_string(file_size) +
                   " bytes (header at most " + std::to_string(std::min<uint64_t>(file_size - 8, kMaxHeaderBytes)) +
                   ")");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (!in) fail(path, "cannot read the " + std::to_string(n) + "-byte header");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(path, std::string("the header is not valid JSON: ") + e.what());
  }
  if (!header.is_object())
    fail(path, std::string("the header is a JSON ") + header.type_name() + ", expected an object");
  header_bytes = n;
  return header;
}

/// The header's __metadata__ object of strings.
void read_metadata(const nlohmann::json& value, const std::string& path, SafetensorsFile& file) {
  if (!value.is_object())
    fail(path, "__metadata__ is a JSON " + std::string(value.type_name()) + ", expected an object of strings");
  for (const auto& [mk, mv] : value.items()) {
    if (!mv.is_string()) fail(path, "__metadata__." + mk + " is " + mv.dump() + ", expected a string");
    file.metadata[mk] = mv.get<std::string>();
  }
}

/// The shape of tensor entry `value`; `numel` is set to its element count.
std::vector<int64_t> read_shape(const nlohmann::json& value, const std::string& path, const std::string& where,
                                uint64_t& numel) {
  if (!value.contains("shape") || !value["shape"].is_array()) fail(path, where + "missing shape (an array of sizes)");
  std::vector<int64_t> shape;
  numel = 1;
  for (const auto& s : value["shape"]) {
    if (!s.is_number_unsigned()) fail(path, where + "shape " + value["shape"].dump() + " is not a list of sizes >= 0");
    const uint64_t v = s.get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, v, &numel))
      fail(path, where + "shape " + value["shape"].dump() + " is too large");
    shape.push_back(static_cast<int64_t>(v));
  }
  return shape;
}

/// Tensor `key`'s header entry, checked against the data buffer of data_size bytes.
HeaderEntry read_entry(const std::string& key, const nlohmann::json& value, const std::string& path,
                       uint64_t data_size) {
  const std::string where = "tensor '" + key + "': ";
  if (!value.is_object()) fail(path, where + "entry is " + value.dump() + ", expected an object");
  if (!value.contains("dtype") || !value["dtype"].is_string()) fail(path, where + "missing or non-string dtype");
  const std::string dt = value["dtype"].get<std::string>();
  const DtypeInfo* d = dtype_by_name(dt);
  if (!d) fail(path, where + "unknown dtype '" + dt + "' (supported: " + supported_dtypes() + ")");
  uint64_t numel = 1;
  std::vector<int64_t> shape = read_shape(value, path, where, numel);
  const auto& off = value.contains("data_offsets") ? value["data_offsets"] : nlohmann::json();
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    fail(path,
         where + "data_offsets " + (off.is_null() ? std::string("missing") : off.dump()) + ", expected [begin, end]");
  const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (begin > end || end > data_size)
    fail(path, where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                   "] out of range: the data buffer has " + std::to_string(data_size) + " bytes");
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d->size), &bytes) || bytes != end - begin)
    fail(path, where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] hold " +
                   std::to_string(end - begin) + " bytes, but shape " + value["shape"].dump() + " of " + dt +
                   " needs " + std::to_string(numel) + " x " + std::to_string(d->size));
  return {begin, end, key, d, std::move(shape)};
}

/// Sorts the entries by offset and checks that they tile the data buffer exactly (no gap, no overlap).
void check_coverage(std::vector<HeaderEntry>& entries, const std::string& path, uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const HeaderEntry& a, const HeaderEntry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const HeaderEntry& e = entries[i];
    if (e.begin != covered) {
      if (e.begin < covered)
        fail(path, "tensor '" + e.name + "' (bytes " + std::to_string(e.begin) + ".." + std::to_string(e.end) +
                       ") overlaps tensor '" + entries[i - 1].name + "'");
      fail(path, "bytes " + std::to_string(covered) + ".." + std::to_string(e.begin) +
                     " of the data buffer belong to no tensor (before '" + e.name + "')");
    }
    covered = e.end;
  }
  if (covered != data_size)
    fail(path, "the data buffer has " + std::to_string(data_size) + " bytes but the tensors cover " +
                   std::to_string(covered) + " (truncated or trailing bytes)");
}

}  // namespace

SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  uint64_t n = 0;
  const nlohmann::json header = read_header(in, path, file_size, n);

  SafetensorsFile file;
  file.path = path;
  const uint64_t data_start = 8 + n, data_size = file_size - data_start;
  std::vector<HeaderEntry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__")
      read_metadata(value, path, file);
    else
      entries.push_back(read_entry(key, value, path, data_size));
  }
  check_coverage(entries, path, data_size);
  for (const HeaderEntry& e : entries) {
    auto t = at::empty(e.shape, at::TensorOptions().dtype(e.dtype->type));
    if (e.end > e.begin) {
      in.seekg(static_cast<std::streamoff>(data_start + e.begin));
      in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.end - e.begin));
      if (!in) fail(path, "cannot read the data of tensor '" + e.name + "'");
    }
    file.tensors.emplace_back(e.name, std::move(t));
  }
  return file;
}

NamedTensors named_parameters_of(const torch::nn::Module& module) {
  NamedTensors v;
  for (const auto& kv : module.named_parameters()) v.emplace_back(kv.key(), kv.value());
  return v;
}

void load_named_parameters(torch::nn::Module& module, const NamedTensors& tensors, const std::string& source) {
  const auto params = module.named_parameters();
  std::map<std::string, const at::Tensor*> given;
  std::vector<std::string> duplicate, extra, missing, mismatched;
  for (const auto& [name, t] : tensors) {
    if (!given.emplace(name, &t).second) duplicate.push_back(name);
    if (!params.contains(name)) extra.push_back(name);
  }
  for (const auto& kv : params) {
    const auto it = given.find(kv.key());
    if (it == given.end())
      missing.push_back(kv.key());
    else if (it->second->sizes() != kv.value().sizes())
      mismatched.push_back(kv.key() + " (" + shape_str(it->second->sizes()) + ", parameter " +
                           shape_str(kv.value().sizes()) + ")");
  }
  if (!duplicate.empty() || !extra.empty() || !missing.empty() || !mismatched.empty()) {
    std::string msg = "cannot load " + source + " into the model (" + std::to_string(params.size()) + " parameters, " +
                      std::to_string(tensors.size()) + " tensors):";
    if (!missing.empty()) msg += "\n  missing " + std::to_string(missing.size()) + ": " + name_list(missing);
    if (!extra.empty())
      msg += "\n  not parameters of the model " + std::to_string(extra.size()) + ": " + name_list(extra);
    if (!mismatched.empty())
      msg += "\n  wrong shape " + std::to_string(mismatched.size()) + ": " + name_list(mismatched);
    if (!duplicate.empty()) msg += "\n  given twice: " + name_list(duplicate);
    throw std::runtime_error(msg);
  }
  at::NoGradGuard no_grad;
  for (const auto& kv : params) kv.value().copy_(*given.at(kv.key()));
}

}  // namespace recipebench::torch_model
