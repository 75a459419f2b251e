#include "mutator.h"

#include <algorithm>
#include <utility>

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


/// A run record or config.json (JSON) rather than a recipe (YAML): the first character that is not a space is '{'.
bool is_json(const std::string& text) {
  const size_t at = text.find_first_not_of(" \t\r\n");
  return at != std::string::npos && text[at] == '{';
}

/// "0<sep>1<sep>...<sep>n-1".
std::string numbers(size_t n, const char* sep) {
  std::string out;
  for (size_t k = 0; k < n; ++k) out += (k ? sep : "") + std::to_string(k);
  return out;
}

/// `member` ("\"k\": v") inserted as the first member of the JSON text's first object, with the comma the next
/// member needs (none before a closing '}').
std::string json_insert(const std::string& text, const std::string& member) {
  const size_t brace = text.find('{');
  if (brace == std::string::npos) return text;
  const size_t next = text.find_first_not_of(" \t\r\n", brace + 1);
  const bool empty = next == std::string::npos || text[next] == '}';
  return text.substr(0, brace + 1) + member + (empty ? "" : ",") + text.substr(brace + 1);
}

/// N members "k0": 0, "k1": 1, ... of one JSON object, comma-separated.
std::string many_keys_json(size_t n) {
  std::string out;
  for (size_t k = 0; k < n; ++k) out += (k ? ", \"k" : "\"k") + std::to_string(k) + "\": " + std::to_string(k);
  return out;
}

/// Where a line's key starts and ends (YAML `key: v`, `- key: v`, `key:`; JSON `"key": v`), or {npos, npos}.
std::pair<size_t, size_t> key_span(const std::string& line) {
  size_t at = line.find_first_not_of(' ');
  if (at == std::string::npos || line[at] == '#') return {std::string::npos, std::string::npos};
  if (line.compare(at, 2, "- ") == 0) at += 2;
  if (line[at] == '"') {
    const size_t close = line.find('"', at + 1);
    if (close != std::string::npos && close + 1 < line.size() && line[close + 1] == ':') return {at, close + 1};
    return {std::string::npos, std::string::npos};
  }
  const size_t colon = line.find(':', at);
  if (colon == std::string::npos || colon == at || (colon + 1 < line.size() && line[colon + 1] != ' '))
    return {std::string::npos, std::string::npos};
  return {at, colon};
}

/// Indices of the lines that hold a key.
std::vector<size_t> key_lines(const std::vector<std::string>& lines) {
  std::vector<size_t> out;
  for (size_t k = 0; k < lines.size(); ++k)
    if (key_span(lines[k]).first != std::string::npos) out.push_back(k);
  return out;
}

const char* const kHuge[] = {".nan", ".NaN", ".NAN", ".inf", ".Inf", "+.inf", "-.INF", "NaN", "nan", "Infinity",
                             "-Infinity", "inf", "1e400", "-1e400", "1E400", "1e-400", "1e+99999", "-0e0"};

const char* const kCollectionTags[] = {"!!set", "!!omap", "!!pairs", "!!python/object:os.system", "!!str",
                                       "!!seq", "!!map", "!!int", "!custom", "!<tag:example.com,2026:x>"};

const char* const kTaggedValues[] = {"!!null 1",        "!!int x",          "!!bool 5",          "!!float abc",
                                     "!!set {a: 1}",    "!!omap [a: 1]",    "!!python/tuple [1, 2]",
                                     "!!str [1]",       "!!seq {a: 1}",     "!!map [1]",         "!!null [1]"};

const char* const kTiny[] = {",",  ",\n", "]",   "}",    ",\n,", "- a\n,\n", "[,]", "{,}", "? ,", "- ,", ":",
                             "!",  "&",   "*",   "|",    ">",    "%",        "@",   "`",   "\"",  "'",   "#",
                             "\r", "-",   "---", "...", "[",    "{",    "a: ,",     ", a", "]\n", "}\n"};

}  // namespace

