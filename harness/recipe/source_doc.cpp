#include "recipe/source_doc.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "util/input_file.h"

namespace recipebench {

std::string pointer_append(const std::string& pointer, const std::string& token) {
  std::string out = pointer + "/";
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string pointer_unescape(const std::string& token) {
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size()) {
      out += token[i + 1] == '1' ? '/' : '~';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

namespace {

SourceMark to_mark(const YAML::Mark& m) {
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

std::string parent_of(const std::string& pointer) {
  auto slash = pointer.rfind('/');
  return slash == std::string::npos ? std::string() : pointer.substr(0, slash);
}

std::string last_token(const std::string& pointer) { return pointer_unescape(pointer.substr(pointer.rfind('/') + 1)); }

/// Limits that keep a hostile document cheap: nesting depth, and values after aliases are expanded (a
/// "billion laughs" document repeats an alias of an alias: a few lines expand to 10^9 values).
constexpr int kMaxDepth = 64;
constexpr size_t kMaxValues = 10000;

class Converter {
 public:
  /// `aliases`: whether the document uses aliases (they, not the text, can make it expand past the value limit).
  Converter(SourceDoc& doc, bool aliases, std::string kind) : doc_(doc), aliases_(aliases), kind_(std::move(kind)) {}

  Json convert(const YAML::Node& n, const std::string& pointer, const std::string& path, SourceMark key) {
    SourceNode info;
    info.path = path;
    info.value = to_mark(n.Mark());
    info.key = key.line ? key : info.value;
    if (++values_ > kMaxValues) {
      if (aliases_)
        fail(info.value, path,
             "a document that expands to more than " + std::to_string(kMaxValues) + " values (aliases of aliases)",
             "a " + kind_ + " without nested alias expansion");
      fail(info.value, path, "a document of more than " + std::to_string(kMaxValues) + " values",
           "at most " + std::to_string(kMaxValues) + " values in a " + kind_);
    }
    if (static_cast<int>(ancestors_.size()) >= kMaxDepth)
      fail(info.value, path, "values nested more than " + std::to_string(kMaxDepth) + " levels deep",
           "at most " + std::to_string(kMaxDepth) + " levels");
    for (const YAML::Node& a : ancestors_)
      if (a.is(n) && (n.IsSequence() || n.IsMap()))
        fail(info.value, path, "a recursive alias (the value contains itself)", "an alias of a complete value");
    Json out;
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out = nullptr;
        info.plain = true;
        break;
      case YAML::NodeType::Scalar:
        info.text = utf8_from_latin1_bytes(n.Scalar());
        info.plain = n.Tag() == "?";
        out = scalar(n, info);
        break;
      case YAML::NodeType::Sequence: {
        check_collection_tag(n, info, "tag:yaml.org,2002:seq");
        ancestors_.push_back(n);
        out = Json::array();
        size_t i = 0;
        for (const auto& item : n) {
          out.push_back(
              convert(item, pointer_append(pointer, std::to_string(i)), path + "[" + std::to_string(i) + "]", {}));
          ++i;
        }
        ancestors_.pop_back();
        break;
      }
      case YAML::NodeType::Map:
        check_collection_tag(n, info, "tag:yaml.org,2002:map");
        ancestors_.push_back(n);
        out = mapping(n, pointer, path);
        ancestors_.pop_back();
        break;
    }
    doc_.nodes[pointer] = info;
    return out;
  }

 private:
  [[noreturn]] void fail(SourceMark m, const std::string& path, const std::string& found, const std::string& expected) {
    throw InputError(Diagnostic{doc_.file, m.line, m.column, path, found, expected});
  }

  /// Refuses a key holding a control character (a NUL written as "\0" or "\x00" in a quoted key): no field name
  /// has one, and it would be cut short by whatever reads the name as C text.
  void check_key(const YAML::Node& k, const std::string& path) {
    const std::string key = utf8_from_latin1_bytes(k.Scalar());
    for (char c : key) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7F) {
        char code[8];
        std::snprintf(code, sizeof code, "0x%02X", u);
        fail(to_mark(k.Mark()), path.empty() ? key : path + "." + key,
             std::string("a key holding the control character ") + code + (u == 0 ? " (NUL)" : ""),
             "a plain field name");
      }
    }
  }

  /// A list or mapping may be untagged ('?', or '!' for the non-specific tag) or carry the core tag of its own
  /// kind (!!seq, !!map); any other tag (!!set, !!omap, !!python/object, !!str, a custom one) is refused as on
  /// scalars, never ignored.
  void check_collection_tag(const YAML::Node& n, const SourceNode& info, const std::string& own) {
    const std::string& tag = n.Tag();
    if (tag == "?" || tag == "!" || tag.empty() || tag == own) return;
    fail(info.value, info.path, std::string("unsupported tag '") + tag + "' on a " + (n.IsMap() ? "mapping" : "list"),
         "an untagged value");
  }

  static bool is_merge_key(const YAML::Node& k) { return k.IsScalar() && k.Scalar() == "<<" && k.Tag() == "?"; }

  /// A mapping's members. A YAML merge key (`<<: *defaults` or `<<: [*a, *b]`, YAML 1.1) adds the members of
  /// the merged mappings that the mapping does not give itself; their locations stay those of the merged source.
  Json mapping(const YAML::Node& n, const std::string& pointer, const std::string& path) {
    Json out = Json::object();
    std::vector<YAML::Node> merged;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node& k = it->first;
      if (!k.IsScalar()) fail(to_mark(k.Mark()), path, "a non-scalar key", "a plain field name");
      if (is_merge_key(k)) {
        const YAML::Node& v = it->second;
        if (!merged.empty())
          fail(to_mark(k.Mark()), path, "a second merge key '<<' in one mapping",
               "one '<<' (list several: <<: [*a, *b])");
        if (v.IsMap())
          merged.push_back(v);
        else if (v.IsSequence())
          for (const auto& item : v) merged.push_back(item);
        else
          fail(to_mark(k.Mark()), path.empty() ? "<<" : path + ".<<", "a merge key '<<' whose value is not a mapping",
               "an alias of a mapping (<<: *name) or a list of them");
        for (const auto& m : merged)
          if (!m.IsMap())
            fail(to_mark(k.Mark()), path.empty() ? "<<" : path + ".<<", "a merge key '<<' whose value is not a mapping",
                 "an alias of a mapping (<<: *name) or a list of them");
        if (merged.empty())
          fail(to_mark(k.Mark()), path.empty() ? "<<" : path + ".<<", "an empty merge key '<<'",
               "an alias of a mapping");
        continue;
      }
      const std::string name = utf8_from_latin1_bytes(k.Scalar());
      check_key(k, path);
      const std::string child = pointer_append(pointer, name);
      const std::string child_path = path.empty() ? name : path + "." + name;
      if (out.contains(name)) {
        const SourceMark first = doc_.nodes[child].key;
        fail(to_mark(k.Mark()), child_path,
             "duplicate key '" + name + "' (first defined at line " + std::to_string(first.line) + ")",
             "each key once per mapping");
      }
      out[name] = convert(it->second, child, child_path, to_mark(k.Mark()));
    }
    // Merged members: the mapping's own keys win, then the first merged mapping that has the key.
    for (const auto& m : merged) {
      ancestors_.push_back(m);
      for (auto it = m.begin(); it != m.end(); ++it) {
        const YAML::Node& k = it->first;
        if (!k.IsScalar() || is_merge_key(k))
          fail(to_mark(k.Mark()), path, "a merged mapping with a merge key or a non-scalar key",
               "a merged mapping of plain fields");
        const std::string name = utf8_from_latin1_bytes(k.Scalar());
        if (out.contains(name)) continue;
        out[name] = convert(it->second, pointer_append(pointer, name), path.empty() ? name : path + "." + name,
                            to_mark(k.Mark()));
      }
      ancestors_.pop_back();
    }
    return out;
  }

  Json scalar(const YAML::Node& n, const SourceNode& info) {
    const std::string& s = info.text;
    const std::string& tag = n.Tag();
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return s;  // quoted or block scalar, or !!str
    if (tag != "?") {
      // A core tag must fit the value it tags: !!null 1 or !!bool 1 is refused, never read as the integer 1.
      const Json v = resolve_plain(s, info);
      if (tag == "tag:yaml.org,2002:int" && v.is_number_integer()) return v;
      if (tag == "tag:yaml.org,2002:float" && v.is_number()) return v.get<double>();
      if (tag == "tag:yaml.org,2002:bool" && v.is_boolean()) return v;
      if (tag == "tag:yaml.org,2002:null" && v.is_null()) return v;
      const std::string core = "tag:yaml.org,2002:";
      if (tag == core + "int" || tag == core + "float" || tag == core + "bool" || tag == core + "null")
        fail(info.value, info.path, "'" + s + "' tagged '!!" + tag.substr(core.size()) + "', which it is not",
             "a value of the tagged type, or an untagged value");
      fail(info.value, info.path, "unsupported tag '" + tag + "'", "an untagged value");
    }
    return resolve_plain(s, info);
  }

  // YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1023-core-schema), section 10.3.2. Integers must fit in
  // 64 bits and floats in a double: anything beyond is a located error, never a silent change of value.
  Json resolve_plain(const std::string& s, const SourceNode& info) {
    static const std::regex null_re("~|null|Null|NULL|");
    static const std::regex bool_true("true|True|TRUE"), bool_false("false|False|FALSE");
    static const std::regex int_re("[-+]?[0-9]+"), oct_re("0o[0-7]+"), hex_re("0x[0-9a-fA-F]+");
    static const std::regex float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
    if (s.size() > 400) return s;  // no number is this long; a numeric field reports the text
    // Fast path: text that cannot start a null, a boolean or a number is a string.
    if (!s.empty() && !std::strchr("-+.0123456789~nNtTfF", s[0])) return s;
    if (std::regex_match(s, null_re)) return nullptr;
    if (std::regex_match(s, bool_true)) return true;
    if (std::regex_match(s, bool_false)) return false;
    int base = 0;
    std::string digits = s;
    if (std::regex_match(s, int_re))
      base = 10;
    else if (std::regex_match(s, oct_re))
      base = 8, digits = s.substr(2);
    else if (std::regex_match(s, hex_re))
      base = 16, digits = s.substr(2);
    if (base) {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(digits.c_str(), &end, base);
      if (errno == ERANGE)
        fail(info.value, info.path, "integer " + s + " out of range", "an integer within +-9,223,372,036,854,775,807");
      return static_cast<int64_t>(v);
    }
    if (std::regex_match(s, float_re)) {
      errno = 0;
      const double v = std::strtod(s.c_str(), nullptr);
      if (errno == ERANGE && std::isinf(v))
        fail(info.value, info.path, "number " + s + " out of range", "a number within +-1.8e308");
      return v;  // an underflow reads as the nearest double (0 or subnormal)
    }
    // Anything else, and .inf/.nan (which JSON cannot hold), stays text: a numeric field then reports it.
    return s;
  }

  SourceDoc& doc_;
  bool aliases_;
  std::string kind_;  ///< what the document is: recipe, catalog
  std::vector<YAML::Node> ancestors_;
  size_t values_ = 0;
};

/// yaml-cpp's parser messages, said in terms of what the user wrote.
std::string explain_parser_error(const std::string& msg) {
  if (msg.find("end of sequence flow not found") != std::string::npos)
    return "a '[' list that is never closed with ']' (the position is where the parser gave up)";
  if (msg.find("end of map flow not found") != std::string::npos)
    return "a '{' mapping that is never closed with '}' (the position is where the parser gave up)";
  if (msg.find("illegal map value") != std::string::npos)
    return "a 'key: value' where none can start (check this line's indentation against the lines above)";
  if (msg.find("end of map not found") != std::string::npos)
    return "a mapping that does not end where expected (check the indentation)";
  if (msg.find("unknown escape character") != std::string::npos)
    return "an unknown escape sequence in a double-quoted string (use single quotes, or escape the backslash)";
  if (msg.find("end of sequence not found") != std::string::npos)
    return "a '- item' list that does not end where expected (check the indentation)";
  return msg;
}

}  // namespace

