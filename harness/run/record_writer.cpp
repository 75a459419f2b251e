#include "run/record_writer.h"

#include "util/atomic_file.h"

namespace recipebench {

void RecordWriter::finish(const RunRecord& record, const std::string& record_path, bool /*failure_shown*/) {
  write_file_atomic(record_path, record.to_json().dump(2) + "\n");
}

}  // namespace recipebench
