#include "util/json_text.h"

#include <cstddef>
#include <iterator>
#include <unordered_map>
#include <utility>
#include <vector>

namespace recipebench {

JsonTextError::JsonTextError(int line_, int column_, std::string path_, std::string found_, std::string expected_)
    : std::runtime_error((path_.empty() ? "" : path_ + ": ") + found_ + ", expected " + expected_),
      line(line_),
      column(column_),
      path(std::move(path_)),
      found(std::move(found_)),
      expected(std::move(expected_)) {}

namespace {

/// A character iterator that remembers the furthest byte the parser has read: when the SAX handler is told of a
/// key, that is just past the key's closing quote (the parser reads no further before it calls the handler).
class TrackingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator(const char* p, const char** furthest) : p_(p), furthest_(furthest) {}
  reference operator*() const { return *p_; }
  TrackingIterator& operator++() {
    if (++p_ > *furthest_) *furthest_ = p_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const TrackingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** furthest_;
};

/// 1-based line and column (in characters) of byte `offset` of `text`.
std::pair<int, int> line_column(const std::string& text, size_t offset) {
  int line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return {line, column};
}

/// Builds the document from the parser's events (as nlohmann's own DOM builder does) with the checks of
/// parse_json_text. A handler method returning false stops the parse; `error` then says why.
class Builder {
 public:
  Builder(const std::string& text, const char** furthest, int max_depth)
      : text_(text), furthest_(furthest), max_depth_(max_depth) {}

  bool null() { return value(Json(nullptr)); }
  bool boolean(bool b) { return value(Json(b)); }
  bool number_integer(Json::number_integer_t v) { return value(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return value(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string& /*text*/) { return value(Json(v)); }
  bool string(std::string& s) { return value(Json(std::move(s))); }
  bool binary(Json::binary_t& b) { return value(Json::binary(std::move(b))); }

  bool start_object(std::size_t /*n*/) { return open(Json::object(), false); }
  bool start_array(std::size_t /*n*/) { return open(Json::array(), true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    Frame& f = frames_.back();
    const size_t end = offset();  // just past the closing quote
    const size_t start = key_start(end);
    auto [it, fresh] = f.keys.emplace(k, start);
    f.key = k;
    if (!fresh) {
      const auto [first_line, first_column] = line_column(text_, it->second);
      return fail(start,
                  "duplicate key '" + k + "' (first at line " + std::to_string(first_line) + ", column " +
                      std::to_string(first_column) + ")",
                  "each key once per object");
    }
    auto& members = static_cast<Json::object_t::Container&>(f.value->get_ref<Json::object_t&>());
    members.emplace_back(k, nullptr);
    member_ = &members.back().second;
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& ex) {
    if (ex.id == 406) {  // a number beyond a double
      const std::string shown = last_token.size() > 40 ? last_token.substr(0, 40) + "... (" +
                                                             std::to_string(last_token.size()) + " characters)"
                                                       : last_token;
      return fail(position >= last_token.size() ? position - last_token.size() : 0, "number " + shown + " out of range",
                  "a number within +-1.8e308");
    }
    std::string why = ex.what();
    const auto colon = why.find(": ", why.find("column"));
    if (colon != std::string::npos) why = why.substr(colon + 2);
    fail(position > 0 ? position - 1 : 0, "malformed JSON (" + why + ")", "well-formed JSON");
    path.clear();  // located by line and column: the parser's message quotes what it last read
    return false;
  }

  /// Set when a handler method stopped the parse.
  bool failed = false;
  int line = 0, column = 0;
  std::string path, found, expected;
  Json root;

 private:
  struct Frame {
    Json* value;
    bool array;
    std::unordered_map<std::string, size_t> keys;  // key -> byte offset where it starts
    std::string key;                               // the member being read
  };

  size_t offset() const { return static_cast<size_t>(*furthest_ - text_.data()); }

  /// Where the key whose closing quote ends before `end` starts: its unescaped opening quote.
  size_t key_start(size_t end) const {
    if (end < 2) return 0;
    for (size_t i = end - 2; i > 0; --i) {
      if (text_[i] != '"') continue;
      size_t backslashes = 0;
      while (backslashes < i && text_[i - 1 - backslashes] == '\\') ++backslashes;
      if (backslashes % 2 == 0) return i;
    }
    return 0;
  }

  /// The dotted field path of the value being read.
  std::string current_path() const {
    std::string out;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      const bool last = i + 1 == frames_.size();
      if (f.array) {
        // An outer array's last element is the container being read; the innermost's next one is the value.
        const size_t n = f.value->size();
        if (last || n > 0) out += "[" + std::to_string(last ? n : n - 1) + "]";
      } else if (!f.keys.empty()) {
        out += (out.empty() ? "" : ".") + f.key;
      }
    }
    return out;
  }

  bool fail(size_t at, std::string found_, std::string expected_) {
    failed = true;
    std::tie(line, column) = line_column(text_, at);
    path = current_path();
    found = std::move(found_);
    expected = std::move(expected_);
    return false;
  }

  /// Places a finished value: the root, the next array element or the pending object member.
  Json* place(Json&& v) {
    if (frames_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& f = frames_.back();
    if (f.array) {
      auto& items = f.value->get_ref<Json::array_t&>();
      items.push_back(std::move(v));
      return &items.back();
    }
    *member_ = std::move(v);
    return member_;
  }

  bool value(Json&& v) {
    place(std::move(v));
    return true;
  }

  bool open(Json&& empty, bool array) {
    if (static_cast<int>(frames_.size()) >= max_depth_) {
      return fail(offset() > 0 ? offset() - 1 : 0, "nesting " + std::to_string(frames_.size() + 1) + " deep",
                  "at most " + std::to_string(max_depth_) + " levels of objects and arrays");
    }
    Json* slot = place(std::move(empty));
    frames_.push_back(Frame{slot, array, {}, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  const std::string& text_;
  const char** furthest_;
  int max_depth_;
  std::vector<Frame> frames_;
  Json* member_ = nullptr;
};

}  // namespace

Json parse_json_text(const std::string& text, int max_depth) {
  const char* furthest = text.data();
  Builder builder(text, &furthest, max_depth);
  const TrackingIterator first(text.data(), &furthest), last(text.data() + text.size(), &furthest);
  const bool ok = Json::sax_parse(first, last, &builder);
  if (builder.failed) throw JsonTextError(builder.line, builder.column, builder.path, builder.found, builder.expected);
  if (!ok) throw JsonTextError(1, 1, "", "malformed JSON", "well-formed JSON");
  return std::move(builder.root);
}

}  // namespace recipebench
