// A Hugging Face Trainer-style log line: one JSON object, or the Python dict the Trainer prints, e.g.
//   {'loss': 2.3456, 'grad_norm': 1.23, 'learning_rate': 5e-05, 'epoch': 0.01, 'step': 6, 'step_time': 0.8123}
// The Trainer prints no step time of its own; a callback adds it (docs/command-backend.md lists the keys).
// Steps: 'step' counts from 0, 'global_step' (the Trainer's counter) from 1; without either, lines are numbered
// in order. Summary lines ('train_runtime', 'eval_loss', ...) carry no 'loss' or step key and are skipped.
#include "logparse/line_parser.h"
#include "logparse/line_text.h"
#include "util/json.h"

namespace recipebench {

namespace {

/// The Python dict literal `text` as JSON text: quotes, True / False / None (strings holding a quote are rare in a
/// metrics dict and make the line unreadable, not wrong).
std::string python_to_json(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    auto word = [&](const char* w, const char* as) {
      const std::string s = w;
      if (text.compare(i, s.size(), s) != 0) return false;
      out += as;
      i += s.size() - 1;
      return true;
    };
    if (text[i] == '\'') {
      out += '"';
    } else if (!word("True", "true") && !word("False", "false") && !word("None", "null")) {
      out += text[i];
    }
  }
  return out;
}

/// The object of the line, or nullopt when the line holds none.
std::optional<Json> object_of(const std::string& line) {
  const size_t open = line.find('{'), close = line.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  const std::string text = line.substr(open, close - open + 1);
  for (const std::string& candidate : {text, python_to_json(text)}) {
    Json j = Json::parse(candidate, nullptr, false);
    if (!j.is_discarded() && j.is_object()) return j;
  }
  return std::nullopt;
}

class HfParser : public LineParser {
 public:
  LogFormat format() const override { return LogFormat::kHf; }

  LineRead read(const std::string& line) const override {
    LineRead r;
    const auto j = object_of(line);
    if (!j || !(j->contains("loss") || j->contains("step") || j->contains("global_step"))) return r;
    r.kind = LineKind::kStep;
    r.column = static_cast<int>(line.find('{') + 1);
    for (const auto& [key, value] : j->items()) {
      if (!read_field(key, value, r.step)) {
        r.kind = LineKind::kUnreadable;
        r.problem = "'" + key + "': " + value.dump() + ", expected a number";
        return r;
      }
    }
    if (!r.step.seconds) {
      r.kind = LineKind::kUnreadable;
      r.problem = "no step time ('step_time' in s or 'step_time_ms')";
    }
    return r;
  }

 private:
  static bool read_field(const std::string& key, const Json& v, StepLine& s) {
    static const char* const integers[] = {"step",       "global_step",       "tokens",
                                           "num_tokens", "global_batch_size", "peak_memory_bytes"};
    bool known_integer = false;
    for (const char* k : integers) known_integer = known_integer || key == k;
    if (known_integer) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0) return false;
      const int64_t n = v.get<int64_t>();
      if (key == "step") s.step = n;
      if (key == "global_step") s.step = n - 1;
      if (key == "tokens" || key == "num_tokens") s.tokens = n;
      if (key == "global_batch_size") s.global_batch = n;
      if (key == "peak_memory_bytes") s.memory_bytes = static_cast<double>(n);
      return !(key == "global_step" && n < 1);
    }
    std::optional<double>* target = key == "loss"                                 ? &s.loss
                                    : key == "grad_norm"                          ? &s.grad_norm
                                    : key == "learning_rate"                      ? &s.learning_rate
                                    : key == "step_time" || key == "step_time_ms" ? &s.seconds
                                                                                  : nullptr;
    if (!target) return true;  // epoch and any other key
    if (!v.is_number()) return false;
    *target = v.get<double>() * (key == "step_time_ms" ? 1e-3 : 1.0);
    return true;
  }
};

}  // namespace

std::unique_ptr<LineParser> make_hf_parser() { return std::make_unique<HfParser>(); }

}  // namespace recipebench
