// Hardware catalog: GPUs (dense BF16 / FP8 peaks, memory, bandwidths) and cloud instances with their prices, read
// from YAML (catalog/gpus.yaml and catalog/instances.yaml, embedded in the binary; docs/catalog.md). A user's file
// laid over it (recipe/catalog_file.h, `--catalog FILE`) adds or replaces entries by name.
#pragma once

#include <stdexcept>
#include <string>

#include "catalog/efficiency.h"
#include <utility>
#include <vector>

namespace recipebench {

/// One GPU model. Figures are per GPU, from the vendor's datasheet, dense (never the 2x "with sparsity" figures).
struct GpuSpec {
  std::string name;                  ///< recipe spelling: "B200", "H200", "H100", "A100 80GB"
  std::vector<std::string> aliases;  ///< other accepted spellings: "H100 SXM", "A100-80GB"
  std::string full_name;             ///< e.g. "NVIDIA H100 SXM"
  std::string vendor;                ///< "NVIDIA", "AMD", ...
  double peak_bf16_flops = 0;        ///< dense BF16 tensor-core peak, FLOP/s
  double peak_fp8_flops = 0;         ///< dense FP8 tensor-core peak, FLOP/s; 0: no FP8 tensor cores (A100)
  double memory_bytes = 0;           ///< HBM capacity, bytes (1 GB = 1e9 bytes)
  double memory_bandwidth = 0;       ///< HBM bandwidth, bytes/s
  /// Scale-up bandwidth per GPU (NVLink / NVSwitch, or AMD Infinity Fabric), both directions together, bytes/s.
  double nvlink_bandwidth = 0;
  std::string scale_up;          ///< the fabric: "NVLink 4 (18 links)", "Infinity Fabric (7 links x 128 GB/s)"
  std::string default_instance;  ///< the instance that prices the GPU when a recipe names none; "" for none
  std::string source;            ///< the document the figures come from
  std::string url;               ///< where it is published; "" when not given
  std::string date;              ///< the document's date, YYYY-MM or YYYY-MM-DD
  std::string note;              ///< how a figure is derived, or a caveat; "" when none
  std::string origin;            ///< the catalog file that defined the entry ("catalog/gpus.yaml" when embedded)
  std::string pointer;           ///< its JSON pointer in that file: "/gpus/3"

  /// True when `spelling` is the name or an alias, compared case-insensitively.
  bool answers_to(const std::string& spelling) const;
};

/// One cloud instance type with its on-demand price.
struct InstanceSpec {
  std::string provider;     ///< "AWS", "Google Cloud", "Azure"
  std::string name;         ///< "p6-b200.48xlarge"
  std::string gpu;          ///< GpuSpec::name (an alias in the file is resolved to the name)
  int gpus = 0;             ///< GPUs per instance
  int nvlink_domain = 0;    ///< GPUs one NVLink domain joins (72: NVL72), a multiple of gpus; the file's absent: gpus
  double usd_per_hour = 0;  ///< on-demand price of the whole instance, $/hour; 0: no published price (priced())
  std::string source;       ///< where the price comes from (or why there is none)
  std::string price_url;    ///< the pricing page; "" when not given
  std::string price_date;   ///< when the price was published or read, YYYY-MM or YYYY-MM-DD
  std::string region;       ///< the price's region; "" when not given
  /// Inter-node network bandwidth of the whole instance, one direction, bytes/s: the line rates of its network
  /// cards summed (AWS quotes "3,200 Gbps" for 32 x 100 Gbps EFA on p5, 8 x 400 Gbps on p6-b200). A collective
  /// across nodes shares it between the instance's GPUs (plan/collective_time.h). 0: unknown.
  double network_bytes_per_s = 0;
  std::string network_source;  ///< where the network figure comes from
  std::string note;            ///< a caveat; "" when none
  std::string origin;          ///< the catalog file that defined the entry
  std::string pointer;         ///< its JSON pointer in that file: "/instances/2"

  /// True when the catalog has an on-demand price for the instance.
  bool priced() const { return usd_per_hour > 0; }
  /// $ per GPU-hour = instance price / GPUs per instance (0 when not priced()).
  double usd_per_gpu_hour() const { return usd_per_hour / gpus; }
  /// "AWS p6-b200.48xlarge"
  std::string label() const { return provider + " " + name; }
};

/// A problem of a catalog file that a schema cannot see (a duplicate name, an instance of an unknown GPU), at a
/// JSON pointer into `file`; the recipe layer turns it into a located diagnostic (recipe/catalog_file.h).
class CatalogError : public std::runtime_error {
 public:
  CatalogError(std::string in_file, std::string at_pointer, std::string found_text, std::string expected_text)
      : std::runtime_error(in_file + ": " + at_pointer + ": " + found_text + ", expected " + expected_text),
        file(std::move(in_file)),
        pointer(std::move(at_pointer)),
        found(std::move(found_text)),
        expected(std::move(expected_text)) {}
  std::string file;      ///< the catalog file ("catalog/gpus.yaml" or the user's path)
  std::string pointer;   ///< JSON pointer of the field: "/instances/2/gpu"
  std::string found;     ///< what is there
  std::string expected;  ///< what was expected
};

/// GPUs and instances, in file order (the embedded GPUs first, a user's new entries after them).
struct HardwareCatalog {
  std::vector<GpuSpec> gpus;
  std::vector<InstanceSpec> instances;
  std::vector<EfficiencyCurve> efficiencies;  ///< per GPU and operation (catalog/efficiency.yaml), at most one each