const SourceNode* SourceDoc::node(const std::string& pointer) const {
  auto it = nodes.find(pointer);
  return it == nodes.end() ? nullptr : &it->second;
}

SourceMark SourceDoc::mark(const std::string& pointer) const {
  for (std::string p = pointer;; p = parent_of(p)) {
    if (const SourceNode* n = node(p)) return n->value;
    if (p.empty()) return {1, 1};
  }
}

SourceMark SourceDoc::key_mark(const std::string& pointer) const {
  if (const SourceNode* n = node(pointer)) return n->key;
  return mark(pointer);
}

std::string SourceDoc::path(const std::string& pointer) const {
  if (const SourceNode* n = node(pointer)) return n->path;
  if (pointer.empty()) return "";
  const std::string parent = path(parent_of(pointer));
  const std::string token = last_token(pointer);
  const Json::json_pointer jp(parent_of(pointer));
  const bool in_array = value.contains(jp) && value.at(jp).is_array();
  if (in_array) return parent + "[" + token + "]";
  return parent.empty() ? token : parent + "." + token;
}

Diagnostic SourceDoc::at(const std::string& pointer, std::string found, std::string expected) const {
  const SourceMark m = mark(pointer);
  return Diagnostic{file, m.line, m.column, path(pointer), std::move(found), std::move(expected)};
}

