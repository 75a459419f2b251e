#include "recipe/recipe_edit.h"

#include <vector>

#include "recipe/diagnostic.h"
#include "recipe/source_doc.h"
#include "recipe/yaml_write.h"

namespace recipebench {

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      out.push_back(text.substr(start));
      break;
    }
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

/// Leading spaces of a line; npos for a blank line or a comment line (they belong to no block).
size_t indent_of(const std::string& line) {
  const size_t i = line.find_first_not_of(' ');
  if (i == std::string::npos || line[i] == '#' || line[i] == '\r') return std::string::npos;
  return i;
}

/// The index one past the last line of the block whose key is on line `key_line` (0-based) at indentation `indent`:
/// the lines after it indented deeper, trailing blank and comment lines left outside.
size_t block_end(const std::vector<std::string>& lines, size_t key_line, size_t indent) {
  size_t end = key_line + 1;
  for (size_t i = key_line + 1; i < lines.size(); ++i) {
    const size_t in = indent_of(lines[i]);
    if (in == std::string::npos) continue;
    if (in <= indent) break;
    end = i + 1;
  }
  return end;
}

/// `yaml` (one mapping, block style) with every line indented by `indent` spaces.
std::vector<std::string> indented(const std::string& yaml, size_t indent) {
  std::vector<std::string> out;
  for (const std::string& l : split_lines(yaml)) out.push_back(std::string(indent, ' ') + l);
  return out;
}

/// The 0-based line of the key of member `pointer`, checked to hold `name` as written at its column.
size_t key_line(const SourceDoc& doc, const std::vector<std::string>& lines, const std::string& pointer,
                const std::string& name) {
  const SourceMark k = doc.key_mark(pointer);
  const bool ok = k.line >= 1 && static_cast<size_t>(k.line) <= lines.size() && k.column >= 1 &&
                  lines[k.line - 1].compare(k.column - 1, name.size(), name) == 0 &&
                  indent_of(lines[k.line - 1]) == static_cast<size_t>(k.column - 1);
  // A block mapping's members start on the lines after its key; a flow mapping or a merged one cannot be edited.
  const SourceMark v = doc.mark(pointer);
  if (!ok || v.line <= k.line)
    throw InputError(doc.at_key(pointer, "a block that is not a block-style mapping under its own key",
                                "a block-style mapping to replace (paste the block printed instead)"));
  return static_cast<size_t>(k.line - 1);
}

}  // namespace

std::string set_convergence_block(const std::string& text, const std::string& file, const Json& block) {
  const SourceDoc doc = parse_yaml(text, file);
  std::vector<std::string> lines = split_lines(text);
  const std::string body = yaml_text(block);
  const Json& root = doc.value;
  std::vector<std::string> insert;
  size_t from = 0, to = 0;
  if (root.contains("correctness") && root["correctness"].is_object() && root["correctness"].contains("convergence")) {
    const size_t line = key_line(doc, lines, "/correctness/convergence", "convergence");
    const size_t indent = indent_of(lines[line]);
    from = line;
    to = block_end(lines, line, indent);
    insert.push_back(std::string(indent, ' ') + "convergence:");
    for (auto& l : indented(body, indent + 2)) insert.push_back(l);
  } else if (root.contains("correctness")) {
    if (!root["correctness"].is_object() || root["correctness"].empty())
      throw InputError(doc.at("/correctness", "not a mapping with members", "a mapping (the correctness block)"));
    const size_t line = key_line(doc, lines, "/correctness", "correctness");
    const size_t indent = indent_of(lines[line]);
    const SourceMark first = doc.key_mark("/correctness/" + root["correctness"].items().begin().key());
    const size_t child = first.column > 1 ? static_cast<size_t>(first.column - 1) : indent + 2;
    from = to = block_end(lines, line, indent);
    insert.push_back(std::string(child, ' ') + "convergence:");
    for (auto& l : indented(body, child + 2)) insert.push_back(l);
  } else {
    from = to = lines.size();
    Json correctness = Json::object();
    correctness["result"] = block.value("result", "not_run");
    correctness["summary"] = "the convergence check of recipebench converge only";
    correctness["convergence"] = block;
    for (auto& l : split_lines(yaml_text(Json{{"correctness", correctness}}))) insert.push_back(l);
  }
  lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(from), lines.begin() + static_cast<std::ptrdiff_t>(to));
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(from), insert.begin(), insert.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace recipebench
