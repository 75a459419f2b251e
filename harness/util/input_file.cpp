#include "util/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace recipebench {

namespace {

const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a folder";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a plain file";
}

}  // namespace

std::string read_input_file(const std::string& path, size_t max_bytes) {
  using K = InputFileError::Kind;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputFileError(K::kUnreadable, std::string("cannot be read: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string kind = file_kind(st.st_mode);
    ::close(fd);
    throw InputFileError(K::kNotRegular, "not a regular file (" + kind + ")");
  }
  auto too_large = [&](size_t n) {
    ::close(fd);
    throw InputFileError(K::kTooLarge, "a file of " + std::to_string(n) + " bytes, more than the " +
                                           std::to_string(max_bytes >> 20) + " MiB an input may hold");
  };
  if (static_cast<size_t>(st.st_size) > max_bytes) too_large(static_cast<size_t>(st.st_size));
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string reason = std::strerror(errno);
      ::close(fd);
      throw InputFileError(K::kUnreadable, "cannot be read: " + reason);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) too_large(out.size());  // a file that grew while read
  }
  ::close(fd);
  return out;
}

namespace {

/// Length of the valid UTF-8 sequence starting at s[i] (1 for ASCII), or 0 when none starts there.
size_t utf8_length(const unsigned char* s, size_t n, size_t i, unsigned* code_point = nullptr) {
  const unsigned char c = s[i];
  if (c < 0x80) {
    if (code_point) *code_point = c;
    return 1;
  }
  size_t len = 0;
  unsigned cp = 0;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2, cp = c & 0x1Fu;
  else if (c >= 0xE0 && c <= 0xEF)
    len = 3, cp = c & 0x0Fu;
  else if (c >= 0xF0 && c <= 0xF4)
    len = 4, cp = c & 0x07u;
  else
    return 0;
  if (i + len > n) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((s[i + k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i + k] & 0x3Fu);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  if (code_point) *code_point = cp;
  return len;
}

}  // namespace

size_t first_invalid_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_length(s, text.size(), i);
    if (len == 0) return i;
    i += len;
  }
  return std::string::npos;
}

std::string utf8_from_latin1_bytes(const std::string& text) {
  if (first_invalid_utf8(text) == std::string::npos) return text;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_length(s, text.size(), i);
    if (len > 0) {
      out.append(text, i, len);
      i += len;
    } else {  // U+0080..U+00FF in two bytes
      out += static_cast<char>(0xC0 | (s[i] >> 6));
      out += static_cast<char>(0x80 | (s[i] & 0x3F));
      ++i;
    }
  }
  return out;
}

namespace {

/// Characters a terminal shows as nothing, as a space, or as a line break, or that reorder the text around them:
/// C1 controls (NEL among them), no-break space, soft hyphen, zero-width characters and marks, line and paragraph
/// separators, bidirectional embeddings, overrides and isolates, word joiners, the byte-order mark.
bool invisible(unsigned cp) {
  return (cp >= 0x80 && cp <= 0xA0) || cp == 0xAD || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

}  // namespace

std::string escape_controls(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = s[i];
    unsigned cp = 0;
    const size_t len = utf8_length(s, text.size(), i, &cp);
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (len == 0 || c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else if (len > 1 && invisible(cp)) {
      char hex[12];
      std::snprintf(hex, sizeof hex, "\\u%04x", cp);
      out += hex;
      i += len;
      continue;
    } else {
      out.append(text, i, len);
      i += len;
      continue;
    }
    ++i;
  }
  return out;
}

}  // namespace recipebench
