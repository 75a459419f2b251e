#include "mutator.h"

#include <algorithm>

namespace recipebench::fuzz {

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (;;) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(start));
      return lines;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

/// Position where a line's value starts (after "key: " or "- "), or npos when the line has none.
size_t value_start(const std::string& line) {
  const size_t colon = line.find(": ");
  if (colon != std::string::npos) return colon + 2;
  const size_t first = line.find_first_not_of(' ');
  if (first != std::string::npos && line.compare(first, 2, "- ") == 0) return first + 2;
  return std::string::npos;
}

/// Replaces the value of `line` (keeping a JSON line's trailing comma).
std::string with_value(const std::string& line, const std::string& value) {
  const size_t at = value_start(line);
  if (at == std::string::npos) return line + " " + value;
  const bool comma = !line.empty() && line.back() == ',';
  return line.substr(0, at) + value + (comma ? "," : "");
}

const char* const kExtremes[] = {"0",
                                 "-1",
                                 "1",
                                 "2",
                                 "127",
                                 "128",
                                 "255",
                                 "65536",
                                 "2147483647",
                                 "2147483648",
                                 "-2147483648",
                                 "4294967295",
                                 "4294967296",
                                 "4294967298",
                                 "9007199254740993",
                                 "9223372036854775807",
                                 "9223372036854775808",
                                 "-9223372036854775809",
                                 "18446744073709551616",
                                 "99999999999999999999999999999",
                                 "1e308",
                                 "1e309",
                                 "-1e309",
                                 "1e-400",
                                 "4.9e-324",
                                 "2.2250738585072014e-308",
                                 ".nan",
                                 ".NaN",
                                 ".inf",
                                 "-.inf",
                                 "0x7fffffff",
                                 "0xffffffffffffffff",
                                 "0o777",
                                 "0o7777777777777777777777",
                                 "1_000",
                                 "3.5",
                                 "-0",
                                 "-0.0",
                                 "+1",
                                 "1e20",
                                 "0.1e1",
                                 "1.",
                                 ".5"};

const char* const kOdd[] = {"'x'",
                            "\"8\"",
                            "'8'",
                            "[1, 2]",
                            "[]",
                            "{}",
                            "{a: 1}",
                            "null",
                            "~",
                            "true",
                            "false",
                            "yes",
                            "''",
                            "\"\"",
                            "!!str 5",
                            "!!int '5'",
                            "!!binary aGVsbG8=",
                            "!custom x",
                            "&a 1",
                            "*a",
                            "*undefined",
                            "? complex : key",
                            "|\n  block",
                            ">\n  folded",
                            "\"a\\nb\"",
                            "\"a\\u0000b\"",
                            "\"\\x01\"",
                            "'it''s'",
                            "2026-13-45",
                            "12:30:00",
                            "[[[]]]",
                            "{[1]: 2}",
                            "- item",
                            "a: b: c",
                            "\"unterminated",
                            "'unterminated",
                            "[1, 2",
                            "{a: 1"};

const char* const kUnicode[] = {"\"caf\xc3\xa9\"",
                                "\"\xe6\x97\xa5\xe6\x9c\xac\"",
                                "\"\xf0\x9f\x9a\x80\"",
                                "\"\xe2\x80\xae"
                                "evil\"",
                                "\"e\xcc\x81\"",
                                "\"\xe2\x80\x8b\"",
                                "\"\xef\xbb\xbf"
                                "bom\"",
                                "\"\xff\xfe\"",
                                "\"\xc0\xaf\"",
                                "\"\xed\xa0\x80\"",
                                "\"\xf4\x90\x80\x80\"",
                                "\"\xe2\x82\"",
                                "caf\xc3\xa9",
                                "\xff",
                                "\"\\ud800\"",
                                "\"\\U0010FFFF\"",
                                "\"\\x00\"",
                                "\"line1\\nfile.yaml:1:1: error: forged\"",
                                "\"\\r\\n\"",
                                "\"\\t\\e\\a\""};

}  // namespace

const char* mutation_name(Mutation m) {
  static const char* const names[] = {
      "delete-line",   "duplicate-line", "move-line", "retype-value",      "extreme-number",
      "unicode-value", "deep-nesting",   "alias",     "billion-laughs",    "merge-key",
      "bom",           "crlf",           "nul",       "control-character", "byte-flip",
      "truncate",      "indent",         "splice"};
  return names[static_cast<int>(m)];
}

std::string Mutator::extreme_number() { return kExtremes[pick(std::size(kExtremes))]; }

std::string Mutator::odd_value() { return kOdd[pick(std::size(kOdd))]; }

std::string Mutator::mutate(const std::string& seed, const std::vector<std::string>& donors,
                            std::vector<Mutation>* applied) {
  std::string text = seed;
  const size_t steps = 1 + pick(4);
  for (size_t i = 0; i < steps; ++i) {
    const auto m = static_cast<Mutation>(pick(static_cast<size_t>(Mutation::kCount)));
    if (applied) applied->push_back(m);
    text = apply(m, text, donors);
  }
  return text;
}

