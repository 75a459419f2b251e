// The process exit codes of every command (README: 0 all good, 1 a checked input failed, 2 usage error).
#pragma once

namespace recipebench {

/// Exit codes: 0 all good, 1 a checked input failed (or a run failed), 2 usage error (bad arguments, missing paths).
enum ExitCode { kOk = 0, kFailed = 1, kUsage = 2 };

}  // namespace recipebench