  /// GPU by name or alias, case-insensitive ("H200"; "H100 SXM" finds H100). nullptr when unknown.
  const GpuSpec* gpu(const std::string& name) const;
  /// Instance by "AWS p6-b200.48xlarge" or "p6-b200.48xlarge", case-insensitive. nullptr when unknown.
  const InstanceSpec* instance(const std::string& name) const;
  /// The GPU's default_instance, else its first instance in file order; nullptr when it has none.
  const InstanceSpec* default_instance(const std::string& gpu_name) const;
  /// The GPU whose longest spelling (name or alias) a device name holds, case-insensitively: "NVIDIA H200" is H200,
  /// not H20; "NVIDIA H100 PCIe" is H100 PCIe, not H100; "NVIDIA A100-SXM4-80GB" is A100 80GB. nullptr when none.
  const GpuSpec* gpu_in_device_name(const std::string& device_name) const;
  /// The efficiency curve of `op` on the GPU `gpu_name` answers to; nullptr when the catalog has none.
  const EfficiencyCurve* efficiency(const std::string& gpu_name, Operation op) const;
  /// "A100 40GB, A100 80GB, H100, ..." in file order.
  std::string gpu_names() const;
};

/// Reads one catalog document (YAML text with `gpus`, `instances` and / or `efficiencies` lists, schema/catalog.schema.yaml)
/// with yaml-cpp; `file` names it in errors and in each entry's origin. Expects a schema-checked document (the
/// recipe layer checks it first, tests check the embedded files) and throws CatalogError at the field's pointer for
/// what it cannot read (a missing field, a number that is not finite), YAML::Exception for text that is not YAML.
HardwareCatalog read_catalog(const std::string& text, const std::string& file);

/// `base` with `over`'s entries laid over it: an entry of `over` replaces the entry of `base` that answers to its
/// name (a GPU by name or alias, an instance by name, an efficiency by GPU and operation), in place, whole (a GPU replaced under one of its aliases keeps
/// answering to the name it replaced); any other entry of `over` is appended. Throws
/// CatalogError (at the entry of `over`) when two entries of `over` share a name.
HardwareCatalog overlay(HardwareCatalog base, const HardwareCatalog& over);

/// Checks what ties entries together, after overlay: GPU names and aliases are unique; every instance's and every
/// efficiency's GPU is a catalog GPU (its spelling resolved to the GPU's name), one efficiency per GPU and operation,
/// and every default_instance an instance of that GPU. Throws
/// CatalogError at the first offending field, in its entry's file.
void check_references(HardwareCatalog& catalog);

/// The embedded catalog files (catalog/gpus.yaml, catalog/instances.yaml, catalog/efficiency.yaml) as {file name,
/// text}, in that order.
std::vector<std::pair<std::string, std::string>> embedded_catalog_files();

/// The embedded catalog: its files read, laid over each other and checked. Throws CatalogError (a defect of the
/// build: tests/test_catalog.cpp checks the files).
HardwareCatalog embedded_catalog();

/// The process's catalog: the one set by set_hardware_catalog, else the embedded catalog, read at first use.
/// The lookups below read it. Pointers into it stay valid until the next set_hardware_catalog.
const HardwareCatalog& hardware_catalog();
/// Replaces the process's catalog (the CLI does it once, before any lookup, for `--catalog FILE`).
void set_hardware_catalog(HardwareCatalog catalog);

/// Per-step latency of a ring collective over NVLink within a node, seconds: NCCL's own tuning model, hwLat[NVLINK]
/// for the Ring algorithm with the Simple protocol (3.4 us; NVIDIA/nccl src/graph/tuning.cc). A model constant of
/// NCCL's, not a measurement of ours; it sets the alpha of the alpha-beta model (plan/collective_time.h).
constexpr double kNvlinkStepLatencySeconds = 3.4e-6;
/// Per-step latency of a ring collective across the inter-node network, seconds: the same table's hwLat[NET] for
/// Ring / Simple (14 us; NVIDIA/nccl src/graph/tuning.cc). Assumed to hold for AWS EFA as for InfiniBand.
constexpr double kNetworkStepLatencySeconds = 14e-6;

/// The process catalog's GPUs (hardware_catalog().gpus).
const std::vector<GpuSpec>& gpu_catalog();
/// The process catalog's instances (hardware_catalog().instances).
const std::vector<InstanceSpec>& instance_catalog();

/// GPU by recipe name ("H200"; "H100 SXM" also finds H100) in the process's catalog. nullptr when unknown.
const GpuSpec* find_gpu(const std::string& name);

/// The catalog GPUs a recipe's gpu.type may mean when it is no name or alias but a family: those with a name or an
/// alias that begins with `type` followed by a space or '-' (case-insensitive: "A100" -> A100 40GB, A100 80GB),
/// narrowed, when memory_gb > 0, to those whose memory is memory_gb GB or GiB within 5% (docs/catalog.md, "GPU
/// names"). Empty when `type` is a name or alias, or no family.
std::vector<const GpuSpec*> gpus_of_family(const std::string& type, double memory_gb);

/// find_gpu(type), else the one GPU gpus_of_family(type, memory_gb) leaves (gpu.type A100 with memory_gb 80 is
/// A100 80GB); nullptr when none or several.
const GpuSpec* resolve_gpu(const std::string& type, double memory_gb);

/// Instance by "AWS p6-b200.48xlarge" or "p6-b200.48xlarge" (case-insensitive). nullptr when unknown.
const InstanceSpec* find_instance(const std::string& name);

/// The default instance of a GPU type (the one the catalog prices it by), or nullptr.
const InstanceSpec* default_instance_for_gpu(const std::string& gpu_name);

}  // namespace recipebench
