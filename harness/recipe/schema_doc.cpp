#include "recipe/schema_doc.h"
#include "recipe/schema_ref.h"

#include <algorithm>
#include <sstream>
#include <vector>

namespace recipebench {

namespace {

std::string type_text(const Json& root, const Json& s) {
  const Json& d = resolve_schema_ref(root, s);
  std::string t;
  if (d.contains("enum")) {
    std::vector<std::string> opts;
    for (const auto& e : d["enum"])
      opts.push_back(e.is_string() ? "`" + e.get<std::string>() + "`" : "`" + e.dump() + "`");
    std::string s2 = "one of ";
    for (size_t i = 0; i < opts.size(); ++i) s2 += (i ? ", " : "") + opts[i];
    return s2;
  }
  if (d.contains("type")) {
    if (d["type"].is_array()) {
      for (const auto& x : d["type"]) t += (t.empty() ? "" : " or ") + x.get<std::string>();
    } else {
      t = d["type"].get<std::string>();
    }
  } else if (d.contains("oneOf") || d.contains("anyOf")) {
    const Json& alts = d.contains("oneOf") ? d["oneOf"] : d["anyOf"];
    for (const auto& a : alts) t += (t.empty() ? "" : " or ") + type_text(root, a);
  } else {
    t = "any";
  }
  if (t == "object") t = "mapping";
  if (t == "array") {
    t = "list";
    if (d.contains("items")) t += " of " + type_text(root, d["items"]);
  }
  if (d.contains("minimum"))
    t += std::string(d.value("exclusiveMinimum", false) ? ", > " : ", >= ") + d["minimum"].dump();
  if (d.contains("maximum"))
    t += std::string(d.value("exclusiveMaximum", false) ? ", < " : ", <= ") + d["maximum"].dump();
  if (d.contains("minItems") && d.contains("maxItems") && d["minItems"] == d["maxItems"])
    t += ", exactly " + d["minItems"].dump() + " items";
  if (d.contains("pattern")) t += ", matching `" + d["pattern"].get<std::string>() + "`";
  return t;
}

std::string cell(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

void table(std::ostringstream& o, const Json& root, const Json& object_schema, const std::string& path,
           const std::string& description) {
  const Json& d = resolve_schema_ref(root, object_schema);
  if (!d.contains("properties")) return;
  o << "\n## " << (path.empty() ? "Top level" : "`" + path + "`") << "\n\n";
  if (!description.empty()) o << cell(description) << "\n\n";
  o << "| field | type | required | description |\n|---|---|---|---|\n";
  std::vector<std::string> required;
  if (d.contains("required"))
    for (const auto& r : d["required"]) required.push_back(r.get<std::string>());
  std::vector<std::pair<std::string, const Json*>> nested;
  for (const auto& [name, prop] : d["properties"].items()) {
    const std::string field = path.empty() ? name : path + "." + name;
    const Json& target = resolve_schema_ref(root, prop);
    const std::string desc = prop.contains("description") ? prop["description"].get<std::string>()
                                                          : target.value("description", std::string());
    const bool req = std::find(required.begin(), required.end(), name) != required.end();
    o << "| `" << field << "` | " << cell(type_text(root, prop)) << " | " << (req ? "yes" : "no") << " | " << cell(desc)
      << " |\n";
    if (target.contains("properties"))
      nested.emplace_back(field, &prop);
    else if (target.contains("items") && resolve_schema_ref(root, target["items"]).contains("properties"))
      nested.emplace_back(field + "[]", &target["items"]);
    else if (target.contains("oneOf") || target.contains("anyOf"))
      for (const auto& alt : target.contains("oneOf") ? target["oneOf"] : target["anyOf"])
        if (resolve_schema_ref(root, alt).contains("properties")) nested.emplace_back(field, &alt);
  }
  for (const auto& [field, s] : nested) {
    const Json& t = resolve_schema_ref(root, *s);
    table(o, root, *s, field, t.value("description", std::string()));
  }
}

}  // namespace

std::string schema_markdown(const Json& schema) {
  std::ostringstream o;
  o << "# Recipe format\n\n"
    << "<!-- Generated from schema/recipe.schema.yaml by `scripts/gen-docs`; a test fails when this file is stale. "
       "-->\n\n"
    << cell(schema.value("description", std::string())) << "\n\n"
    << "A recipe is one YAML file. Typing follows the YAML 1.2 core schema: quoted `'12.9'` is a string, plain "
       "`12.9` a number, a plain `2026-10-18` a string. Every mapping is closed: a key it does not define is an "
       "error, except keys starting with `x-`, which are the way to add custom fields. `recipebench validate` "
       "checks this schema first, then the layout arithmetic and the result figures (docs/metrics.md). Anchors and "
       "aliases work; a merge key (`<<: *defaults`, YAML 1.1) adds the merged mapping's fields the mapping does not "
       "give itself, and errors in them point at the merged source. Limits: UTF-8 text without control characters "
       "other than tab and line ends, at most 16 MiB, 64 levels of nesting and 10,000 values after aliases are "
       "expanded; integers fit 64 bits and floats a double (docs/fuzzing.md).\n";
  table(o, schema, schema, "", "");
  return o.str();
}

}  // namespace recipebench
