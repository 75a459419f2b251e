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

/// `s` with control characters escaped (\n, \r, \t, \xNN; DEL as \x7f), so a value cannot start a new
/// line of output or forge a diagnostic; invalid UTF-8 bytes are escaped as \xNN too.
std::string escape_controls(const std::string& s);

}  // namespace recipebench