const char* mutation_name(Mutation m) {
  static const char* const names[] = {
      "delete-line",   "duplicate-line", "move-line", "retype-value",      "extreme-number",
      "unicode-value", "deep-nesting",   "alias",     "billion-laughs",    "merge-key",
      "bom",           "crlf",           "nul",       "control-character", "byte-flip",
      "truncate",      "indent",         "splice",    "lone-cr",           "flow-open",
      "huge-number",   "duplicate-key",  "collection-tag", "nul-key",       "many-keys",
      "long-list",     "tiny-document"};
  static_assert(std::size(names) == static_cast<size_t>(Mutation::kCount), "a name per mutation");
  return names[static_cast<int>(m)];
}

std::string Mutator::extreme_number() { return kExtremes[pick(std::size(kExtremes))]; }

std::string Mutator::odd_value() { return kOdd[pick(std::size(kOdd))]; }

std::string Mutator::huge_number(bool json) {
  switch (pick(4)) {
    case 0:
      return std::string(1, '1') + std::string(pick(2) ? 308 : 399, '0');  // 309 / 400 digits
    case 1: {
      std::string digits = pick(2) ? "-" : "";
      const size_t n = pick_count({20, 309, 400, 401, 1000});
      for (size_t k = 0; k < n; ++k) digits += static_cast<char>('1' + pick(9));
      return digits;
    }
    default: {
      const std::string v = kHuge[pick(std::size(kHuge))];
      return json && v[0] == '.' ? v.substr(1) : v;  // JSON has no '.nan': 'nan', 'inf' there
    }
  }
}

std::string Mutator::flow_open() {
  const size_t n = pick_count({65, 300, 500, 10000, 100000, size_t{1} << 20, size_t{4} << 20, size_t{15} << 20});
  switch (pick(3)) {
    case 0:
      return std::string(n, '[');
    case 1:
      return std::string(n, '{');
    default: {  // n openers, '[' and '{a: ' mixed (at most 4 Mi of them, so the input stays inside the cap)
      std::string v;
      for (size_t k = 0; k < std::min(n, size_t{4} << 20); ++k) v += pick(2) ? "[" : "{a: ";
      return v;
    }
  }
}

std::string Mutator::lone_cr(const std::string& text) {
  std::string out = text;
  if (pick(2)) {
    std::replace(out.begin(), out.end(), '\n', '\r');  // every line end a lone CR
    return out;
  }
  std::vector<size_t> ends;
  for (size_t k = 0; k < out.size(); ++k)
    if (out[k] == '\n') ends.push_back(k);
  if (!ends.empty()) out[ends[pick(ends.size())]] = '\r';  // one lone CR among LF line ends
  return out;
}

void Mutator::duplicate_key(std::vector<std::string>& lines, bool json) {
  const std::vector<size_t> keyed = key_lines(lines);
  if (keyed.empty()) {
    lines.insert(lines.begin(), json ? "\"x-dup\": 1, \"x-dup\": 2," : "x-dup: 1\nx-dup: 2");
    return;
  }
  const size_t i = keyed[pick(keyed.size())];
  const auto [from, to] = key_span(lines[i]);
  const std::string pad(from, ' ');
  const std::string key = lines[i].substr(from, to - from);
  const std::string rest = lines[i].substr(to);
  if (json) {
    // The copy before the line, always followed by a comma, so the object stays well-formed: the same member, or
    // the key with another JSON value; a member that opens an object or list is copied as the key with a value.
    static const char* const values[] = {"0", "-1", "1e308", "9223372036854775808", "\"x\"", "null", "true", "{}"};
    const size_t last = rest.find_last_not_of(" ,");
    const bool opens = last != std::string::npos && (rest[last] == '{' || rest[last] == '[');
    std::string copy = pad + key + (pick(2) && !opens ? rest : std::string(": ") + values[pick(std::size(values))]);
    if (copy.back() != ',') copy += ',';
    lines.insert(lines.begin() + static_cast<long>(i), copy);
    return;
  }
  // YAML: the same key in the same mapping, the second time quoted or not: before the line (so a key that opens a
  // block keeps its block), after a list item's first line (so it stays in the item).
  const bool quoted = pick(2) && key[0] != '"';
  const std::string again = (quoted ? "\"" + key + "\"" : key) + (pick(2) ? rest : ": " + extreme_number());
  const bool item = lines[i].compare(lines[i].find_first_not_of(' '), 2, "- ") == 0;
  lines.insert(lines.begin() + static_cast<long>(item ? i + 1 : i), pad + again);
}

