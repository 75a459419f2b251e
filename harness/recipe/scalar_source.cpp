#include "recipe/scalar_source.h"

#include <algorithm>
#include <cstdint>

namespace recipebench {

namespace {

/// A scalar's value as retraced, with the file offset each byte came from.
struct Traced {
  std::string text;
  std::vector<size_t> from;
  void add(char c, size_t at) {
    text += c;
    from.push_back(at);
  }
};

size_t line_end(const std::string& t, size_t k) { return std::min(t.find('\n', k), t.size()); }

/// A white space character of YAML, or the CR of a CRLF line break (folded with it).
bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/// Appends code point `cp` as UTF-8, every byte marked at `at`.
void add_utf8(uint32_t cp, size_t at, Traced& out) {
  if (cp < 0x80) {
    out.add(static_cast<char>(cp), at);
  } else if (cp < 0x800) {
    out.add(static_cast<char>(0xC0 | (cp >> 6)), at);
    out.add(static_cast<char>(0x80 | (cp & 0x3F)), at);
  } else if (cp < 0x10000) {
    out.add(static_cast<char>(0xE0 | (cp >> 12)), at);
    out.add(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), at);
    out.add(static_cast<char>(0x80 | (cp & 0x3F)), at);
  } else {
    out.add(static_cast<char>(0xF0 | (cp >> 18)), at);
    out.add(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)), at);
    out.add(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), at);
    out.add(static_cast<char>(0x80 | (cp & 0x3F)), at);
  }
}

/// A line break inside a flow scalar (quoted or plain) at `k` (the first blank before it, or the '\n'): trailing
/// blanks dropped, a single break folded to a space, each empty line after it kept as '\n', the next line's leading
/// blanks dropped (YAML 1.2 section 7.3.1). Returns the offset of the next line's first character.
size_t fold_flow_break(const std::string& t, size_t k, Traced& out) {
  size_t j = k;
  while (j < t.size() && blank(t[j])) ++j;
  const size_t at = j;
  int empty = 0;
  size_t next = j + 1;
  while (true) {
    while (next < t.size() && blank(t[next])) ++next;
    if (next >= t.size() || t[next] != '\n') break;
    ++empty, ++next;
  }
  if (empty == 0) out.add(' ', at);
  for (int e = 0; e < empty; ++e) out.add('\n', at);
  return next;
}

/// A double-quoted escape at `k` (the backslash); returns the offset after it. False on an unknown escape.
bool escape(const std::string& t, size_t& k, Traced& out) {
  static const std::string kFrom = "0abt\tnvfre \"/\\";
  static const char kTo[] = {'\0', '\a', '\b', '\t', '\t', '\n', '\v', '\f', '\r', '\x1b', ' ', '"', '/', '\\'};
  const size_t at = k;
  const char e = k + 1 < t.size() ? t[k + 1] : '\0';
  if (e == '\n') {  // an escaped line break: it and the next line's leading blanks are not in the value
    k += 2;
    while (k < t.size() && blank(t[k])) ++k;
    return true;
  }
  const size_t simple = kFrom.find(e);
  if (e != '\0' && simple != std::string::npos) {
    out.add(kTo[simple], at);
    k += 2;
    return true;
  }
  const int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
  uint32_t cp = e == 'N' ? 0x85 : e == '_' ? 0xA0 : e == 'L' ? 0x2028 : e == 'P' ? 0x2029 : 0;
  if (cp == 0 && digits == 0) return false;
  if (digits > 0) {
    if (k + 2 + digits > t.size()) return false;
    cp = static_cast<uint32_t>(std::stoul(t.substr(k + 2, digits), nullptr, 16));
  }
  add_utf8(cp, at, out);
  k += 2 + digits;
  return true;
}

/// A quoted scalar whose opening quote is at `k`.
bool quoted(const std::string& t, size_t k, Traced& out) {
  const char q = t[k];
  size_t i = k + 1;
  while (i < t.size()) {
    const char c = t[i];
    if (c == q && q == '\'' && i + 1 < t.size() && t[i + 1] == '\'') {
      out.add('\'', i);
      i += 2;
    } else if (c == q) {
      return true;
    } else if (c == '\\' && q == '"') {
      if (!escape(t, i, out)) return false;
    } else if (blank(c) || c == '\n') {
      size_t j = i;
      while (j < t.size() && blank(t[j])) ++j;
      if (j < t.size() && t[j] == '\n') {
        i = fold_flow_break(t, i, out);
      } else {
        for (; i < j; ++i) out.add(t[i], i);
      }
    } else {
      out.add(c, i++);
    }
  }
  return false;
}

/// A plain scalar starting at `k` in a block mapping indented `parent` columns: it ends before ": ", " #", or a
/// line indented `parent` columns or less.
bool plain(const std::string& t, size_t k, int parent, Traced& out) {
  size_t i = k;
  while (i < t.size()) {
    const char c = t[i];
    if (c == ':' && (i + 1 >= t.size() || blank(t[i + 1]) || t[i + 1] == '\n')) break;
    if (blank(c) || c == '\n') {
      size_t j = i;
      while (j < t.size() && blank(t[j])) ++j;
      if (j >= t.size() || t[j] == '#') break;
      if (t[j] != '\n') {
        for (; i < j; ++i) out.add(t[i], i);
        continue;
      }
      Traced fold;
      const size_t next = fold_flow_break(t, i, fold);
      const size_t line_start = t.rfind('\n', next == 0 ? 0 : next - 1) + 1;
      if (next >= t.size() || t[next] == '#' || static_cast<int>(next - line_start) <= parent) break;
      out.text += fold.text;
      out.from.insert(out.from.end(), fold.from.begin(), fold.from.end());
      i = next;
      continue;
    }
    out.add(c, i++);
  }
  return true;
}

