#include "recipe/yaml_write.h"

#include <algorithm>

#include <yaml-cpp/yaml.h>

namespace recipebench {

namespace {

bool scalar(const Json& j) { return !j.is_object() && !j.is_array(); }

void emit(YAML::Emitter& out, const Json& j) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, value] : j.items()) {
      out << YAML::Key << key << YAML::Value;
      emit(out, value);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    const bool flow = std::all_of(j.begin(), j.end(), scalar);
    if (flow) out << YAML::Flow;
    out << YAML::BeginSeq;
    for (const Json& v : j) emit(out, v);
    out << YAML::EndSeq;
  } else if (j.is_null()) {
    out << YAML::Null;
  } else if (j.is_string()) {
    out << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_boolean()) {
    out << j.get<bool>();
  } else {
    out << j.dump();  // numbers as JSON prints them (integers exact, doubles shortest round trip)
  }
}

}  // namespace

std::string yaml_text(const Json& doc) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit(out, doc);
  return std::string(out.c_str()) + "\n";
}

}  // namespace recipebench
