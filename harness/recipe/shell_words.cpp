#include "recipe/shell_words.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

namespace recipebench {

namespace {

/// What the next word completes: an argument, the target of a redirection, a here-document's delimiter.
enum class Pending { kArgument, kTarget, kHeredoc, kHeredocTabs };

/// A here-document whose body starts after the current line.
struct Heredoc {
  std::string delimiter;
  bool strip_tabs = false;  ///< `<<-`: leading tabs of the body's lines (and of the delimiter line) are removed
};

bool is_assignment(const ShellWord& w);

/// The reader's state over one command text (see shell_commands()).
class ShellReader {
 public:
  explicit ShellReader(const std::string& s) : s_(s) {}

  std::vector<ShellCommand> read() {
    while (i_ < s_.size()) step();
    end_word();
    end_command();
    return std::move(out_);
  }

 private:
  const std::string& s_;
  size_t i_ = 0;
  std::vector<ShellCommand> out_;
  ShellCommand cmd_;
  ShellWord word_;
  bool in_word_ = false;
  bool in_array_ = false;  ///< between NAME=( and its ')': the words are an array's elements
  Pending pending_ = Pending::kArgument;
  std::vector<Heredoc> heredocs_;

  char at(size_t k) const { return k < s_.size() ? s_[k] : '\0'; }

  void start_word() {
    if (!in_word_) word_ = ShellWord{{}, i_, false, false};
    in_word_ = true;
  }

  void end_word() {
    if (!in_word_) return;
    in_word_ = false;
    if (pending_ == Pending::kHeredoc || pending_ == Pending::kHeredocTabs)
      heredocs_.push_back({word_.text, pending_ == Pending::kHeredocTabs});
    else if (pending_ == Pending::kArgument)
      cmd_.words.push_back(std::move(word_));
    pending_ = Pending::kArgument;
  }

  void end_command() {
    if (!cmd_.words.empty()) out_.push_back(std::move(cmd_));
    cmd_ = ShellCommand{};
    pending_ = Pending::kArgument;
  }

  /// One character (or construct) at i_.
  void step() {
    const char c = s_[i_];
    if (c == '\\' && at(i_ + 1) == '\n') {
      i_ += 2;  // a line continuation: as if neither character were there
    } else if (c == '\n' && in_array_) {
      end_word();
      ++i_;
    } else if (c == '\n') {
      end_word();
      end_command();
      ++i_;
      skip_heredoc_bodies();
    } else if (c == ' ' || c == '\t' || c == '\r') {
      end_word();
      ++i_;
    } else if (c == '#' && !in_word_) {
      while (i_ < s_.size() && s_[i_] != '\n') ++i_;
    } else if (c == '(' && opens_array()) {
      open_array();
    } else if (c == ')' && in_array_) {
      end_word();
      end_command();
      in_array_ = false;
      ++i_;
    } else if (c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
      separator(c);
    } else if (c == '<' || c == '>') {
      redirection();
    } else {
      start_word();
      word_char(c);
    }
  }

  /// Whether the '(' at i_ opens an array assignment: it follows, with no space, an unquoted word NAME= in an
  /// assignment's place (before the command's program: `echo A=(` is not one).
  bool opens_array() const {
    if (!in_word_ || in_array_ || word_.quoted || word_.expanded || word_.text.size() < 2) return false;
    if (!std::all_of(cmd_.words.begin(), cmd_.words.end(), [](const ShellWord& w) { return is_assignment(w); }))
      return false;
    const std::string& t = word_.text;
    if (t.back() != '=' || std::isdigit(static_cast<unsigned char>(t[0]))) return false;
    return std::all_of(t.begin(), t.end() - 1,
                       [](char d) { return std::isalnum(static_cast<unsigned char>(d)) || d == '_'; });
  }

