// `run` of a backend that this binary only declares: the process becomes the sibling executable that has it built in
// (docs/architecture.md, "Two binaries"). The torch-less `recipebench` hands a torch run to `recipebench-torch`.
#pragma once

#include <string>
#include <vector>

#include "run/run_driver.h"

namespace recipebench::cli {

/// The executable beside this one that runs `backend` ("<folder of /proc/self/exe>/recipebench-<backend>"), or an
/// empty string when this binary runs the backend itself, declares no such backend, or no such file is there.
std::string sibling_for_backend(const std::string& backend);

/// Replaces this process with the sibling executable that runs `q`'s backend, with the same arguments (`args`:
/// argv[1..], argv[0] becomes the sibling's path), when `q` is not a dry run and its recipe validates. Returns only
/// when there is nothing to hand to (this binary then runs, refuses or reports the request itself) or when execv
/// failed (then the error is printed and the caller goes on, so the request is refused where it would have been).
void hand_off_run(const RunRequest& q, const std::vector<std::string>& args);

}  // namespace recipebench::cli