Diagnostic SourceDoc::at_key(const std::string& pointer, std::string found, std::string expected) const {
  const SourceMark m = key_mark(pointer);
  return Diagnostic{file, m.line, m.column, path(pointer), std::move(found), std::move(expected)};
}

namespace {

/// Line and column (1-based) of byte `offset` of `text`.
SourceMark mark_of_offset(const std::string& text, size_t offset) {
  SourceMark m{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n')
      ++m.line, m.column = 1;
    else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80)
      ++m.column;  // count characters, not bytes
  }
  return m;
}

/// Refuses text YAML cannot hold (YAML 1.2 section 5.1): invalid UTF-8 and C0 control characters other than
/// tab, line feed and carriage return (NUL included), and DEL. Located at the first offending byte.
void check_characters(const std::string& text, const std::string& file) {
  const size_t bad = first_invalid_utf8(text);
  size_t ctl = std::string::npos;
  for (size_t i = 0; i < text.size() && i < bad; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      ctl = i;
      break;
    }
  }
  const size_t at = std::min(bad, ctl);
  if (at == std::string::npos) return;
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[at]));
  const SourceMark m = mark_of_offset(text, at);
  if (at == bad)
    throw InputError(
        Diagnostic{file, m.line, m.column, "", std::string("byte ") + byte + " that is not UTF-8", "UTF-8 text"});
  throw InputError(Diagnostic{file, m.line, m.column, "", std::string("control character ") + byte,
                              "printable text (tab, line feed and carriage return are the only control characters "
                              "YAML allows; write others as \\x escapes in double quotes)"});
}

