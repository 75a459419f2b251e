#include "recipe/schema_check.h"
#include "recipe/schema_ref.h"
#include "util/format.h"

#include <rapidjson/document.h>
#include <rapidjson/schema.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace recipebench {

extern const char* const kRecipeSchemaYaml;  // generated from schema/recipe.schema.yaml

const Json& recipe_schema() {
  static const Json schema = parse_yaml(kRecipeSchemaYaml, "schema/recipe.schema.yaml").value;
  return schema;
}

namespace {

std::string type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::string:
      return "string";
    case Json::value_t::array:
      return "array";
    case Json::value_t::object:
      return "mapping";
    default:
      return "value";
  }
}

/// Short rendering of a value as the user wrote it.
std::string show(const Json& v, const SourceNode* n) {
  if (v.is_object()) return "a mapping";
  if (v.is_array()) return "a list of " + std::to_string(v.size()) + (v.size() == 1 ? " item" : " items");
  if (n && !n->text.empty()) return v.is_string() ? "'" + n->text + "'" : n->text;
  if (v.is_string()) return "'" + v.get<std::string>() + "'";
  return v.dump();
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string json_type_word(const std::string& t) { return t == "object" ? "mapping" : t == "array" ? "list" : t; }

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string stringify(const rapidjson::GenericPointer<rapidjson::Value>& p) {
  rapidjson::StringBuffer sb;
  p.Stringify(sb);
  return std::string(sb.GetString(), sb.GetSize());  // a token may hold a NUL (a key written "t\0p")
}

/// A schema description as the tail of a message: first letter lower-case, no final period.
std::string sentence(std::string s) {
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s.size() > 1 && std::isupper(static_cast<unsigned char>(s[0])) && !std::isupper(static_cast<unsigned char>(s[1])))
    s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

/// True when the object at `object_ptr` in `doc` has member `name`.
bool node_value_has(const Json& doc, const std::string& object_ptr, const std::string& name) {
  const Json& o = doc.at(Json::json_pointer(object_ptr));
  return o.is_object() && o.contains(name);
}

bool matches_pattern_properties(const Json& schema, const std::string& key) {
  if (!schema.contains("patternProperties")) return false;
  for (const auto& [pattern, _] : schema["patternProperties"].items()) {
    // Patterns used by our schemas are prefix or whole-name patterns; std::regex is ECMAScript like JSON Schema.
    if (std::regex_search(key, std::regex(pattern))) return true;
  }
  return false;
}

/// The schema that governs the document node at `pointer`, found by walking properties, patternProperties
/// and items from the root (following $refs). nullptr when no schema describes it.
Json* schema_for(Json& root, const Json& doc, const std::string& pointer) {
  Json* cur = &resolve_schema_ref(root, root);
  const Json* node = &doc;
  size_t pos = 0;
  while (pos < pointer.size()) {
    const size_t next = pointer.find('/', pos + 1);
    const std::string token =
        pointer_unescape(pointer.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1));
    pos = next == std::string::npos ? pointer.size() : next;
    Json* child = nullptr;
    if (node->is_array()) {
      if (cur->contains("items")) child = &(*cur)["items"];
      node = &(*node)[std::stoul(token)];
    } else {
      if (cur->contains("properties") && (*cur)["properties"].contains(token))
        child = &(*cur)["properties"][token];
      else if (cur->contains("patternProperties"))
        for (auto& [pattern, sub] : (*cur)["patternProperties"].items())
          if (std::regex_search(token, std::regex(pattern))) child = &sub;
      node = node->contains(token) ? &(*node)[token] : node;
    }
    if (!child) return nullptr;
    cur = &resolve_schema_ref(root, *child);
  }
  return cur;
}

/// The expected text of a violation of `keyword` by `node_value` (`failed`: the schema that failed; `alternatives`:
/// the schema holding a oneOf/anyOf list), in words; prefixes `found` with the value's type where that helps.
/// A plain YAML scalar that JSON cannot hold as a number stays text: what it is, instead of "string" (.nan, .inf,
/// an integer beyond 64 bits); `found` unchanged otherwise.
void describe_plain_text(const SourceNode& node, std::string& found) {
  const std::string& t = node.text;
  const bool digits =
      t.size() > 1 && t.find_first_not_of("0123456789", t[0] == '-' || t[0] == '+') == std::string::npos;
  const std::string lower = ascii_lower(t);
  if (lower == ".nan")
    found = "'" + t + "' (NaN: not a number)";
  else if (lower == ".inf" || lower == "+.inf" || lower == "-.inf")
    found = "'" + t + "' (an infinity)";
  else if (digits)
    found = "an integer of " + std::to_string(t.size()) + " characters (beyond 64 bits)";
}

