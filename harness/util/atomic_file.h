// Atomic file writes: a reader sees the old file or the complete new one, never a half-written file.
#pragma once

#include <string>

namespace recipebench {

/// Writes `content` to `path` atomically: a temporary file in the same folder is written, flushed to disk
/// (fsync) and renamed over `path` (rename(2) is atomic within one filesystem). Creates missing parent
/// folders. On any failure the temporary file is removed, `path` is left as it was, and
/// std::runtime_error is thrown with the path and the system's reason.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace recipebench