void Mutator::collection_tag(std::vector<std::string>& lines) {
  std::vector<size_t> parents;  // lines that open a block mapping or list ("key:")
  for (size_t k = 0; k < lines.size(); ++k)
    if (!lines[k].empty() && lines[k].back() == ':' && lines[k].find('#') == std::string::npos) parents.push_back(k);
  if (!parents.empty() && pick(2)) {
    lines[parents[pick(parents.size())]] += std::string(" ") + kCollectionTags[pick(std::size(kCollectionTags))];
    return;
  }
  const size_t i = pick(lines.size());
  lines[i] = with_value(lines[i], kTaggedValues[pick(std::size(kTaggedValues))]);
}

void Mutator::nul_key(std::vector<std::string>& lines, bool json) {
  const std::vector<size_t> keyed = key_lines(lines);
  if (keyed.empty() || !pick(4)) {  // a top-level key of one NUL, as the case's top-nul.yaml
    lines.insert(lines.begin() + static_cast<long>(json ? pick_count({0, 1}) : 0),
                 json ? "\"\\u0000\": 1," : (pick(2) ? "\"\\x00\": 1" : std::string("\0: 1", 4)));
    return;
  }
  std::string& line = lines[keyed[pick(keyed.size())]];
  const auto [from, to] = key_span(line);
  const bool quoted = line[from] == '"';
  const size_t mid = from + (quoted ? 1 : 0) + pick(to - from - (quoted ? 2 : 0) + 1);
  switch (json ? 0 : pick(3)) {
    case 0:  // JSON's escape, or YAML's inside a double-quoted key
      if (quoted)
        line.insert(mid, json ? "\\u0000" : "\\0");
      else
        line = line.substr(0, from) + "\"" + line.substr(from, mid - from) + "\\0" + line.substr(mid, to - mid) +
               "\"" + line.substr(to);
      break;
    default:  // a raw NUL byte
      line.insert(mid, 1, '\0');
  }
}

void Mutator::many_keys_yaml(std::vector<std::string>& lines) {
  const size_t n = pick_count({1000, 5000, 10001, 20000});  // past the 10,000 values of a recipe (200,000: JSON)
  if (pick(2)) {
    lines.push_back("x-many:");
    for (size_t k = 0; k < n; ++k) lines.push_back("  k" + std::to_string(k) + ": " + std::to_string(k));
  } else {
    std::string flow = "x-many: {";
    for (size_t k = 0; k < n; ++k) flow += (k ? ", k" : "k") + std::to_string(k) + ": " + std::to_string(k);
    lines.push_back(flow + "}");
  }
}

void Mutator::long_list_yaml(std::vector<std::string>& lines) {
  const size_t n = pick_count({9999, 10000, 10001, 20000});
  if (pick(2)) {
    lines.push_back("x-list:");
    for (size_t k = 0; k < n; ++k) lines.push_back("- " + std::to_string(k));
  } else {
    lines.push_back("x-list: [" + numbers(n, ", ") + "]");
  }
}

std::string Mutator::tiny_document() {
  if (pick(2)) return kTiny[pick(std::size(kTiny))];
  static const char alphabet[] = ",[]{}:-?|>!&*#%@`'\"\r\n\t a0";
  std::string out;
  const size_t n = 1 + pick(4);
  for (size_t k = 0; k < n; ++k) out += pick(16) ? alphabet[pick(sizeof alphabet - 1)] : '\0';
  return out;
}

