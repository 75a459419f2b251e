// `regex:<pattern>`: any other log, read with a PCRE2 pattern whose named groups say what each part is
// (docs/command-backend.md): step (from 0) or iteration (from 1); seconds, time_ms or tokens_per_s_per_gpu for the
// step time; tokens or global_batch; loss, grad_norm, learning_rate, tflops, mfu (a fraction), memory_gb.
// A line the pattern does not match is not a step line; a matched group that is not a number makes it unreadable, and
// so does a match PCRE2 gives up on (its match or depth limit, kMatchLimit below): never taken for "no match".
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "logparse/line_parser.h"
#include "logparse/line_text.h"

namespace recipebench {

namespace {

/// The group names recipebench reads, with what each fills.
enum class Group {
  kStep,
  kIteration,
  kSeconds,
  kTimeMs,
  kTps,
  kTokens,
  kGlobalBatch,
  kLoss,
  kGradNorm,
  kLr,
  kTflops,
  kMfu,
  kMemoryGb
};

const std::map<std::string, Group>& group_names() {
  static const std::map<std::string, Group> names{{"step", Group::kStep},
                                                  {"iteration", Group::kIteration},
                                                  {"seconds", Group::kSeconds},
                                                  {"time_ms", Group::kTimeMs},
                                                  {"tokens_per_s_per_gpu", Group::kTps},
                                                  {"tokens", Group::kTokens},
                                                  {"global_batch", Group::kGlobalBatch},
                                                  {"loss", Group::kLoss},
                                                  {"grad_norm", Group::kGradNorm},
                                                  {"learning_rate", Group::kLr},
                                                  {"tflops", Group::kTflops},
                                                  {"mfu", Group::kMfu},
                                                  {"memory_gb", Group::kMemoryGb}};
  return names;
}

std::string known_names() {
  std::string out;
  for (const auto& [name, g] : group_names()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

/// Stores a group's number; false when it does not fit the field (a fractional step, a negative count).
bool store(Group g, double v, StepLine& s) {
  const std::optional<int64_t> n = whole_count(v);
  const bool integral = n.has_value();
  switch (g) {
    case Group::kStep:
      s.step = n.value_or(0);
      return integral;
    case Group::kIteration:
      s.step = n.value_or(1) - 1;
      return integral && v >= 1;
    case Group::kSeconds:
      s.seconds = v;
      return true;
    case Group::kTimeMs:
      s.seconds = v * 1e-3;
      return true;
    case Group::kTps:
      s.tokens_per_s_per_gpu = v;
      return true;
    case Group::kTokens:
      s.tokens = n.value_or(0);
      return integral;
    case Group::kGlobalBatch:
      s.global_batch = n.value_or(0);
      return integral && v >= 1;
    case Group::kLoss:
      s.loss = v;
      return true;
    case Group::kGradNorm:
      s.grad_norm = v;
      return true;
    case Group::kLr:
      s.learning_rate = v;
      return true;
    case Group::kTflops:
      s.tflops_per_gpu = v;
      return true;
    case Group::kMfu:
      s.mfu = v;
      return true;
    case Group::kMemoryGb:
      s.memory_bytes = v * 1e9;
      return true;
  }
  return false;
}

/// PCRE2's match limit per line and start position (calls of its internal match(), about 30 ns each): a pattern
/// that backtracks exponentially (nested quantifiers over the same text) gives up after a few milliseconds on a
/// line instead of PCRE2's default 10^7 (~0.3 s). A step-line pattern needs a few hundred.
constexpr uint32_t kMatchLimit = 100000;
/// PCRE2's depth limit (nested backtracking frames) per line, for the same bound on memory.
constexpr uint32_t kDepthLimit = 10000;

/// What pcre2_match's error `rc` (other than no match) means on a line, as a problem of that line.
std::string match_problem(int rc) {
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT)
    return "the pattern hit PCRE2's " + std::string(rc == PCRE2_ERROR_MATCHLIMIT ? "match" : "depth") + " limit (" +
           std::to_string(rc == PCRE2_ERROR_MATCHLIMIT ? kMatchLimit : kDepthLimit) +
           ") on this line, expected a pattern that matches in bounded time (no nested or adjacent quantifiers "
           "over the same characters, e.g. (?: |\\s)*)";
  PCRE2_UCHAR msg[256];
  pcre2_get_error_message(rc, msg, sizeof msg);
  return std::string("the pattern failed on this line: ") + reinterpret_cast<const char*>(msg) +
         ", expected a pattern PCRE2 can match";
}

class RegexParser : public LineParser {
 public:
  explicit RegexParser(const std::string& pattern) {
    int err = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(), 0, &err, &offset, nullptr);
    if (!code_) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw std::invalid_argument("regex: at offset " + std::to_string(offset) + ": " +
                                  reinterpret_cast<const char*>(msg));
    }
    read_groups(pattern);
    context_ = pcre2_match_context_create(nullptr);
    if (context_ == nullptr) {
      pcre2_code_free(code_);
      throw std::bad_alloc();
    }
    pcre2_set_match_limit(context_, kMatchLimit);
    pcre2_set_depth_limit(context_, kDepthLimit);
  }
  ~RegexParser() override {
    pcre2_match_context_free(context_);
    pcre2_code_free(code_);
  }
  RegexParser(const RegexParser&) = delete;
  RegexParser& operator=(const RegexParser&) = delete;

