#include "backend_handoff.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "backend/backend.h"

namespace recipebench::cli {

std::string sibling_for_backend(const std::string& backend) {
  const std::vector<std::string> built = backend_names();
  if (std::find(built.begin(), built.end(), backend) != built.end() || !backend_capabilities(backend))
    return "";  // runs it here, or no such backend
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path sibling = self.parent_path() / ("recipebench-" + backend);
  return std::filesystem::is_regular_file(sibling, ec) && access(sibling.c_str(), X_OK) == 0 ? sibling.string() : "";
}

void hand_off_run(const RunRequest& q, const std::vector<std::string>& args) {
  if (q.dry_run) return;  // the rank map and memory plan need only the backend's declared capabilities
  const std::optional<std::string> backend = run_backend(q);
  if (!backend) return;
  const std::string sibling = sibling_for_backend(*backend);
  if (sibling.empty()) return;
  std::vector<std::string> kept = args;  // execv's strings must outlive the call
  std::vector<char*> argv{const_cast<char*>(sibling.c_str())};
  for (std::string& a : kept) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(sibling.c_str(), argv.data());
  std::cerr << "recipebench run: cannot start " << sibling << " (the " << *backend
            << " backend): " << std::strerror(errno) << "\n";
}

}  // namespace recipebench::cli