/// The expected side of a `type` violation (and `found` with its type), with the quoting advice for a plain scalar
/// YAML read as another type where a string is wanted.
std::string describe_type_violation(const Json& failed, const Json& node_value, const SourceNode* node,
                                    std::string& found) {
  std::vector<std::string> types;
  if (failed["type"].is_array())
    for (const auto& t : failed["type"]) types.push_back(json_type_word(t.get<std::string>()));
  else
    types.push_back(json_type_word(failed["type"].get<std::string>()));
  if (!node_value.is_null() && !node_value.is_structured()) found = type_name(node_value) + " " + found;
  if (node && node->plain && node_value.is_string()) describe_plain_text(*node, found);
  const bool wants_string = std::find(types.begin(), types.end(), "string") != types.end();
  if (wants_string && node && node->plain && (node_value.is_number() || node_value.is_boolean()))
    return "a string: quote it ('" + node->text + "') so YAML does not read it as a " + type_name(node_value);
  return join(types, " or ");
}

std::string describe_violation(const std::string& keyword, const Json& failed, Json& alternatives, Json& schema,
                               const std::string& schema_ptr, const Json& node_value, const SourceNode* node,
                               std::string& found) {
  std::string expected;
  if (keyword == "type") {
    expected = describe_type_violation(failed, node_value, node, found);
  } else if (keyword == "enum") {
    std::vector<std::string> options;
    for (const auto& e : failed["enum"]) options.push_back(e.is_string() ? e.get<std::string>() : e.dump());
    expected = "one of " + join(options, ", ");
  } else if ((keyword == "minimum" || keyword == "maximum") && failed.contains("x-range")) {
    expected = failed["x-range"].get<std::string>();  // a physical range stated with its unit (catalog figures)
  } else if (keyword == "minimum") {
    const bool excl = failed.value("exclusiveMinimum", false);
    expected = std::string(excl ? "a value > " : "a value >= ") + failed["minimum"].dump();
  } else if (keyword == "maximum") {
    const bool excl = failed.value("exclusiveMaximum", false);
    expected = std::string(excl ? "a value < " : "a value <= ") + failed["maximum"].dump();
  } else if (keyword == "pattern") {
    expected = failed.contains("description") ? sentence(failed["description"].get<std::string>())
                                              : "text matching " + failed["pattern"].get<std::string>();
  } else if (keyword == "maxLength") {  // the text itself is not repeated: it is the problem (up to 16 MiB)
    size_t code_points = 0;  // RapidJSON's maxLength counts code points
    for (const char c : node_value.is_string() ? node_value.get_ref<const std::string&>() : std::string())
      code_points += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    found = "a string of " + counted(static_cast<int64_t>(code_points), "character");
    expected = failed.contains("x-range") ? failed["x-range"].get<std::string>()  // the limit stated with its why
                                          : "at most " + counted(failed["maxLength"].get<int64_t>(), "character");
  } else if (keyword == "minLength") {
    expected = "at least " + failed["minLength"].dump() + " characters";
  } else if (keyword == "minItems") {
    expected = "at least " + counted(failed["minItems"].get<int64_t>(), "item");
  } else if (keyword == "maxItems") {
    expected = "at most " + counted(failed["maxItems"].get<int64_t>(), "item");
  } else if (keyword == "multipleOf") {
    expected = "a multiple of " + failed["multipleOf"].dump();
  } else if (keyword == "oneOf" || keyword == "anyOf") {
    std::vector<std::string> forms;
    for (auto& alt : alternatives[keyword]) {
      const Json& a = resolve_schema_ref(schema, alt);
      forms.push_back(a.contains("type")
                          ? (a["type"].is_string() ? json_type_word(a["type"].get<std::string>()) : a["type"].dump())
                          : a.value("description", "a schema"));
    }
    if (!node_value.is_null() && !node_value.is_structured()) found = type_name(node_value) + " " + found;
    expected = "one of these forms: " + join(forms, "; ");
  } else {
    expected = "a value satisfying '" + keyword + "' of the schema at " + schema_ptr;
  }
  return expected;
}

/// One check()'s working state: the diagnostics so far and the private copies it repairs between rounds.
struct CheckState {
  CheckState(const SourceDoc& source, const Json& schema_json)
      : doc(source), value(source.value), schema(schema_json) {}

  const SourceDoc& doc;
  Json value;   // repaired as violations are reported
  Json schema;  // `required` relaxed as missing fields are reported
  Diagnostics out;
  std::set<std::string> reported;
  std::set<std::string> removed;    // pointers of members removed after a report: not "missing" afterwards
  std::set<std::string> suggested;  // members named by a "did you mean" hint: their absence is the same problem
  bool schema_relaxed = false;      // a `required` list of `schema` was changed: compile the copy

