#include "util/host.h"

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace recipebench {

std::string utc_timestamp(std::chrono::system_clock::time_point t, const char* format) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  return std::strftime(buf, sizeof buf, format, &tm) ? buf : "";
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "unknown";
}

int cuda_device_count() {
  int physical = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++physical;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!visible) return physical;
  const std::string v = visible;
  if (v.empty() || v.rfind("-1", 0) == 0) return 0;
  int listed = 1;
  for (char c : v) listed += c == ',' ? 1 : 0;
  return listed < physical ? listed : physical;
}

uint64_t host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

HostDevices host_devices() { return HostDevices{cuda_device_count(), host_available_bytes()}; }

}  // namespace recipebench