/// What a first pass over the parser's events tells before any node is built: where each document starts and
/// whether aliases are used. It also stops yaml-cpp 0.7's endless loop of empty documents on a ',' ']' or '}'
/// where no value can start (jbeder/yaml-cpp#1040, fixed upstream by PR #1319): a document that starts where the
/// previous one did, or an empty one at such a character, is a located error instead of another document.
class DocumentScan : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override { started_ = false; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { root(m, true); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override {
    root(m, false);
    aliases = true;
  }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override {
    root(m, false);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    root(m, false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    root(m, false);
  }
  void OnMapEnd() override {}

  std::vector<YAML::Mark> starts;  ///< where each document's root starts
  std::vector<bool> empty;         ///< whether each document's root is an empty (null) node
  bool aliases = false;

 private:
  void root(const YAML::Mark& m, bool null) {
    if (started_) return;
    started_ = true;
    starts.push_back(m);
    empty.push_back(null);
  }
  bool started_ = false;
};

/// Lone CR line ends (old Mac) as LF: YAML 1.2 takes CR as a line break (section 5.4) but yaml-cpp does not, and
/// would read the whole file as its first line. CRLF is left as it is.
std::string normalize_lone_cr(const std::string& text) {
  if (text.find('\r') == std::string::npos) return text;
  std::string out = text;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] == '\r' && (i + 1 == out.size() || out[i + 1] != '\n')) out[i] = '\n';
  return out;
}

