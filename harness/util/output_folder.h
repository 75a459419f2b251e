// Whether a command may write its files into a folder the user named (`report --out DIR`): a folder of the user's
// own, never a device, kernel or system folder, and never a path that is not a folder (docs/reports.md, "Writing").
#pragma once

#include <optional>
#include <string>

namespace recipebench {

/// Why a folder is refused as an output: `found` names the path and what it is, `expected` what would do.
struct OutputFolderProblem {
  std::string found;     ///< e.g. "/dev (a device or kernel folder)", "x.json (a regular file)"
  std::string expected;  ///< "a folder of your own (not a file, device, kernel or system folder)"
};

/// The problem with `out` as an output folder, or nullopt when files may be written into it (it may not exist yet:
/// the command creates it). Refused, after resolving symbolic links and `..` (std::filesystem::weakly_canonical):
/// - a path that exists and is not a folder (a regular file, a character or block device, a FIFO, a socket);
/// - a folder on a kernel pseudo file system (proc, sysfs, cgroup, debugfs, ...: statfs(2) of the nearest existing
///   folder) or at or under /dev, /proc or /sys;
/// - a system folder: `/`, /bin, /boot, /etc, /home, /lib, /lib32, /lib64, /libx32, /media, /mnt, /opt, /root,
///   /run, /sbin, /srv, /tmp, /usr, /var themselves, and anything under /bin, /boot, /etc, /lib*, /sbin or /usr;
/// - a shared folder: one with the sticky bit that every user may write and that another user owns (/var/tmp,
///   /dev/shm, a shared scratch folder).
/// Never throws: a path that cannot be examined is left to the writer, which reports its own error.
std::optional<OutputFolderProblem> output_folder_problem(const std::string& out);

}  // namespace recipebench
