#include "run/record_writer.h"

#include "run/run_guard.h"

namespace recipebench {

void RecordWriter::finish(const RunRecord& record, std::string& record_path, bool /*failure_shown*/) {
  record_path = write_new_record(record_path, record.to_json().dump(2) + "\n");
}

}  // namespace recipebench