Mutation Mutator::draw() {
  // The big ones (megabytes of '[', 200,000 keys, 20,000 items) cost 0.05 to 1 s each: one step in 300, so a
  // 10^6-input run still makes each several thousand times while the mean input stays a few milliseconds.
  static const Mutation big[] = {Mutation::kFlowOpen, Mutation::kManyKeys, Mutation::kLongList};
  if (pick(300) == 0) return big[pick(std::size(big))];
  for (;;) {
    const auto m = static_cast<Mutation>(pick(static_cast<size_t>(Mutation::kCount)));
    if (std::find(std::begin(big), std::end(big), m) == std::end(big)) return m;
  }
}

std::string Mutator::mutate(const std::string& seed, const std::vector<std::string>& donors,
                            std::vector<Mutation>* applied) {
  std::string text = seed;
  const size_t steps = 1 + pick(4);
  for (size_t i = 0; i < steps; ++i) {
    const auto m = draw();
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
      static const size_t depths[] = {8, 63, 64, 65, 200, 300, 500, 1000, 5000, 10000, 20000};
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
    case Mutation::kLoneCr:
      return lone_cr(text);
    case Mutation::kFlowOpen:
      lines[i] = with_value(lines[i], flow_open());
      break;
    case Mutation::kHugeNumber:
      lines[i] = with_value(lines[i], huge_number(is_json(text)));
      break;
    case Mutation::kDuplicateKey:
      duplicate_key(lines, is_json(text));
      break;
    case Mutation::kCollectionTag:
      collection_tag(lines);
      break;
    case Mutation::kNulKey:
      nul_key(lines, is_json(text));
      break;
    case Mutation::kManyKeys:
      if (is_json(text)) return json_insert(text, many_keys_json(pick_count({1000, 5000, 20000, 200000})));
      many_keys_yaml(lines);
      break;
    case Mutation::kLongList:
      if (is_json(text)) return json_insert(text, "\"x-list\": [" + numbers(pick_count({9999, 10000, 10001, 20000}), ", ") + "]");
      long_list_yaml(lines);
      break;
    case Mutation::kTinyDocument:
      return tiny_document();
    case Mutation::kCount:
      break;
  }
  return join_lines(lines);
}

namespace {

/// Flags the launch check compares (recipe/launch_check.h) and a few it does not.
const char* const kLaunchFlags[] = {
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--num-layers-per-virtual-pipeline-stage",
    "--context-parallel-size", "--expert-model-parallel-size", "--expert-tensor-parallel-size", "--global-batch-size",
    "--micro-batch-size", "--seq-length", "--num-layers", "--hidden-size", "--num-experts", "--moe-router-topk",
    "--sequence-parallel", "--recompute-granularity", "--recompute-num-layers", "--lr", "--min-lr", "--adam-beta1",
    "--adam-eps", "--weight-decay", "--nnodes", "--nproc-per-node", "--nproc_per_node", "--actor-num-nodes",
    "--actor-num-gpus-per-node", "--parallelism.tensor_parallel_degree", "--training.local_batch_size",
    "--decoder-first-pipeline-num-layers", "--max-tokens-per-gpu", "--use-dynamic-batch-size",
    "--moe-token-dispatcher-type", "--exp-avg-dtype", "--use-precision-aware-optimizer", "--unknown-flag", "-", "--"};

/// Values of a flag, an option or a log's number: bounds and past them, empty, signs, bases, unicode digits, huge.
const char* const kArgValues[] = {
    "0", "-1", "1", "2", "3", "+2", "-0", "0x10", "010", "1_000", "2.0", "1e3", "1e309", "-1e309", "1e-320", "nan",
    "NaN", "inf", "-inf", "2147483647", "2147483648", "4294967296", "9223372036854775807", "9223372036854775808",
    "18446744073709551616", "99999999999999999999999999999", "131072", "131073", "1048576", "16777216", "33554432",
    "67108864", "0.01", "0.0099", "100", "100.1", "", " ", "''", "\"\"", "\xd9\xa3", "\xef\xbc\x98", "\xe2\x80\x8b" "8",
    "8\xe2\x80\xae", "\xff\xfe", "H100", "H200", "B200", "CPU", "Qwen3.5-35B-A3B", "Qwen3.5-397B-A17B", "Qwen9",
    "1:4", "4:", ":", "$((2**63))", "-5", "--", "=", "json", "text", "fp32", "bf16", "/", "/dev/null", "/etc",
    "/nonexistent/file.json", "a\tb", "\xed\xa0\x80"};

const char* const kArgOptions[] = {"--calibrate", "--count", "--format", "--global-batch", "--gpu", "--instance",
                                   "--memory-reserve", "--model", "--model-config", "--optimizer-state", "--out",
                                   "--per-node", "--profile", "--row-tokens", "--stack-factor", "--top", "--catalog",
                                   "--help", "--nope", "@RECIPE"};

/// The first and one-past-last line of the `run:` value in `lines` (a top-level `run:` key), or {npos, npos}.
std::pair<size_t, size_t> run_block(const std::vector<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("run:", 0) != 0) continue;
    size_t end = i + 1;
    while (end < lines.size() && (lines[end].empty() || lines[end][0] == ' ' || lines[end][0] == '\t')) ++end;
    return {i, end};
  }
  return {std::string::npos, std::string::npos};
}

}  // namespace

