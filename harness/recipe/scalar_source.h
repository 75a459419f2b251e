// Where each character of a YAML scalar's value is written in its file: a literal (|) or folded (>) block, a
// double- or single-quoted or a plain scalar, each folded and unescaped by its own rules (YAML 1.2 chapters 7-8), so a
// position inside the value (a flag of a `run:` command) can be named by its file line (docs/launch-check.md).
#pragma once

#include <string>
#include <vector>

#include "recipe/source_doc.h"

namespace recipebench {

/// The file position of every byte of the string scalar at `pointer` of `doc` (one SourceMark per byte of the
/// value; a character produced by an escape or a folded line break is marked where the escape or the line break
/// is written). Empty when there is no such string scalar, when `doc` does not hold the text it was parsed from, or
/// when retracing the scalar's text by its style does not give the value back (a form this reader does not follow,
/// such as an alias): then no position inside the value is known. Never throws.
std::vector<SourceMark> scalar_source_marks(const SourceDoc& doc, const std::string& pointer);

/// The same for a scalar whose first character (its quote, block indicator or first plain character) is at byte
/// `start` of `text`, inside a block mapping indented `parent_indent` columns, whose parsed value is `value`.
std::vector<SourceMark> scalar_source_marks(const std::string& text, size_t start, int parent_indent,
                                            const std::string& value);

}  // namespace recipebench