  /// NAME=( at i_: the command so far ends (the assignment's name dropped), and the elements that follow are one
  /// array command up to the matching ')'.
  void open_array() {
    in_word_ = false;  // NAME= itself: not an argument
    std::string name = word_.text.substr(0, word_.text.size() - 1);
    end_command();
    cmd_.array = true;
    cmd_.name = std::move(name);
    in_array_ = true;
    ++i_;
  }

  /// ';', '&', '|', '(' or ')' (and their doubled forms): the simple command ends. `&>` is a redirection.
  void separator(char c) {
    if (c == '&' && at(i_ + 1) == '>') {
      end_word();
      ++i_;
      redirection();
      return;
    }
    end_word();
    end_command();
    ++i_;
  }

  /// A redirection operator at i_; a word of digits just before it (`2>`) is its file descriptor, not an argument.
  void redirection() {
    if (in_word_ && !word_.quoted && !word_.text.empty() &&
        std::all_of(word_.text.begin(), word_.text.end(),
                    [](char d) { return std::isdigit(static_cast<unsigned char>(d)); }))
      in_word_ = false;  // the descriptor: dropped
    end_word();
    const char c = s_[i_++];
    if (c == '<' && at(i_) == '<' && at(i_ + 1) == '<') {
      i_ += 2;
      pending_ = Pending::kTarget;  // a here-string: its word is data
    } else if (c == '<' && at(i_) == '<') {
      ++i_;
      pending_ = at(i_) == '-' ? Pending::kHeredocTabs : Pending::kHeredoc;
      if (pending_ == Pending::kHeredocTabs) ++i_;
    } else {
      if (at(i_) == '>' || at(i_) == '&' || at(i_) == '|' || (c == '<' && at(i_) == '>')) ++i_;
      pending_ = Pending::kTarget;
    }
  }

  /// A character of a word outside double quotes.
  void word_char(char c) {
    if (c == '\'') {
      word_.quoted = true;
      const size_t end = s_.find('\'', i_ + 1);
      const size_t stop = end == std::string::npos ? s_.size() : end;
      word_.text.append(s_, i_ + 1, stop - i_ - 1);
      i_ = end == std::string::npos ? s_.size() : end + 1;
    } else if (c == '"') {
      word_.quoted = true;
      ++i_;
      double_quoted();
    } else if (c == '\\') {
      word_.quoted = true;
      if (i_ + 1 < s_.size()) word_.text += s_[i_ + 1];
      i_ += 2;
    } else if (c == '$' || c == '`') {
      expansion();
    } else {
      word_.text += c;
      ++i_;
    }
  }

  /// The inside of a double-quoted string (i_ just after the opening quote), up to and past its closing quote.
  void double_quoted() {
    while (i_ < s_.size() && s_[i_] != '"') {
      const char c = s_[i_];
      if (c == '\\' && i_ + 1 < s_.size() && std::strchr("$`\"\\\n", s_[i_ + 1])) {
        if (s_[i_ + 1] != '\n') word_.text += s_[i_ + 1];
        i_ += 2;
      } else if (c == '$' || c == '`') {
        expansion();
      } else {
        word_.text += c;
        ++i_;
      }
    }
    if (i_ < s_.size()) ++i_;
  }

  /// An expansion at i_ ('$' or '`'): appended as written, the word marked expanded. A '$' before nothing that
  /// can be expanded is a literal '$'.
  void expansion() {
    const size_t from = i_;
    if (s_[i_] == '`') {
      i_ = closing(i_ + 1, '`', '`');
    } else if (at(i_ + 1) == '(') {
      i_ = closing(i_ + 2, '(', ')');
    } else if (at(i_ + 1) == '{') {
      i_ = closing(i_ + 2, '{', '}');
    } else if (std::isalnum(static_cast<unsigned char>(at(i_ + 1))) || at(i_ + 1) == '_') {
      i_ += 1;
      while (std::isalnum(static_cast<unsigned char>(at(i_))) || at(i_) == '_') ++i_;
    } else if (at(i_ + 1) != '\0' && std::strchr("@*#?$!-'", at(i_ + 1))) {
      i_ = at(i_ + 1) == '\'' ? closing(i_ + 2, '\'', '\'') : i_ + 2;  // $'...' (ANSI-C quoting): not decoded
    } else {
      word_.text += '$';
      ++i_;
      return;
    }
    word_.text.append(s_, from, i_ - from);
    word_.expanded = true;
  }