std::string Mutator::command_value() {
  return pick(3) ? kArgValues[pick(std::size(kArgValues))] : extreme_number();
}

void Mutator::command_step(std::vector<std::string>& block, const std::string& indent) {
  const size_t at = pick(block.size() + 1);
  const std::string flag = kLaunchFlags[pick(std::size(kLaunchFlags))];
  switch (pick(10)) {
    case 0:  // a flag and its value, continued or not
      block.insert(block.begin() + at, indent + flag + (pick(4) ? " " : "=") + command_value() + (pick(2) ? " \\" : ""));
      break;
    case 1:  // a value of a flag already there
      if (!block.empty()) {
        std::string& l = block[pick(block.size())];
        const size_t dash = l.find("--");
        if (dash != std::string::npos) {
          const size_t sp = l.find_first_of(" =", dash);
          if (sp != std::string::npos) {
            const size_t end = l.find(' ', sp + 1);
            l = l.substr(0, sp + 1) + command_value() + (end == std::string::npos ? "" : l.substr(end));
          }
        }
      }
      break;
    case 2:  // a line continuation removed or added (also before a CR, or doubled)
      if (!block.empty()) {
        std::string& l = block[pick(block.size())];
        if (!l.empty() && l.back() == '\\') l.pop_back();
        else l += pick_count({0, 1, 2}) == 0 ? " \\" : (pick(2) ? " \\\r" : " \\\\");
      }
      break;
    case 3: {  // a quote opened, closed or around a flag
      if (block.empty()) break;
      std::string& l = block[pick(block.size())];
      const char* q[] = {"'", "\"", "\\'", "\"'", "'\"", "$'", "\\\""};
      l.insert(pick(l.size() + 1), q[pick(std::size(q))]);
      break;
    }
    case 4:  // a variable as a value, and maybe its assignment
      block.insert(block.begin() + at, indent + flag + " " + (pick(2) ? "$V" : pick(2) ? "${V:-4}" : "\"${V}\"") + " \\");
      if (pick(2)) block.insert(block.begin(), indent + (pick(2) ? "export " : "") + "V=" + command_value());
      break;
    case 5:  // a here-document holding flags, closed or not
      block.insert(block.begin() + at, indent + "cat <<" + (pick(2) ? "EOF" : "'EOF'") + " > /tmp/args");
      block.insert(block.begin() + at + 1, indent + flag + " " + command_value());
      if (pick(3)) block.insert(block.begin() + at + 2, indent + "EOF");
      break;
    case 6:  // the command wrapped in bash -c "...", or a command substitution
      if (!block.empty()) {
        block.front() = indent + (pick(2) ? "bash -c \"" : "srun bash -c '") + block.front().substr(
            std::min(block.front().find_first_not_of(' '), block.front().size()));
        if (pick(2)) block.back() += pick(2) ? "\"" : "'";
      } else {
        block.push_back(indent + "torchrun $(echo " + flag + " " + command_value() + ")");
      }
      break;
    case 7:  // a comment holding a flag, or a flag after a ';' / '&&' / '|'
      block.insert(block.begin() + at, indent + (pick(2) ? "# " : pick(2) ? "true; torchrun " : "true && x | y ") + flag +
                                           " " + command_value());
      break;
    case 8:  // a flag's line repeated (the last value wins)
      if (!block.empty()) block.insert(block.begin() + at, block[pick(block.size())]);
      break;
    default:  // a line dropped
      if (!block.empty()) block.erase(block.begin() + pick(block.size()));
  }
}

