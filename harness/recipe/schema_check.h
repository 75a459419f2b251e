// JSON Schema (draft-04) validation of loaded YAML documents, with located, readable messages.
#pragma once

#include <memory>
#include <string>

#include "recipe/diagnostic.h"
#include "recipe/source_doc.h"
#include "util/json.h"

namespace recipebench {

/// Validates documents against one JSON Schema (draft-04) with RapidJSON's SchemaValidator.
/// RapidJSON 1.1.0 stops at the first violation; check() reports it, then removes the offending node
/// (or relaxes the violated `required` list) in private copies and validates again, so one pass
/// reports up to `max_errors` distinct problems.
class SchemaChecker {
 public:
  /// `schema` is the schema as a JSON value. Throws std::invalid_argument when it is not an object.
  explicit SchemaChecker(Json schema);
  ~SchemaChecker();

  /// Every schema violation of `doc`, located at the offending node (or its key / parent object).
  Diagnostics check(const SourceDoc& doc, size_t max_errors = 20) const;

 private:
  struct Compiled;  // the schema compiled once for RapidJSON (rebuilt in check() only after `required` is relaxed)
  Json schema_;
  std::unique_ptr<Compiled> compiled_;
};

/// The recipe schema, schema/recipe.schema.yaml, embedded at build time and parsed once.
const Json& recipe_schema();

}  // namespace recipebench
