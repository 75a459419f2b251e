// Atomic file writes: a reader sees the old file or the complete new one, never a half-written file.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace recipebench {

/// Writes `content` to `path` atomically: a temporary file in the same folder is written, flushed to disk
/// (fsync) and renamed over `path` (rename(2) is atomic within one filesystem). Creates missing parent
/// folders. On any failure the temporary file is removed, `path` is left as it was, and
/// std::runtime_error is thrown with the path and the system's reason.
void write_file_atomic(const std::string& path, const std::string& content);

/// Replaces several files as a set (e.g. a report's leaderboard.json and leaderboard.html): every {path, content}
/// is first written to a flushed temporary file beside its path; only when all are written are they renamed over
/// their paths. A failure while writing leaves every old file as it was (temporaries removed). If a rename fails,
/// the files already replaced are put back from hard links kept of the old files. Throws std::runtime_error with
/// the path and the system's reason.
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace recipebench