std::string Mutator::mutate_command(const std::string& recipe, const std::vector<std::string>& donors) {
  std::vector<std::string> lines = split_lines(recipe);
  const auto [first, end] = run_block(lines);
  if (first == std::string::npos) return mutate(recipe, donors);
  // A one-line `run: cmd` becomes the block's one line (kept on the key's line); a block (`run: |`, `>-`, a folded
  // plain or quoted scalar) keeps its lines.
  const std::string head = lines[first];
  const std::string rest = head.substr(std::min<size_t>(4, head.size()));
  const bool one_line = end == first + 1 && rest.find_first_not_of(" |>-+0123456789") != std::string::npos;
  std::vector<std::string> block(lines.begin() + static_cast<long>(first) + 1, lines.begin() + static_cast<long>(end));
  std::string indent = "  ";
  if (!block.empty()) indent = block.front().substr(0, std::min(block.front().find_first_not_of(" \t"), block.front().size()));
  if (one_line) block = {rest.substr(std::min(rest.find_first_not_of(' '), rest.size()))}, indent = "";
  for (size_t k = 0, steps = 1 + pick(3); k < steps; ++k) command_step(block, indent);
  std::string text = join_lines(block);
  if (pick(4) == 0) text = mutate(text, donors);
  std::vector<std::string> out(lines.begin(), lines.begin() + static_cast<long>(first));
  if (one_line) {
    out.push_back("run: " + text);
  } else {
    out.push_back(head);
    out.push_back(text);
  }
  out.insert(out.end(), lines.begin() + static_cast<long>(end), lines.end());
  return join_lines(out);
}

std::string Mutator::mutate_args(const std::string& args, const std::vector<std::string>& donors) {
  std::vector<std::string> lines = split_lines(args);
  for (size_t k = 0, steps = 1 + pick(3); k < steps; ++k) {
    const size_t at = 1 + pick(lines.size());  // the subcommand (line 0) stays, but for a general step
    const std::string option = kArgOptions[pick(std::size(kArgOptions))];
    switch (pick(7)) {
      case 0:  // a value
        if (lines.size() > 1) {
          std::string& l = lines[1 + pick(lines.size() - 1)];
          if (l.rfind("--", 0) != 0) l = command_value();
        }
        break;
      case 1:  // an option and a value
        lines.insert(lines.begin() + static_cast<long>(std::min(at, lines.size())), {option, command_value()});
        break;
      case 2:  // an option as --opt=value
        lines.insert(lines.begin() + static_cast<long>(std::min(at, lines.size())), option + "=" + command_value());
        break;
      case 3:  // a huge value (up to a MiB) or a long number
        if (lines.size() > 1) lines[1 + pick(lines.size() - 1)] = pick(2) ? std::string(pick_count({1000, 100000, 1000000}), '9')
                                                                           : std::string(pick_count({256, 70000}), 'x');
        break;
      case 4:  // a line dropped
        if (lines.size() > 1) lines.erase(lines.begin() + static_cast<long>(1 + pick(lines.size() - 1)));
        break;
      case 5:  // a line repeated
        if (lines.size() > 1) lines.insert(lines.begin() + static_cast<long>(std::min(at, lines.size())), lines[1 + pick(lines.size() - 1)]);
        break;
      default:  // a general step (the subcommand line too)
        return mutate(join_lines(lines), donors);
    }
  }
  return join_lines(lines);
}

