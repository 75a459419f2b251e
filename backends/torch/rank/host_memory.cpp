#include "rank/host_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace recipebench::train {

namespace {

/// The value of field `key` ("VmRSS:") of /proc/self/status in bytes (the file gives kB); 0 when absent.
int64_t status_kb_field(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size(), key) == 0) {
      std::istringstream fields(line.substr(key.size()));
      int64_t kb = 0;
      fields >> kb;
      return kb * 1024;
    }
  return 0;
}

}  // namespace

int64_t host_rss_bytes() { return status_kb_field("VmRSS:"); }

int64_t host_peak_rss_bytes() { return status_kb_field("VmHWM:"); }

bool reset_host_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace recipebench::train