/// Refuses flow collections ('[' and '{') nested more than kMaxDepth deep before yaml-cpp sees them: it queues a
/// token for every '[' (about 250 bytes each) before its own depth guard, so 16 MiB of '[' would cost 4 GB. Skips
/// quoted scalars and comments; a '[' inside a plain scalar may be counted, so only a 65th unclosed one can fail.
void check_flow_depth(const std::string& text, const std::string& file) {
  int depth = 0;
  auto token_start = [&](size_t i) {
    if (i == 0) return true;
    const char p = text[i - 1];
    return p == ' ' || p == '\t' || p == '\n' || p == '\r' || p == '[' || p == '{' || p == ',' || p == ':' || p == '-';
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#' && token_start(i) && (i == 0 || text[i - 1] != '-')) {
      while (i < text.size() && text[i] != '\n' && text[i] != '\r') ++i;
    } else if ((c == '"' || c == '\'') && token_start(i)) {
      for (++i; i < text.size(); ++i) {
        if (c == '"' && text[i] == '\\') {
          ++i;
        } else if (text[i] == c) {
          if (c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
            ++i;  // '' inside single quotes
            continue;
          }
          break;
        }
      }
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) {
        const SourceMark m = mark_of_offset(text, i);
        throw InputError(Diagnostic{file, m.line, m.column, "",
                                    "values nested more than " + std::to_string(kMaxDepth) + " levels deep",
                                    "at most " + std::to_string(kMaxDepth) + " levels"});
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

/// True when `text` holds nothing but blank lines, comments, document markers (---, ...) and BOMs: "an empty
/// file"; a document with a value that is null (`~`, a lone tag or anchor) is said otherwise (issue 33 kind 3).
bool blank_document(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    for (size_t bom; (bom = line.find("\xEF\xBB\xBF")) != std::string::npos;) line.erase(bom, 3);
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#') continue;
    const bool marker = line.compare(a, 3, "---") == 0 || line.compare(a, 3, "...") == 0;
    const size_t after = line.find_first_not_of(" \t\r", a + 3);
    if (marker && (after == std::string::npos || line[after] == '#')) continue;
    return false;
  }
  return true;
}

}  // namespace

SourceDoc parse_yaml(const std::string& raw, const std::string& file, const std::string& kind) {
  SourceDoc doc;
  doc.file = file;
  check_characters(raw, file);
  const std::string text = normalize_lone_cr(raw);
  check_flow_depth(text, file);
  YAML::Node root;
  DocumentScan scan;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(scan)) {
      const size_t n = scan.starts.size();
      if (n == 0) continue;
      const YAML::Mark& m = scan.starts.back();
      const bool stuck = n >= 2 && m.pos == scan.starts[n - 2].pos;
      const char at = m.pos >= 0 && static_cast<size_t>(m.pos) < text.size() ? text[m.pos] : '\0';
      if ((stuck || scan.empty.back()) && at && std::strchr(",]}", at)) {
        const SourceMark sm = to_mark(m);
        throw InputError(Diagnostic{file, sm.line, sm.column, "",
                                    std::string("malformed YAML: '") + at + "' where no value can start",
                                    "well-formed YAML"});
      }
      if (stuck) break;  // no progress: never loop
    }
    if (scan.starts.size() == 1) root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    const SourceMark m = to_mark(e.mark);
    throw InputError(Diagnostic{file, m.line, m.column, "",
                                "values nested more than " + std::to_string(kMaxDepth) + " levels deep",
                                "at most " + std::to_string(kMaxDepth) + " levels"});
  } catch (const YAML::Exception& e) {
    const SourceMark m = to_mark(e.mark);
    throw InputError(
        Diagnostic{file, m.line, m.column, "", "malformed YAML: " + explain_parser_error(e.msg), "well-formed YAML"});
  }
  if (scan.starts.empty() || (scan.starts.size() == 1 && root.IsNull()))
    throw InputError(Diagnostic{file, 1, 1, "",
                                blank_document(text) ? "an empty file" : "a document whose value is null",
                                "a YAML mapping of " + kind + " fields"});
  if (scan.starts.size() > 1) {
    const SourceMark m = to_mark(scan.starts[1]);
    throw InputError(Diagnostic{file, m.line, m.column, "", std::to_string(scan.starts.size()) + " YAML documents",
                                "exactly one document per file"});
  }
  if (!root.IsMap()) {
    const SourceMark m = to_mark(root.Mark());
    throw InputError(Diagnostic{file, m.line ? m.line : 1, m.column ? m.column : 1, "",
                                "a top level that is not a mapping", "a YAML mapping of " + kind + " fields"});
  }
  Converter conv(doc, scan.aliases, kind);
  doc.value = conv.convert(root, "", "", {});
  doc.text = text;
  return doc;
}

SourceDoc load_yaml_file(const std::string& file) {
  std::string text;
  try {
    text = read_input_file(file);
  } catch (const InputFileError& e) {
    std::error_code ec;
    const bool folder = std::filesystem::is_directory(file, ec);  // an unreadable folder of a folder walk
    throw InputError(Diagnostic{file, 0, 0, "", e.what(), folder ? "a readable folder" : "a readable YAML file"});
  }
  return parse_yaml(text, file);
}

}  // namespace recipebench