std::string Mutator::regex_step(const std::string& pattern) {
  const char* bits[] = {"(",    ")",       "[",       "]",         "(?<step>",  "(?<seconds>", "(?<x>a)\\k<y>",
                        "*",    "+{2,}",   "(a|a)*",  "(?:a+)+",   "\\",        "(?R)",        "(?<step>[0-9]+)",
                        "{99999}", "(?C1)", "\\p{Xx}", "(*LIMIT_MATCH=1)", "(?i", "\\1", "(?<seconds>.*)*$"};
  std::string p = pattern;
  p.insert(pick(p.size() + 1), bits[pick(std::size(bits))]);
  return p;
}

std::string Mutator::mutate_log(const std::string& log, const std::vector<std::string>& donors) {
  std::vector<std::string> lines = split_lines(log);
  if (lines.size() < 2) return mutate(log, donors);
  const std::string prefix = "#log-format:";
  const bool has_format = lines[0].rfind(prefix, 0) == 0;
  const size_t body = has_format ? 1 : 0;
  switch (pick(5)) {
    case 0: {  // the format: another, none, or the pattern mutated (with lines that make it backtrack)
      if (!has_format) break;
      const std::string spec = lines[0].substr(prefix.size());
      const char* formats[] = {" megatron", " torchtitan", " hf", " regex:", " regex:(", " ", " MEGATRON", " regex:.*"};
      if (spec.rfind(" regex:", 0) == 0 && pick(4)) {
        lines[0] = prefix + regex_step(spec);
        if (pick(2)) lines.insert(lines.begin() + 1 + static_cast<long>(pick(lines.size() - 1)),
                                  std::string(pick_count({15, 30, 5000}), 'a') + (pick(2) ? "!" : "b"));
      } else {
        lines[0] = prefix + formats[pick(std::size(formats))];
      }
      break;
    }
    case 1: {  // a number of a line made extreme
      std::string& l = lines[body + pick(lines.size() - body)];
      size_t d = l.find_first_of("0123456789", pick(l.size() + 1));
      if (d == std::string::npos) d = l.find_first_of("0123456789");
      if (d == std::string::npos) break;
      const size_t e = l.find_first_not_of("0123456789.eE+-", d);
      l = l.substr(0, d) + command_value() + (e == std::string::npos ? "" : l.substr(e));
      break;
    }
    case 2:  // a line repeated (a step twice, out of order) or dropped
      if (pick(2)) lines.insert(lines.begin() + static_cast<long>(body + pick(lines.size() - body)), lines[body + pick(lines.size() - body)]);
      else lines.erase(lines.begin() + static_cast<long>(body + pick(lines.size() - body)));
      break;
    case 3:  // a long line (to the 1 MiB a log line keeps, and past it)
      lines.insert(lines.begin() + static_cast<long>(body + pick(lines.size() - body)),
                   lines[body + pick(lines.size() - body)] + std::string(pick_count({1000, 70000, (size_t{1} << 20) + 5}), pick(2) ? ' ' : '9'));
      break;
    default: {  // a general step on the log, the format line kept
      std::vector<std::string> rest(lines.begin() + static_cast<long>(body), lines.end());
      std::string text = mutate(join_lines(rest), donors);
      return has_format ? lines[0] + "\n" + text : text;
    }
  }
  return join_lines(lines);
}

}  // namespace recipebench::fuzz
