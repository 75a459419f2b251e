// TorchTitan's step line (train.py's metrics log), e.g. after its colour codes are removed:
//   [titan] 2026-11-30 10:00:00,123 - root - INFO - step:  6  loss:  7.1234  grad_norm:  1.2345
//   memory: 31.12GiB(39.34%) tps: 7,524  tflops: 436.11  mfu: 44.10%
// (one line in the log). Steps count from 1: step k is recipebench's step k - 1. It prints no step time: tps is
// tokens per second per GPU, so the log reader derives the step time as tokens per step / (tps x GPUs).
#include <cctype>
#include <sstream>
#include <vector>

#include "logparse/line_parser.h"
#include "logparse/line_text.h"

namespace recipebench {

namespace {

/// "5.74%" -> 0.0574.
std::optional<double> percent(const std::string& v) {
  if (v.empty() || v.back() != '%') return std::nullopt;
  const auto x = parse_number(v.substr(0, v.size() - 1));
  return x ? std::optional<double>(*x / 100) : std::nullopt;
}

class TorchtitanParser : public LineParser {
 public:
  LogFormat format() const override { return LogFormat::kTorchtitan; }

  LineRead read(const std::string& line) const override {
    LineRead r;
    const size_t at = line.find("step:");
    if (at == std::string::npos || line.find("loss:", at) == std::string::npos) return r;
    std::istringstream words(line.substr(at));
    std::vector<std::string> w;
    for (std::string t; words >> t;) w.push_back(t);
    r.kind = LineKind::kStep;
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      if (w[i].size() < 2 || w[i].back() != ':') continue;
      const std::string key = w[i].substr(0, w[i].size() - 1);
      if (!read_field(key, w[i + 1], r.step)) {
        r.kind = LineKind::kUnreadable;
        r.problem = "'" + key + "': '" + w[i + 1] + "', expected " + (key == "mfu" ? "a percentage" : "a number");
        r.column = static_cast<int>(line.find(w[i + 1], at) + 1);
        return r;
      }
    }
    if (!r.step.step) {
      r.kind = LineKind::kUnreadable;
      r.problem = "no step number after 'step:'";
    } else if (*r.step.step < 0) {
      r.kind = LineKind::kUnreadable;
      r.problem = "step 0, expected a step counted from 1";
    } else if (!r.step.tokens_per_s_per_gpu) {
      r.kind = LineKind::kUnreadable;
      r.problem = "no 'tps' field (the step time is derived from it)";
    }
    return r;
  }

 private:
  static bool read_field(const std::string& key, const std::string& value, StepLine& s) {
    if (key == "step") {
      const auto v = parse_number(value);
      const auto n = v ? whole_count(*v) : std::nullopt;
      if (!n) return false;
      s.step = *n - 1;
    } else if (key == "memory") {
      const auto v = parse_memory_bytes(value.substr(0, value.find('(')));
      if (!v) return false;
      s.memory_bytes = *v;
    } else if (key == "mfu") {
      if (!(s.mfu = percent(value))) return false;
    } else {
      std::optional<double>* target = key == "loss"                  ? &s.loss
                                      : key == "grad_norm"           ? &s.grad_norm
                                      : key == "tps" || key == "wps" ? &s.tokens_per_s_per_gpu
                                      : key == "tflops"              ? &s.tflops_per_gpu
                                      : key == "lr"                  ? &s.learning_rate
                                                                     : nullptr;
      if (!target) return true;
      if (!(*target = parse_number(value))) return false;
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<LineParser> make_torchtitan_parser() { return std::make_unique<TorchtitanParser>(); }

}  // namespace recipebench
