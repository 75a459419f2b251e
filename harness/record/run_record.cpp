#include "record/run_record.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace recipebench {

namespace {

/// A digest as lower-case hex digits.
std::string hex_of(const unsigned char* digest, unsigned int len) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace

std::string sha256_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed");
  return hex_of(digest, len);
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  // In chunks: a log of any size is hashed in constant memory (the whole file in a string took 2.3 bytes per byte).
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 unavailable");
  std::vector<char> buf(size_t{1} << 20);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  return hex_of(digest, length);
}

namespace {
Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }
}  // namespace

Json RunMetrics::to_json() const {
  return Json{{"window", Json::array({window.window.first, window.window.last})},
              {"window_tokens", window.tokens},
              {"window_seconds", window.seconds},
              {"mean_step_seconds", window.mean_step_seconds},
              {"tokens_per_s_per_gpu", window.tokens_per_s_per_gpu},
              {"step_time_cv_percent", window.step_time_cv_percent},
              {"mfu", opt(mfu)},
              {"mfu_inputs", Json{{"active_params", active_params}, {"peak_flops", peak_flops}}},
              {"usd_per_million_tokens", opt(usd_per_million_tokens)},
              {"price", Json{{"usd_per_gpu_hour", opt(usd_per_gpu_hour)}, {"source", price_source}}},
              {"gpu_hours", gpu_hours},
              {"peak_memory_bytes", peak_memory_bytes},
              {"harness_overhead_fraction", harness_overhead_fraction}};
}

Json RunFailure::to_json() const {
  Json j{{"step", step ? Json(*step) : Json(nullptr)}, {"message", message}};
  if (!log_tail.empty()) j["log_tail"] = log_tail;
  return j;
}

Json RunEnvironment::to_json() const {
  Json j{{"host", host},
         {"compiler", compiler},
         {"recipebench_version", recipebench_version},
         {"recipebench_commit", recipebench_commit}};
  if (os) j["os"] = *os;
  if (cpu_cores) j["cpu_cores"] = *cpu_cores;
  if (build_type) j["build_type"] = *build_type;
  if (device)
    j["device"] = Json{
        {"name", device->device_name}, {"count", device->device_count}, {"memory_bytes", device->device_memory_bytes},
        {"driver", device->driver},    {"cuda", device->cuda},          {"nccl", device->nccl},
        {"libtorch", device->libtorch}};
  if (!recipe_env_applied.is_null()) j["recipe_env_applied"] = recipe_env_applied;
  return j;
}

Json RunRecord::to_json() const {
  Json steps_json = Json::array();
  for (const auto& s : steps) steps_json.push_back(s.to_json());
  Json j{{"schema", "recipebench-run-record/1"},
         {"status", to_string(status)},
         {"error", error ? error->to_json() : Json(nullptr)},
         {"recipe", Json{{"path", recipe_path}, {"sha256", recipe_sha256}, {"document", recipe}}},
         {"backend", options.settings.backend},
         {"settings", options.to_json(log.is_null())},  // a log-timed run: its command's switches are its own
         {"model", Json{{"name", model_name},
                        {"layers", model_layers},
                        {"layers_full", model_layers_full},
                        {"proxy", model_layers != model_layers_full},
                        {"config", model_config}}},
         {"started_at", started_at},
         {"finished_at", finished_at},
         {"wall_seconds", wall_seconds},
         {"environment", environment.to_json()},
         {"metrics", metrics ? metrics->to_json() : Json(nullptr)},
         {"steps", steps_json}};
  if (!capabilities.is_null()) j["capabilities"] = capabilities;
  if (!log.is_null()) j["log"] = log;
  if (model_build) j["model_build"] = model_build->to_json();
  if (!emulation.is_null()) j["emulation"] = emulation;
  return j;
}

}  // namespace recipebench
