#include "recipe/source_doc.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace recipebench {

std::string pointer_append(const std::string& pointer, const std::string& token) {
  std::string out = pointer + "/";
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
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

class Converter {
 public:
  explicit Converter(SourceDoc& doc) : doc_(doc) {}

  Json convert(const YAML::Node& n, const std::string& pointer, const std::string& path, SourceMark key) {
    SourceNode info;
    info.path = path;
    info.value = to_mark(n.Mark());
    info.key = key.line ? key : info.value;
    Json out;
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out = nullptr;
        info.plain = true;
        break;
      case YAML::NodeType::Scalar:
        info.text = n.Scalar();
        info.plain = n.Tag() == "?";
        out = scalar(n, info);
        break;
      case YAML::NodeType::Sequence: {
        out = Json::array();
        size_t i = 0;
        for (const auto& item : n) {
          out.push_back(convert(item, pointer_append(pointer, std::to_string(i)), path + "[" + std::to_string(i) + "]", {}));
          ++i;
        }
        break;
      }
      case YAML::NodeType::Map: {
        out = Json::object();
        for (auto it = n.begin(); it != n.end(); ++it) {
          const YAML::Node& k = it->first;
          if (!k.IsScalar())
            fail(to_mark(k.Mark()), path, "a non-scalar key", "a plain field name");
          const std::string name = k.Scalar();
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
        break;
      }
    }
    doc_.nodes[pointer] = info;
    return out;
  }

 private:
  [[noreturn]] void fail(SourceMark m, const std::string& path, const std::string& found, const std::string& expected) {
    throw InputError(Diagnostic{doc_.file, m.line, m.column, path, found, expected});
  }

  Json scalar(const YAML::Node& n, const SourceNode& info) {
    const std::string& s = info.text;
    const std::string& tag = n.Tag();
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return s;  // quoted or block scalar, or !!str
    if (tag != "?") {
      if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" || tag == "tag:yaml.org,2002:bool" ||
          tag == "tag:yaml.org,2002:null") {
        Json v = resolve_plain(s);
        return v;
      }
      fail(info.value, info.path, "unsupported tag '" + tag + "'", "an untagged value");
    }
    return resolve_plain(s);
  }

  // YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1023-core-schema), section 10.3.2.
  static Json resolve_plain(const std::string& s) {
    static const std::regex null_re("~|null|Null|NULL|");
    static const std::regex bool_true("true|True|TRUE"), bool_false("false|False|FALSE");
    static const std::regex int_re("[-+]?[0-9]+"), oct_re("0o[0-7]+"), hex_re("0x[0-9a-fA-F]+");
    static const std::regex float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
    if (std::regex_match(s, null_re)) return nullptr;
    if (std::regex_match(s, bool_true)) return true;
    if (std::regex_match(s, bool_false)) return false;
    try {
      if (std::regex_match(s, int_re)) return static_cast<int64_t>(std::stoll(s));
      if (std::regex_match(s, oct_re)) return static_cast<int64_t>(std::stoll(s.substr(2), nullptr, 8));
      if (std::regex_match(s, hex_re)) return static_cast<int64_t>(std::stoll(s.substr(2), nullptr, 16));
    } catch (const std::out_of_range&) {
      return std::stod(s);
    }
    if (std::regex_match(s, float_re)) return std::stod(s);
    // Anything else, and .inf/.nan (which JSON cannot hold), stays text: a numeric field then reports it.
    return s;
  }

  SourceDoc& doc_;
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

SourceDoc parse_yaml(const std::string& text, const std::string& file) {
  SourceDoc doc;
  doc.file = file;
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    const SourceMark m = to_mark(e.mark);
    throw InputError(Diagnostic{file, m.line, m.column, "", "malformed YAML: " + explain_parser_error(e.msg),
                                "well-formed YAML"});
  }
  if (docs.empty() || (docs.size() == 1 && docs[0].IsNull()))
    throw InputError(Diagnostic{file, 1, 1, "", "an empty file", "a YAML mapping of recipe fields"});
  if (docs.size() > 1) {
    const SourceMark m = to_mark(docs[1].Mark());
    throw InputError(Diagnostic{file, m.line, m.column, "", std::to_string(docs.size()) + " YAML documents",
                                "exactly one document per file"});
  }
  if (!docs[0].IsMap()) {
    const SourceMark m = to_mark(docs[0].Mark());
    throw InputError(Diagnostic{file, m.line ? m.line : 1, m.column ? m.column : 1, "",
                                "a top level that is not a mapping", "a YAML mapping of recipe fields"});
  }
  Converter conv(doc);
  doc.value = conv.convert(docs[0], "", "", {});
  return doc;
}

SourceDoc load_yaml_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(Diagnostic{file, 0, 0, "", "a file that cannot be read", "a readable YAML file"});
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_yaml(ss.str(), file);
}

}  // namespace recipebench
