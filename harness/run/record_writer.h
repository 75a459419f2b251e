// The run-record writer: the reporter that writes a run's record (schema/run-record.schema.json) when it ends.
#pragma once

#include <string>

#include "run/reporter.h"

namespace recipebench {

/// Writes the final record as indented JSON to the driver's record path, atomically (temp file + rename), so an
/// interrupted write leaves no partial record. Throws std::runtime_error when the folder cannot be written.
class RecordWriter : public RunReporter {
 public:
  void finish(const RunRecord& record, const std::string& record_path, bool failure_shown) override;
};

}  // namespace recipebench