  /// Adds `found_problem` unless the same path and found text were reported already.
  void report(Diagnostic found_problem) {
    const std::string key = found_problem.path + "|" + found_problem.found;
    if (reported.insert(key).second) out.push_back(std::move(found_problem));
  }
};

/// The first violation RapidJSON finds in one round: the keyword and where it is in the document and the schema.
struct Violation {
  std::string keyword;
  std::string doc_ptr;
  std::string schema_ptr;
  Json node_value;
  const SourceNode* node = nullptr;
};

/// Validates `st.value` against `schema_doc`; the first violation, or nothing when the value is valid.
std::optional<Violation> first_violation(const rapidjson::SchemaDocument& schema_doc, const CheckState& st) {
  rapidjson::Document d;
  const std::string text = st.value.dump();
  d.Parse(text.data(), text.size());
  rapidjson::SchemaValidator validator(schema_doc);
  if (d.Accept(validator)) return std::nullopt;
  Violation v;
  v.keyword = validator.GetInvalidSchemaKeyword();
  v.doc_ptr = stringify(validator.GetInvalidDocumentPointer());
  v.schema_ptr = stringify(validator.GetInvalidSchemaPointer());
  v.node_value = st.value.at(Json::json_pointer(v.doc_ptr));
  v.node = st.doc.node(v.doc_ptr);
  return v;
}

/// The expected text for missing member `name` of the object whose schema is `here`: its enum and description.
std::string missing_field_expected(Json& schema, Json& here, const std::string& name) {
  std::string expected = "a value";
  if (!here.contains("properties") || !here["properties"].contains(name)) return expected;
  Json& prop = here["properties"][name];
  const Json& target = resolve_schema_ref(schema, prop);
  if (target.contains("enum")) {
    std::vector<std::string> options;
    for (const auto& e : target["enum"]) options.push_back(e.is_string() ? e.get<std::string>() : e.dump());
    expected = "one of " + join(options, ", ");
  }
  const std::string desc = prop.value("description", target.value("description", std::string()));
  if (!desc.empty()) expected += " (" + sentence(desc) + ")";
  return expected;
}

/// A `required` violation: reports each missing member (unless removed or suggested earlier) and relaxes the
/// list in `st.schema`. True when a member was missing.
bool report_missing(CheckState& st, Json& here, const Violation& v) {
  bool repaired = false;
  Json& req = here["required"];
  Json kept = Json::array();
  for (const auto& name : req) {
    const std::string n = name.get<std::string>();
    if (!v.node_value.is_object() || v.node_value.contains(n)) {
      kept.push_back(name);
      continue;
    }
    repaired = true;
    const std::string missing = pointer_append(v.doc_ptr, n);
    if (st.removed.count(missing) || st.suggested.count(missing)) continue;
    const std::string expected = missing_field_expected(st.schema, here, n);
    // Located at the key of the mapping that lacks the field (the file's start for a top-level field).
    const SourceMark m = v.doc_ptr.empty() ? SourceMark{1, 1} : st.doc.key_mark(v.doc_ptr);
    st.report(Diagnostic{st.doc.file, m.line, m.column, st.doc.path(missing), "missing required field '" + n + "'",
                         expected});
  }
  req = kept;
  st.schema_relaxed = true;
  return repaired;
}

/// Unknown fields: reports each with the known names (and a "did you mean" hint) and removes it from `st.value`.
/// With `additionalProperties: false` the error points at the object; with the `{$ref: noField}` form (see the
/// schema's header) it points at the unknown member itself. True when a member was removed.
bool report_unknown(CheckState& st, Json& here, const Violation& v) {
  // The validator may point an additionalProperties violation at the member rather than at its object (a number
  // under optimizer_sharding: found by the fuzzer, issue 33): a node that is not an object is the member.
  const bool at_member = v.keyword == "not" || !v.node_value.is_object();
  const std::string object_ptr = at_member ? v.doc_ptr.substr(0, v.doc_ptr.rfind('/')) : v.doc_ptr;
  const Json* object_schema = at_member ? schema_for(st.schema, st.value, object_ptr) : &here;
  std::vector<std::string> known;
  if (object_schema && object_schema->contains("properties"))
    for (const auto& [k, _] : (*object_schema)["properties"].items()) known.push_back(k);
  std::vector<std::string> unknown;
  if (at_member) {
    unknown.push_back(pointer_unescape(v.doc_ptr.substr(v.doc_ptr.rfind('/') + 1)));
  } else {
    for (const auto& [k, _] : v.node_value.items())
      if (std::find(known.begin(), known.end(), k) == known.end() && !matches_pattern_properties(here, k))
        unknown.push_back(k);
  }
  for (const auto& k : unknown) {
    std::string hint;
    for (const auto& cand : known)
      if (hint.empty() && edit_distance(k, cand) <= 2 && !node_value_has(st.value, object_ptr, cand)) {
        hint = "'" + cand + "' (did you mean it?), or ";
        st.suggested.insert(pointer_append(object_ptr, cand));
      }
    st.report(st.doc.at_key(pointer_append(object_ptr, k), "unknown field '" + k + "'",
                            hint + "one of " + join(known, ", ") + ", or a custom field named x-..."));
    st.value.at(Json::json_pointer(object_ptr)).erase(k);
    st.removed.insert(pointer_append(object_ptr, k));
  }
  return !unknown.empty();
}

