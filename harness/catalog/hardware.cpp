#include "catalog/hardware.h"

#include <algorithm>
#include <cctype>

namespace recipebench {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  // Dense BF16 peaks: the convention of TorchTitan and of the seed page (docs/metrics.md).
  static const std::vector<GpuSpec> gpus = {
      {"B200", "NVIDIA B200 (HGX, 180 GB)", 2.25e15, 180e9, 7.7e12, 1.8e12,
       "NVIDIA HGX B200 datasheet: 2.25 PFLOP/s dense BF16 per GPU (4.5 with sparsity); 8 GPUs 1,440 GB HBM3e "
       "at 62 TB/s; NVLink 5 1.8 TB/s per GPU"},
      {"H200", "NVIDIA H200 SXM", 989.4e12, 141e9, 4.8e12, 0.9e12,
       "NVIDIA H200 datasheet: 989 TFLOP/s dense BF16 (1,979 with sparsity), 141 GB HBM3e at 4.8 TB/s, "
       "NVLink 900 GB/s"},
      {"H100", "NVIDIA H100 SXM", 989.4e12, 80e9, 3.35e12, 0.9e12,
       "NVIDIA H100 datasheet (SXM): 989 TFLOP/s dense BF16 (1,979 with sparsity), 80 GB HBM3 at 3.35 TB/s, "
       "NVLink 900 GB/s"},
  };
  return gpus;
}

const std::vector<InstanceSpec>& instance_catalog() {
  // On-demand prices per instance-hour (docs/metrics.md; AWS EC2 on-demand pricing, us-east-1). Network: 3,200 Gbps
  // of EFA per instance = 400e9 bytes/s (one direction, the cards' line rates summed).
  static const std::vector<InstanceSpec> instances = {
      {"AWS", "p6-b200.48xlarge", "B200", 8, 113.9328, "AWS EC2 on-demand price, 8 x B200", 3200e9 / 8,
       "AWS EC2 P6 instance types (https://aws.amazon.com/ec2/instance-types/p6/): p6-b200.48xlarge, "
       "3,200 Gbps EFAv4 (8 x 400 Gbps)"},
      {"AWS", "p5en.48xlarge", "H200", 8, 63.296, "AWS EC2 on-demand price, 8 x H200", 3200e9 / 8,
       "AWS EC2 P5 instance types (https://aws.amazon.com/ec2/instance-types/p5/): p5en.48xlarge, 3,200 Gbps EFAv3"},
      {"AWS", "p5.48xlarge", "H100", 8, 55.04, "AWS EC2 on-demand price, 8 x H100", 3200e9 / 8,
       "AWS EC2 P5 instance types (https://aws.amazon.com/ec2/instance-types/p5/) and the EC2 user guide's "
       "\"Maximize network bandwidth\" page (P5 and P5e: up to 32 network cards, 3,200 Gbps): p5.48xlarge, "
       "3,200 Gbps EFAv2"},
  };
  return instances;
}

const GpuSpec* find_gpu(const std::string& name) {
  std::string key = lower(name);
  if (key == "h100 sxm" || key == "h100-sxm") key = "h100";
  for (const auto& g : gpu_catalog())
    if (lower(g.name) == key) return &g;
  return nullptr;
}

const InstanceSpec* find_instance(const std::string& name) {
  const std::string key = lower(name);
  for (const auto& i : instance_catalog())
    if (lower(i.name) == key || lower(i.label()) == key) return &i;
  return nullptr;
}

const InstanceSpec* default_instance_for_gpu(const std::string& gpu_name) {
  const GpuSpec* g = find_gpu(gpu_name);
  if (!g) return nullptr;
  for (const auto& i : instance_catalog())
    if (i.gpu == g->name) return &i;
  return nullptr;
}

}  // namespace recipebench