std::string Mutator::apply(Mutation m, const std::string& text, const std::vector<std::string>& donors) {
  std::vector<std::string> lines = split_lines(text);
  const size_t n = lines.size();
  const size_t i = pick(n);
  switch (m) {
    case Mutation::kDeleteLine:
      lines.erase(lines.begin() + static_cast<long>(i));
      break;
    case Mutation::kDuplicateLine:
      lines.insert(lines.begin() + static_cast<long>(pick(n + 1)), std::string(lines[i]));
      break;
    case Mutation::kMoveLine: {
      const std::string line = lines[i];
      lines.erase(lines.begin() + static_cast<long>(i));
      lines.insert(lines.begin() + static_cast<long>(pick(lines.size() + 1)), line);
      break;
    }
    case Mutation::kRetypeValue:
      lines[i] = with_value(lines[i], odd_value());
      break;
    case Mutation::kExtremeNumber:
      lines[i] = with_value(lines[i], extreme_number());
      break;
    case Mutation::kUnicodeValue:
      lines[i] = pick(3) ? with_value(lines[i], kUnicode[pick(std::size(kUnicode))])
                         : lines[i] + kUnicode[pick(std::size(kUnicode))];
      break;
    case Mutation::kDeepNesting: {
      static const size_t depths[] = {8, 63, 64, 65, 200, 1000, 5000, 20000};
      const size_t d = depths[pick(std::size(depths))];
      std::string v;
      if (pick(2))
        v = std::string(d, '[') + "1" + std::string(d, ']');
      else {
        for (size_t k = 0; k < d; ++k) v += "{a: ";
        v += "1" + std::string(d, '}');
      }
      lines[i] = with_value(lines[i], v);
      break;
    }
    case Mutation::kAlias: {
      // An anchor on one value and an alias of it elsewhere; sometimes an alias inside its own anchor.
      const size_t j = pick(n);
      switch (pick(4)) {
        case 0:
          lines[i] = with_value(lines[i], "&a [*a]");
          break;
        case 1:
          lines[i] = with_value(lines[i], "&a {x: *a}");
          break;
        case 2:
          lines[j] = with_value(lines[j], "*nowhere");
          break;
        default: {
          const size_t at = value_start(lines[i]);
          if (at != std::string::npos) lines[i].insert(at, "&a ");
          lines[j] = with_value(lines[j], "*a");
        }
      }
      break;
    }
    case Mutation::kBillionLaughs: {
      static const char* const bomb =
          "x-l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
          "x-l1: &l1 [*l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0]\n"
          "x-l2: &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]\n"
          "x-l3: &l3 [*l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2]\n"
          "x-l4: &l4 [*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3]\n"
          "x-l5: &l5 [*l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4]\n"
          "x-l6: &l6 [*l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5]\n"
          "x-l7: &l7 [*l6, *l6, *l6, *l6, *l6, *l6, *l6, *l6, *l6, *l6]\n"
          "x-l8: &l8 [*l7, *l7, *l7, *l7, *l7, *l7, *l7, *l7, *l7, *l7]";
      lines.insert(lines.begin() + static_cast<long>(pick(2) ? 0 : pick(n + 1)), bomb);
      break;
    }
    case Mutation::kMergeKey: {
      // A mapping's lines copied under an anchor, then merged back with `<<`.
      const size_t indent = lines[i].find_first_not_of(' ');
      const std::string pad = indent == std::string::npos ? "" : lines[i].substr(0, indent);
      static const char* const merges[] = {"<<: *m", "<<: [*m, *m]", "<<: 5", "<<: *m\n<<: *m", "<<: {}"};
      lines.insert(lines.begin(), "x-m: &m {tp: 1, pp: 1, label: merged}");
      lines.insert(lines.begin() + static_cast<long>(i + 1), pad + merges[pick(std::size(merges))]);
      break;
    }
    case Mutation::kBom:
      return pick(4) ? "\xEF\xBB\xBF" + text
                     : text.substr(0, text.size() / 2) + "\xEF\xBB\xBF" + text.substr(text.size() / 2);
    case Mutation::kCrlf: {
      std::string out;
      const char* eol = pick(3) ? "\r\n" : "\r";
      for (char c : text) out += c == '\n' ? std::string(eol) : std::string(1, c);
      return out;
    }
    case Mutation::kNul: {
      std::string out = text;
      out.insert(pick(out.size() + 1), 1, '\0');
      return out;
    }
    case Mutation::kControlCharacter: {
      std::string out = text;
      static const char ctl[] = {'\x01', '\x07', '\x08', '\x0b', '\x0c', '\x1b', '\x7f', '\t'};
      out.insert(pick(out.size() + 1), 1, ctl[pick(sizeof ctl)]);
      return out;
    }
    case Mutation::kByteFlip: {
      std::string out = text;
      if (!out.empty()) out[pick(out.size())] = static_cast<char>(pick(256));
      return out;
    }
    case Mutation::kTruncate:
      return text.substr(0, pick(text.size() + 1));
    case Mutation::kIndent:
      lines[i] = pick(2) ? " " + lines[i] : (lines[i].rfind(' ', 0) == 0 ? lines[i].substr(1) : "\t" + lines[i]);
      break;
    case Mutation::kSplice: {
      if (donors.empty()) break;
      const auto donor = split_lines(donors[pick(donors.size())]);
      lines.insert(lines.begin() + static_cast<long>(i), donor[pick(donor.size())]);
      break;
    }
    case Mutation::kCount:
      break;
  }
  return join_lines(lines);
}

}  // namespace recipebench::fuzz