  LogFormat format() const override { return LogFormat::kRegex; }

  LineRead read(const std::string& line) const override {
    LineRead r;
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(line.c_str()), line.size(), 0, 0, md, context_);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      r.kind = LineKind::kUnreadable;
      r.problem = match_problem(rc);
    } else if (rc > 0) {
      r.kind = LineKind::kStep;
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      for (const auto& [number, g] : groups_) {
        if (ov[2 * number] == PCRE2_UNSET) continue;
        const std::string text = line.substr(ov[2 * number], ov[2 * number + 1] - ov[2 * number]);
        const auto v = parse_number(text);
        if (!v || !store(g, *v, r.step)) {
          r.kind = LineKind::kUnreadable;
          r.problem = "group '" + name_of(g) + "': '" + text + "', expected a number that fits it";
          r.column = static_cast<int>(ov[2 * number] + 1);
          break;
        }
      }
      if (r.kind == LineKind::kStep && !r.step.seconds && !r.step.tokens_per_s_per_gpu) {
        r.kind = LineKind::kUnreadable;
        r.problem = "no step time (groups seconds, time_ms and tokens_per_s_per_gpu did not match)";
      }
    }
    pcre2_match_data_free(md);
    return r;
  }

 private:
  /// The pattern's named groups by number; throws when one is not a name recipebench reads.
  void read_groups(const std::string& pattern) {
    uint32_t count = 0, entry = 0;
    PCRE2_SPTR table = nullptr;
    pcre2_pattern_info(code_, PCRE2_INFO_NAMECOUNT, &count);
    pcre2_pattern_info(code_, PCRE2_INFO_NAMEENTRYSIZE, &entry);
    pcre2_pattern_info(code_, PCRE2_INFO_NAMETABLE, &table);
    bool timed = false;
    for (uint32_t i = 0; i < count; ++i) {
      const PCRE2_SPTR e = table + i * entry;
      const int number = (e[0] << 8) | e[1];
      const std::string name = reinterpret_cast<const char*>(e + 2);
      const auto it = group_names().find(name);
      if (it == group_names().end()) {
        pcre2_code_free(code_);
        throw std::invalid_argument("regex: group '" + name + "', expected one of " + known_names());
      }
      groups_.emplace_back(number, it->second);
      timed = timed || it->second == Group::kSeconds || it->second == Group::kTimeMs || it->second == Group::kTps;
    }
    if (!timed) {
      pcre2_code_free(code_);
      throw std::invalid_argument("regex: " + pattern +
                                  ": no step-time group, expected (?<seconds>...), (?<time_ms>...) or "
                                  "(?<tokens_per_s_per_gpu>...)");
    }
  }
  static std::string name_of(Group g) {
    for (const auto& [name, v] : group_names())
      if (v == g) return name;
    return "?";
  }

  pcre2_code* code_ = nullptr;
  pcre2_match_context* context_ = nullptr;
  std::vector<std::pair<int, Group>> groups_;
};

}  // namespace

std::unique_ptr<LineParser> make_regex_parser(const std::string& pattern) {
  return std::make_unique<RegexParser>(pattern);
}

std::unique_ptr<LineParser> make_line_parser(const LogFormatSpec& spec) {
  switch (spec.format) {
    case LogFormat::kMegatron:
      return make_megatron_parser();
    case LogFormat::kTorchtitan:
      return make_torchtitan_parser();
    case LogFormat::kHf:
      return make_hf_parser();
    case LogFormat::kRegex:
      return make_regex_parser(spec.pattern);
  }
  throw std::invalid_argument("unknown log format");
}

}  // namespace recipebench