/// Drops the node at `doc_ptr` (not the document itself) from the private copy of the value and remembers it as
/// removed, so the next round does not report it again. Always true (the check goes on).
bool remove_node(CheckState& st, const std::string& doc_ptr) {
  const auto slash = doc_ptr.rfind('/');
  Json& parent = st.value.at(Json::json_pointer(doc_ptr.substr(0, slash)));
  const std::string token = pointer_unescape(doc_ptr.substr(slash + 1));
  if (parent.is_object())
    parent.erase(token);
  else
    parent.erase(std::stoul(token));
  st.removed.insert(doc_ptr);
  return true;
}

/// Any other violation: reports it (found and expected in words), then drops the offending node from `st.value`
/// so the next round finds the next problem. True when a node was dropped (never the document's root).
bool report_invalid(CheckState& st, Json& here, const Violation& v) {
  std::string keyword = v.keyword;
  // A list whose bad items were reported and dropped is not also "a list of N items" (it holds more than that):
  // dropped silently, the item errors say what is wrong.
  if ((keyword == "minItems" || keyword == "maxItems") && !v.doc_ptr.empty()) {
    const auto it = st.removed.lower_bound(v.doc_ptr + "/");
    if (it != st.removed.end() && it->rfind(v.doc_ptr + "/", 0) == 0) {
      return remove_node(st, v.doc_ptr);
    }
  }
  std::string found = show(v.node_value, v.node);
  Json* failed = &here;
  if (keyword == "patternProperties") {  // a member matched a pattern and failed its schema: describe that
    if (Json* own = schema_for(st.schema, st.value, v.doc_ptr)) {
      failed = own;
      if (own->contains("type")) keyword = "type";
    }
  }
  const std::string expected =
      describe_violation(keyword, *failed, *failed, st.schema, v.schema_ptr, v.node_value, v.node, found);
  st.report(st.doc.at(v.doc_ptr, found, expected));
  if (v.doc_ptr.empty()) return false;
  return remove_node(st, v.doc_ptr);
}

/// Reports violation `v` and repairs the private copies in `st` so the next round can find the next one.
/// False when nothing could be repaired (the check stops).
bool report_and_repair(CheckState& st, const Violation& v) {
  Json& here = resolve_schema_ref(st.schema, st.schema.at(Json::json_pointer(v.schema_ptr)));
  if (v.keyword == "required") return report_missing(st, here, v);
  if (v.keyword == "additionalProperties" || (v.keyword == "not" && v.schema_ptr == "/definitions/noField"))
    return report_unknown(st, here, v);
  return report_invalid(st, here, v);
}

}  // namespace

struct SchemaChecker::Compiled {
  explicit Compiled(const Json& schema) {
    document.Parse(schema.dump().c_str());
    schema_document = std::make_unique<rapidjson::SchemaDocument>(document);
  }
  rapidjson::Document document;
  std::unique_ptr<rapidjson::SchemaDocument> schema_document;
};

SchemaChecker::SchemaChecker(Json schema) : schema_(std::move(schema)) {
  if (!schema_.is_object()) throw std::invalid_argument("a JSON Schema must be an object");
  compiled_ = std::make_unique<Compiled>(schema_);
}

SchemaChecker::~SchemaChecker() = default;

Diagnostics SchemaChecker::check(const SourceDoc& doc, size_t max_errors) const {
  CheckState st(doc, schema_);
  for (size_t round = 0; round < 4 * max_errors && st.out.size() < max_errors; ++round) {
    // The schema compiled once; a copy only after a `required` list was relaxed (rare: a missing field).
    std::unique_ptr<Compiled> relaxed;
    if (st.schema_relaxed) relaxed = std::make_unique<Compiled>(st.schema);
    const std::optional<Violation> v = first_violation(*(relaxed ? relaxed : compiled_)->schema_document, st);
    if (!v || !report_and_repair(st, *v)) break;
  }
  std::stable_sort(st.out.begin(), st.out.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  return st.out;
}

}  // namespace recipebench
