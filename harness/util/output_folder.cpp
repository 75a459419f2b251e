#include "util/output_folder.h"

#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <system_error>

namespace recipebench {

namespace fs = std::filesystem;

namespace {

const char* const kExpected = "a folder of your own (not a file, device, kernel or system folder)";

/// What a path that exists but is not a folder is, in words.
std::string kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::regular: return "a regular file";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    default: return "not a folder";
  }
}

/// True when `p` is `root` or lies under it (both canonical).
bool at_or_under(const fs::path& p, const fs::path& root) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q)
    if (q == p.end() || *q != *r) return false;
  return true;
}

/// The kernel pseudo file systems (statfs(2) f_type; linux/magic.h): proc, sysfs, devpts, cgroup, cgroup2,
/// debugfs, tracefs, securityfs, bpf, pstore, configfs, efivarfs, mqueue, fusectl, binfmt_misc.
bool pseudo_file_system(const fs::path& existing) {
  struct statfs s {};
  if (statfs(existing.c_str(), &s) != 0) return false;
  constexpr std::array<unsigned long, 15> kMagic = {0x9fa0,     0x62656572, 0x1cd1,     0x27e0eb,   0x63677270,
                                                    0x64626720, 0x74726163, 0x73636673, 0xcafe4a11, 0x6165676c,
                                                    0x62656570, 0xde5e81e4, 0x19800202, 0x65735543, 0x42494e4d};
  for (unsigned long m : kMagic)
    if (static_cast<unsigned long>(s.f_type) == m) return true;
  return false;
}

/// `p`'s nearest existing folder (itself when it exists).
fs::path nearest_existing(fs::path p) {
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec) && p != p.root_path()) p = p.parent_path();
  return p;
}

std::optional<std::string> system_folder(const fs::path& c) {
  for (const char* top : {"/dev", "/proc", "/sys"})
    if (at_or_under(c, top)) return "a device or kernel folder";
  for (const char* tree : {"/bin", "/boot", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/sbin", "/usr"})
    if (at_or_under(c, tree)) return c == fs::path(tree) ? "a system folder" : "inside a system folder";
  for (const char* own : {"/", "/home", "/media", "/mnt", "/opt", "/root", "/run", "/srv", "/tmp", "/var"})
    if (c == fs::path(own)) return "a system folder";
  return std::nullopt;
}

}  // namespace

std::optional<OutputFolderProblem> output_folder_problem(const std::string& out) {
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  if (!ec && fs::exists(st) && !fs::is_directory(st)) return OutputFolderProblem{out + " (" + kind_of(st.type()) + ")", kExpected};
  const fs::path canonical = fs::weakly_canonical(fs::absolute(out, ec), ec);
  if (ec) return std::nullopt;
  const std::string shown = canonical.string() == out ? out : out + " (" + canonical.string() + ")";
  if (const auto what = system_folder(canonical)) return OutputFolderProblem{shown + ": " + *what, kExpected};
  const fs::path existing = nearest_existing(canonical);
  if (pseudo_file_system(existing)) return OutputFolderProblem{shown + ": on a kernel file system", kExpected};
  struct stat s {};
  if (existing == canonical && stat(canonical.c_str(), &s) == 0 && (s.st_mode & S_ISVTX) && (s.st_mode & S_IWOTH) &&
      s.st_uid != geteuid())
    return OutputFolderProblem{shown + ": a shared folder (sticky, writable by every user, owned by uid " +
                                   std::to_string(s.st_uid) + ")",
                               kExpected};
  return std::nullopt;
}

}  // namespace recipebench