/// The break(s) between two content lines of a block scalar, marked at the earlier line's end `at`: a folded block
/// (>) folds a single break between two lines that are not more indented into a space (YAML 1.2 section 8.1.3).
void block_breaks(bool folded, bool prev_more, bool more, int empty, size_t at, Traced& out) {
  const bool fold = folded && !prev_more && !more;
  if (fold && empty == 0) out.add(' ', at);
  for (int n = 0; n < empty + (fold ? 0 : 1); ++n) out.add('\n', at);
}

/// A literal or folded block scalar whose indicator is at `k` (trailing line breaks as written; the caller applies
/// the chomping).
bool block(const std::string& t, size_t k, int parent, Traced& out) {
  const bool folded = t[k] == '>';
  size_t i = k + 1;
  int indent = -1;
  for (; i < t.size() && (t[i] == '+' || t[i] == '-' || (t[i] >= '1' && t[i] <= '9')); ++i)
    if (t[i] != '+' && t[i] != '-') indent = parent + (t[i] - '0');
  i = line_end(t, i) + 1;
  bool first = true, prev_more = false;
  int empty = 0;
  size_t prev_end = k;
  while (i < t.size()) {
    const size_t next_line = line_end(t, i) + 1;
    const size_t end = next_line - 1 > i && t[next_line - 2] == '\r' ? next_line - 2 : next_line - 1;  // CRLF
    size_t lead = 0;
    while (i + lead < end && t[i + lead] == ' ') ++lead;
    const bool spaces_only = i + lead == end;
    if (!spaces_only && indent < 0) indent = static_cast<int>(lead);
    if (!spaces_only && (static_cast<int>(lead) < indent || static_cast<int>(lead) <= parent)) break;
    if (spaces_only && (indent < 0 || static_cast<int>(lead) <= indent)) {
      ++empty;
      i = next_line;
      continue;
    }
    const size_t from = i + static_cast<size_t>(indent);
    const bool more = blank(t[from]);
    if (first)
      for (int n = 0; n < empty; ++n) out.add('\n', i);
    else
      block_breaks(folded, prev_more, more, empty, prev_end, out);
    for (size_t c = from; c < end; ++c) out.add(t[c], c);
    prev_end = end, prev_more = more, empty = 0, first = false;
    i = next_line;
  }
  return true;
}

/// Line starts of `t` (offsets), for offset -> line:column.
std::vector<size_t> line_starts(const std::string& t) {
  std::vector<size_t> out{0};
  for (size_t k = 0; k < t.size(); ++k)
    if (t[k] == '\n') out.push_back(k + 1);
  return out;
}

}  // namespace

std::vector<SourceMark> scalar_source_marks(const std::string& text, size_t start, int parent_indent,
                                            const std::string& value) {
  if (start >= text.size()) return {};
  Traced out;
  const char c = text[start];
  bool ok = false;
  try {
    ok = c == '|' || c == '>'    ? block(text, start, parent_indent, out)
         : c == '"' || c == '\'' ? quoted(text, start, out)
                                 : plain(text, start, parent_indent, out);
  } catch (const std::exception&) {  // std::stoul of a malformed \x escape: not retraced
    return {};
  }
  if (c == '|' || c == '>') {  // chomping: the value's own trailing line breaks, marked at the last content
    const size_t last = out.from.empty() ? start : out.from.back();
    while (!out.text.empty() && out.text.back() == '\n') out.text.pop_back(), out.from.pop_back();
    for (size_t n = value.size(); n > 0 && value[n - 1] == '\n'; --n) out.add('\n', last);
  }
  if (!ok || out.text != value) return {};
  const std::vector<size_t> starts = line_starts(text);
  std::vector<SourceMark> marks;
  marks.reserve(out.from.size());
  for (size_t at : out.from) {
    const size_t line = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), at) - starts.begin());
    marks.push_back({static_cast<int>(line), static_cast<int>(at - starts[line - 1]) + 1});
  }
  return marks;
}

std::vector<SourceMark> scalar_source_marks(const SourceDoc& doc, const std::string& pointer) {
  const SourceNode* n = doc.node(pointer);
  if (n == nullptr || doc.text.empty() || n->value.line <= 0) return {};
  const Json* v = nullptr;
  try {
    v = &doc.value.at(Json::json_pointer(pointer));
  } catch (const std::exception&) {
    return {};
  }
  if (!v->is_string()) return {};
  const std::vector<size_t> starts = line_starts(doc.text);
  if (static_cast<size_t>(n->value.line) > starts.size()) return {};
  const size_t start = starts[static_cast<size_t>(n->value.line) - 1] + static_cast<size_t>(n->value.column - 1);
  return scalar_source_marks(doc.text, start, n->key.column - 1, v->get<std::string>());
}

}  // namespace recipebench
