// Megatron-LM's training log line (training.py training_log), e.g.
//  [2026-11-30 10:00:00] iteration        6/     100 | consumed samples:         3072 | elapsed time per iteration
//  (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 456.7 | learning rate: 1.000000E-05 | global batch size:   512 |
//  lm loss: 1.234567E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 |
// (one line in the log). Iterations count from 1: iteration k is recipebench's step k - 1.
#include <cctype>

#include "logparse/line_parser.h"
#include "logparse/line_text.h"

namespace recipebench {

namespace {

/// The iteration number k of "iteration <k>/<n>" in `s`, and where the first field separator '|' after it is.
std::optional<std::pair<int64_t, size_t>> iteration_of(const std::string& s) {
  for (size_t at = s.find("iteration"); at != std::string::npos; at = s.find("iteration", at + 1)) {
    size_t i = at + 9, d;
    while (i < s.size() && s[i] == ' ') ++i;
    for (d = i; d < s.size() && std::isdigit(static_cast<unsigned char>(s[d]));) ++d;
    size_t slash = d;
    while (slash < s.size() && s[slash] == ' ') ++slash;
    if (d > i && slash < s.size() && s[slash] == '/') {
      const size_t bar = s.find('|', slash);
      if (bar == std::string::npos) return std::nullopt;
      // More than 15 digits (beyond 2^53 steps) is out of range: -1, which read() reports at the number.
      if (d - i > 15) return std::make_pair(int64_t{-1} - static_cast<int64_t>(i), bar);
      return std::make_pair(std::stoll(s.substr(i, d - i)), bar);
    }
  }
  return std::nullopt;
}

class MegatronParser : public LineParser {
 public:
  LogFormat format() const override { return LogFormat::kMegatron; }

  LineRead read(const std::string& line) const override {
    LineRead r;
    const auto it = iteration_of(line);
    if (!it) return r;
    if (it->first < 0) {
      const size_t at = static_cast<size_t>(-(it->first + 1));
      size_t end = at;
      while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
      r.kind = LineKind::kUnreadable;
      r.problem = "iteration " + line.substr(at, end - at) + " out of range, expected at most 15 digits";
      r.column = static_cast<int>(at + 1);
      return r;
    }
    r.kind = LineKind::kStep;
    r.step.step = it->first - 1;
    bool timed = false;
    for (size_t start = it->second + 1; start < line.size();) {
      size_t end = line.find('|', start);
      if (end == std::string::npos) end = line.size();
      const std::string field = line.substr(start, end - start);
      const size_t colon = field.rfind(':');
      if (colon != std::string::npos) {
        const std::string key = trim(field.substr(0, colon)), value = field.substr(colon + 1);
        if (!read_field(key, value, r)) {
          r.kind = LineKind::kUnreadable;
          r.problem = "'" + key + "': '" + trim(value) + "', expected a number";
          r.column = static_cast<int>(start + colon + 2);
          return r;
        }
        timed = timed || key == "elapsed time per iteration (ms)";
      }
      start = end + 1;
    }
    if (r.step.step < 0) {
      r.kind = LineKind::kUnreadable;
      r.problem = "iteration 0, expected an iteration counted from 1";
    } else if (!timed) {
      r.kind = LineKind::kUnreadable;
      r.problem = "no 'elapsed time per iteration (ms)' field";
    }
    return r;
  }

 private:
  /// Stores a known field; false when its value is not a number. Unknown fields are skipped.
  static bool read_field(const std::string& key, const std::string& value, LineRead& r) {
    StepLine& s = r.step;
    std::optional<double>* target = nullptr;
    double scale = 1;
    if (key == "elapsed time per iteration (ms)") {
      target = &s.seconds;
      scale = 1e-3;
    } else if (key == "lm loss") {
      target = &s.loss;
    } else if (key == "grad norm") {
      target = &s.grad_norm;
    } else if (key == "learning rate") {
      target = &s.learning_rate;
    } else if (key == "throughput per GPU (TFLOP/s/GPU)" || key == "TFLOP/s/GPU") {
      target = &s.tflops_per_gpu;
    } else if (key == "global batch size") {
      const auto v = parse_number(value);
      const auto n = v ? whole_count(*v) : std::nullopt;
      if (!n || *n < 1) return false;
      s.global_batch = *n;
      return true;
    } else {
      return true;
    }
    const auto v = parse_number(value);
    if (!v) return false;
    *target = *v * scale;
    return true;
  }
};

}  // namespace

std::unique_ptr<LineParser> make_megatron_parser() { return std::make_unique<MegatronParser>(); }

}  // namespace recipebench
