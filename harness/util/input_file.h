// Reading an input file (a recipe, a run record, a config.json) safely: regular files only, size capped.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace recipebench {

/// Largest input file read: 16 MiB (the largest recipe or run record is a few hundred KB).
constexpr size_t kMaxInputBytes = size_t{16} << 20;

/// Thrown by read_input_file; `what()` is "<reason>" without the path (the caller locates it).
class InputFileError : public std::runtime_error {
 public:
  enum class Kind { kUnreadable, kNotRegular, kTooLarge };
  InputFileError(Kind kind, const std::string& reason) : std::runtime_error(reason), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

/// The bytes of `path`. Opens without blocking (a FIFO does not hang), refuses anything but a regular file
/// (FIFOs, devices, folders: "not a regular file (a FIFO)") and files over `max_bytes` ("a file of N bytes,
/// more than the 16 MiB an input may hold"). Throws InputFileError; never reads more than max_bytes + 1 bytes.
std::string read_input_file(const std::string& path, size_t max_bytes = kMaxInputBytes);

/// The first byte offset of `text` that is not valid UTF-8 (overlong forms, surrogates and code points
/// beyond U+10FFFF are invalid too), or std::string::npos when all of it is.
size_t first_invalid_utf8(const std::string& text);

/// `text` with every byte that does not start valid UTF-8 read as the Latin-1 code point of its value and written
/// as UTF-8 (0xA0 -> C2 A0). A YAML scalar's text as yaml-cpp decodes it: yaml-cpp writes the escapes "\_" (U+00A0)
/// and "\N" (U+0085) as the lone bytes 0xA0 and 0x85, its only output that is not UTF-8 from UTF-8 input (the
/// input itself is checked first), so every YAML reader passes its scalars and keys through this.
std::string utf8_from_latin1_bytes(const std::string& text);

/// `s` with control characters escaped (\n, \r, \t, \xNN; DEL as \x7f), so a value cannot start a new
/// line of output or forge a diagnostic; invalid UTF-8 bytes are escaped as \xNN too, and characters a terminal
/// shows as nothing, a space or a line break, or that reorder text (C1 controls, U+00A0, U+00AD, U+200B-U+200F,
/// U+2028-U+202E, U+2060-U+2064, U+2066-U+2069, U+FEFF) as \uXXXX: a key '\u00a0' is told from ' '.
std::string escape_controls(const std::string& s);

}  // namespace recipebench