  /// The offset just past the `close` that ends a construct opened before `k` (nesting `open`, skipping quoted
  /// text and escaped characters); the command's end when it never closes.
  size_t closing(size_t k, char open, char close) const {
    int depth = 1;
    while (k < s_.size()) {
      const char c = s_[k];
      if (c == '\\') {
        k += 2;
        continue;
      }
      if (c == close && --depth == 0) return k + 1;
      if (c == open && open != close) ++depth;
      if ((c == '\'' || c == '"') && c != close) {
        const size_t end = s_.find(c, k + 1);
        k = end == std::string::npos ? s_.size() : end + 1;
        continue;
      }
      ++k;
    }
    return s_.size();
  }

  /// After a line end: the bodies of the here-documents the line opened, each up to its delimiter's line.
  void skip_heredoc_bodies() {
    for (const Heredoc& h : heredocs_) {
      while (i_ < s_.size()) {
        const size_t end = std::min(s_.find('\n', i_), s_.size());
        std::string line = s_.substr(i_, end - i_);
        if (h.strip_tabs)
          line.erase(0, line.find_first_not_of('\t') == std::string::npos ? line.size() : line.find_first_not_of('\t'));
        i_ = end < s_.size() ? end + 1 : s_.size();
        if (line == h.delimiter) break;
      }
    }
    heredocs_.clear();
  }
};

/// Whether `w` is a NAME=value assignment (a name of letters, digits and '_' not starting with a digit).
bool is_assignment(const ShellWord& w) {
  const size_t eq = w.text.find('=');
  if (eq == std::string::npos || eq == 0 || std::isdigit(static_cast<unsigned char>(w.text[0]))) return false;
  return std::all_of(w.text.begin(), w.text.begin() + static_cast<std::ptrdiff_t>(eq),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

std::vector<ShellCommand> shell_commands(const std::string& command) { return ShellReader(command).read(); }

const ShellWord* shell_program(const ShellCommand& c) {
  static const std::set<std::string> kPrefixes = {"env",  "exec", "nohup", "time", "command", "builtin", "if",
                                                  "then", "else", "elif",  "do",   "while",   "until",   "!",
                                                  "{",    "}",    "fi",    "done", "stdbuf",  "nice"};
  bool after_prefix = false;
  for (const ShellWord& w : c.words) {
    if (is_assignment(w)) continue;
    if (!w.quoted && kPrefixes.count(w.text)) {
      after_prefix = true;
      continue;
    }
    if (after_prefix && !w.quoted && w.text.size() > 1 && w.text[0] == '-') continue;  // env -i, nice -n
    return &w;
  }
  return nullptr;
}

bool is_data_command(const std::string& program) {
  static const std::set<std::string> kData = {
      "echo",  "printf", "cat",  "tee",  "export", "declare", "typeset",  "local", "readonly", "set",    "unset",
      "read",  "test",   "[",    "[[",   "true",   "false",   ":",        "cd",    "pushd",    "popd",   "mkdir",
      "rm",    "cp",     "mv",   "ln",   "ls",     "touch",   "chmod",    "grep",  "sed",      "awk",    "head",
      "tail",  "sleep",  "wait", "trap", "exit",   "return",  "source",   ".",     "alias",    "ulimit", "umask",
      "shift", "eval",   "let",  "for",  "case",   "select",  "function", "wc",    "sort",     "tr",     "cut"};
  return kData.count(program) > 0;
}

}  // namespace recipebench
