// The run-record writer: the reporter that writes a run's record (schema/run-record.schema.json) when it ends.
#pragma once

#include <string>

#include "run/reporter.h"

namespace recipebench {

/// Writes the final record as indented JSON as a new file at the driver's record path, or beside it with -2, -3...
/// when that name is taken (run/run_guard.h's write_new_record: unnamed until complete, then linked, so an
/// interrupted write leaves nothing and no run replaces another's record); `record_path` is set to the name taken.
/// Throws std::runtime_error when the folder cannot be written.
class RecordWriter : public RunReporter {
 public:
  void finish(const RunRecord& record, std::string& record_path, bool failure_shown) override;
};

}  // namespace recipebench
