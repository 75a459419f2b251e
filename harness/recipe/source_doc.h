// YAML documents loaded into a JSON value that remembers where every node came from (file:line:col).
#pragma once

#include <map>
#include <string>

#include "recipe/diagnostic.h"
#include "util/json.h"

namespace recipebench {

/// Where a node starts in its file; 1-based; 0 = unknown.
struct SourceMark {
  int line = 0;
  int column = 0;
};

/// What the loader remembers of one node, keyed by its JSON pointer ("" is the root, "/layout/tp").
struct SourceNode {
  std::string path;    ///< dotted field path: "layout.tp", "result.window[1]"; "" for the root
  SourceMark value;    ///< where the value starts
  SourceMark key;      ///< where its key starts (object members only; else == value)
  std::string text;    ///< scalar text as written (e.g. "1075.50"), empty for collections
  bool plain = false;  ///< a plain (unquoted) scalar
};

/// A YAML file as a JSON value plus the source position of every node.
/// Typing follows the YAML 1.2 core schema: quoted scalars are strings; plain scalars are null
/// (~, null, empty), booleans (true/false), integers (decimal, 0o, 0x), floats (1.5, 1e-3, .inf, .nan)
/// or strings. So quoted '12.9' is a string and plain 12.9 a number; a plain 2026-10-18 is a string.
struct SourceDoc {
  std::string file;
  Json value;
  std::map<std::string, SourceNode> nodes;
  std::string text;  ///< the YAML text the document was parsed from (lone CRs as LFs); empty when not from text

  /// The node at `pointer`, or nullptr.
  const SourceNode* node(const std::string& pointer) const;
  /// Location of the value at `pointer`, or of its nearest ancestor that exists.
  SourceMark mark(const std::string& pointer) const;
  /// Location of the key of member `pointer` (falls back to mark()).
  SourceMark key_mark(const std::string& pointer) const;
  /// Dotted field path for a pointer; works for pointers to missing members too.
  std::string path(const std::string& pointer) const;
  /// A diagnostic located at the value of `pointer`.
  Diagnostic at(const std::string& pointer, std::string found, std::string expected) const;
  /// A diagnostic located at the key of member `pointer`.
  Diagnostic at_key(const std::string& pointer, std::string found, std::string expected) const;
};

/// Parses YAML text (one document, a mapping at the top). `file` names it in diagnostics.
/// Throws InputError (located) on malformed YAML, an empty document, several documents, a top level
/// that is not a mapping, duplicate keys, non-scalar keys or unsupported tags. `kind` names what the document is in
/// those messages ("a YAML mapping of catalog fields", "at most 10000 values in a catalog").
SourceDoc parse_yaml(const std::string& text, const std::string& file, const std::string& kind = "recipe");

/// Reads and parses a YAML file. Throws InputError when it cannot be read or parsed (see parse_yaml).
SourceDoc load_yaml_file(const std::string& file);

/// Appends one reference token to a JSON pointer, escaping '~' and '/' (RFC 6901).
std::string pointer_append(const std::string& pointer, const std::string& token);

/// Unescapes one JSON pointer reference token: "~1" -> "/", "~0" -> "~" (RFC 6901).
std::string pointer_unescape(const std::string& token);

}  // namespace recipebench
