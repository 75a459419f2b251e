// An exclusive lock on a folder, and the removal of temporary files that a killed writer left in it.
#pragma once

#include <string>
#include <vector>

namespace recipebench {

/// Holds flock(LOCK_EX) on the folder `dir` (created when missing) from construction to destruction, so
/// writers of the same folder (two `report`s with the same --out) take turns. The kernel drops the lock when the
/// holder dies, even of SIGKILL, so a killed writer never blocks the next. Throws std::runtime_error naming the
/// folder when it cannot be created, is not a folder, or cannot be locked.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& dir);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

/// Removes the temporary files util/atomic_file.h makes beside each of `names` in `dir` (hidden ".NAME.*": the
/// write's ".NAME.XXXXXX" and the set-replace's ".NAME.old.XXXXXX") and returns how many it removed. Call it
/// only while holding the DirectoryLock of every writer of `dir`: then no live writer owns such a file and each
/// is a leftover of a writer that was killed.
int remove_leftover_temp_files(const std::string& dir, const std::vector<std::string>& names);

}  // namespace recipebench
