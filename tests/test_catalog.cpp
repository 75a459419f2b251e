// The hardware catalog as data (docs/catalog.md): the embedded catalog/gpus.yaml and catalog/instances.yaml pass the
// catalog schema and give the datasheet figures; a user's file replaces and adds entries; bad catalog files give
// located errors; a recipe on a GPU only the user's file defines validates with it and is refused without.
#include <catch2/catch.hpp>

#include <string>

#include "catalog/hardware.h"
#include "recipe/catalog_file.h"
#include "recipe/validate.h"
#include "test_util.h"

using namespace recipebench;
using recipebench::test::source_path;

namespace {

/// Restores the embedded catalog as the process's catalog when a test that set another one ends.
struct EmbeddedCatalogAfter {
  ~EmbeddedCatalogAfter() { set_hardware_catalog(embedded_catalog()); }
};

std::string catalog_data(const std::string& name) { return source_path("tests/data/catalog/" + name); }

}  // namespace

TEST_CASE("the embedded catalog files pass the catalog schema and their references hold", "[catalog]") {
  const Diagnostics problems = check_embedded_catalog();
  for (const auto& d : problems) INFO(d.to_string());
  CHECK(problems.empty());
}

TEST_CASE("the embedded catalog gives the datasheet figures, dense", "[catalog]") {
  const HardwareCatalog c = embedded_catalog();
  const GpuSpec* h200 = c.gpu("H200");
  REQUIRE(h200 != nullptr);
  CHECK(h200->peak_bf16_flops == 989.4e12);  // NVIDIA H200 datasheet: 989 TFLOP/s dense BF16
  CHECK(h200->peak_fp8_flops == 1979e12);
  CHECK(h200->memory_bytes == 141e9);
  CHECK(h200->memory_bandwidth == 4.8e12);
  CHECK(h200->nvlink_bandwidth == 0.9e12);
  CHECK(h200->source ==
        "NVIDIA H200 datasheet: 989 TFLOP/s dense BF16 (1,979 with sparsity), 141 GB HBM3e at 4.8 TB/s, "
        "NVLink 900 GB/s");
  // The figures the committed predictions and the seed's MFU were made with, and their sources, unchanged.
  const GpuSpec* b200 = c.gpu("B200");
  REQUIRE(b200 != nullptr);
  CHECK(b200->peak_bf16_flops == 2.25e15);
  CHECK(b200->memory_bytes == 180e9);
  CHECK(b200->memory_bandwidth == 7.7e12);
  CHECK(b200->nvlink_bandwidth == 1.8e12);
  CHECK(b200->source ==
        "NVIDIA HGX B200 datasheet: 2.25 PFLOP/s dense BF16 per GPU (4.5 with sparsity); 8 GPUs 1,440 GB HBM3e at "
        "62 TB/s; NVLink 5 1.8 TB/s per GPU");
  const GpuSpec* h100 = c.gpu("H100 SXM");
  REQUIRE(h100 != nullptr);
  CHECK(h100->name == "H100");
  CHECK(h100->memory_bandwidth == 3.35e12);
  CHECK(h100->source ==
        "NVIDIA H100 datasheet (SXM): 989 TFLOP/s dense BF16 (1,979 with sparsity), 80 GB HBM3 at 3.35 TB/s, "
        "NVLink 900 GB/s");
  const GpuSpec* a100 = c.gpu("a100-80gb");
  REQUIRE(a100 != nullptr);
  CHECK(a100->name == "A100 80GB");
  CHECK(a100->peak_bf16_flops == 312e12);
  CHECK(a100->peak_fp8_flops == 0);  // no FP8 tensor cores
  CHECK(a100->memory_bandwidth == 2039e9);
  const GpuSpec* mi300x = c.gpu("MI300X");
  REQUIRE(mi300x != nullptr);
  CHECK(mi300x->peak_bf16_flops == 1307.4e12);
  CHECK(mi300x->memory_bytes == 192e9);
  CHECK(mi300x->nvlink_bandwidth == 896e9);  // Infinity Fabric, 7 x 128 GB/s
}

TEST_CASE("the embedded catalog holds the issue's GPUs, each with a source and date, never a sparse peak",
          "[catalog]") {
  const HardwareCatalog c = embedded_catalog();
  for (const char* name : {"A100 40GB", "A100 80GB", "H100", "H100 PCIe", "H100 NVL", "H20", "H200", "B200", "B300",
                           "GB200", "GB300", "MI300X", "MI325X", "MI355X"}) {
    INFO(name);
    const GpuSpec* g = c.gpu(name);
    REQUIRE(g != nullptr);
    CHECK(!g->source.empty());
    CHECK(g->date.size() >= 7);
    CHECK(g->memory_bytes >= 40e9);
    // Dense FP8 is twice dense BF16 on every one of these tensor cores; a sparse figure in either breaks it.
    if (g->peak_fp8_flops > 0) CHECK(g->peak_fp8_flops == Approx(2 * g->peak_bf16_flops).epsilon(1e-3));
    // No dense BF16 peak of these GPUs reaches 2.6 PFLOP/s (GB200 and GB300: 2.5); 4.5 or 5 would be sparse.
    CHECK(g->peak_bf16_flops <= 2.6e15);
  }
}

TEST_CASE("a run record's device name is the GPU of its longest spelling", "[catalog]") {
  const HardwareCatalog c = embedded_catalog();
  auto named = [&](const char* device) {
    const GpuSpec* g = c.gpu_in_device_name(device);
    return g ? g->name : std::string("(none)");
  };
  CHECK(named("NVIDIA H200") == "H200");  // not H20, which "H200" also holds
  CHECK(named("NVIDIA H20") == "H20");
  CHECK(named("NVIDIA H100 80GB HBM3") == "H100");
  CHECK(named("NVIDIA H100 PCIe") == "H100 PCIe");
  CHECK(named("NVIDIA H100 NVL") == "H100 NVL");
  CHECK(named("NVIDIA A100-SXM4-80GB") == "A100 80GB");
  CHECK(named("NVIDIA A100-SXM4-40GB") == "A100 40GB");
  CHECK(named("NVIDIA B200") == "B200");
  CHECK(named("NVIDIA GB200") == "GB200");  // not B200
  CHECK(named("AMD Instinct MI300X") == "MI300X");
  CHECK(named("Tesla T4") == "(none)");
}

TEST_CASE("the embedded instances: prices, networks and the default instance of each priced GPU", "[catalog]") {
  const HardwareCatalog c = embedded_catalog();
  const InstanceSpec* p5 = c.instance("AWS p5.48xlarge");
  REQUIRE(p5 != nullptr);
  CHECK(p5->gpu == "H100");
  CHECK(p5->usd_per_hour == 55.04);
  CHECK(p5->network_bytes_per_s == 400e9);  // 3,200 Gbps / 8
  CHECK(p5->source == "AWS EC2 on-demand price, 8 x H100");
  CHECK(c.instance("p6-b200.48xlarge")->network_source ==
        "AWS EC2 P6 instance types (https://aws.amazon.com/ec2/instance-types/p6/): p6-b200.48xlarge, "
        "3,200 Gbps EFAv4 (8 x 400 Gbps)");
  CHECK(c.instance("p5en.48xlarge")->usd_per_gpu_hour() == Approx(63.296 / 8));
  CHECK(c.instance("p6-b200.48xlarge")->usd_per_hour == 113.9328);
  CHECK(c.default_instance("H100")->name == "p5.48xlarge");
  CHECK(c.default_instance("H200")->name == "p5en.48xlarge");
  CHECK(c.default_instance("B200")->name == "p6-b200.48xlarge");
  // Mixtral 8x7B on 32 A100 80 GB (issue 34): the GPU is priced by AWS p4de.24xlarge.
  const InstanceSpec* p4de = c.default_instance("A100 80GB");
  REQUIRE(p4de != nullptr);
  CHECK(p4de->label() == "AWS p4de.24xlarge");
  CHECK(p4de->gpus == 8);
  CHECK(p4de->priced());
  CHECK(p4de->network_bytes_per_s == 50e9);  // 400 Gbps
  CHECK(c.instance("Google Cloud a3-megagpu-8g")->network_bytes_per_s == 225e9);
  CHECK(c.instance("Standard_ND96isr_H100_v5")->provider == "Azure");
  CHECK_FALSE(c.instance("p5e.48xlarge")->priced());  // Capacity Blocks only: no on-demand price
  for (const char* provider : {"AWS", "Google Cloud", "Azure"}) {
    int n = 0;
    for (const auto& i : c.instances) n += i.provider == provider ? 1 : 0;
    INFO(provider);
    CHECK(n >= 5);
  }
}

TEST_CASE("a user's catalog file replaces one entry and adds another", "[catalog]") {
  EmbeddedCatalogAfter restore;
  const LoadedCatalog loaded = load_catalog_file(catalog_data("override.yaml"));
  for (const auto& d : loaded.errors) INFO(d.to_string());
  REQUIRE(loaded.ok());
  const HardwareCatalog& c = loaded.catalog;
  const HardwareCatalog embedded = embedded_catalog();
  CHECK(c.gpus.size() == embedded.gpus.size() + 1);
  CHECK(c.instances.size() == embedded.instances.size() + 1);
  // Replaced in place: the negotiated price, the GPU's spelling resolved to its name.
  const InstanceSpec* p5en = c.instance("p5en.48xlarge");
  REQUIRE(p5en != nullptr);
  CHECK(p5en->usd_per_hour == 40);
  CHECK(p5en->gpu == "H200");
  CHECK(p5en->origin == catalog_data("override.yaml"));
  CHECK(c.default_instance("H200") == p5en);
  // Added: L40S with its instance; the embedded entries untouched.
  const GpuSpec* l40s = c.gpu("l40s");
  REQUIRE(l40s != nullptr);
  CHECK(l40s->peak_bf16_flops == 362.05e12);
  CHECK(c.default_instance("L40S")->usd_per_gpu_hour() == Approx(30.13118 / 8));
  CHECK(c.gpu("H200")->peak_bf16_flops == 989.4e12);
  CHECK(c.instance("p5.48xlarge")->usd_per_hour == 55.04);
  // Set as the process's catalog, the lookups the figures use see it.
  set_hardware_catalog(loaded.catalog);
  CHECK(find_gpu("L40S") != nullptr);
  CHECK(find_instance("AWS p5en.48xlarge")->usd_per_hour == 40);
}

TEST_CASE("a GPU replaced under one of its aliases keeps answering to the name it replaced", "[catalog]") {
  const LoadedCatalog loaded = load_catalog_file(catalog_data("override-by-alias.yaml"));
  for (const auto& d : loaded.errors) INFO(d.to_string());
  REQUIRE(loaded.ok());
  const HardwareCatalog& c = loaded.catalog;
  CHECK(c.gpus.size() == embedded_catalog().gpus.size());
  const GpuSpec* h100 = c.gpu("H100");
  REQUIRE(h100 != nullptr);
  CHECK(h100->name == "H100 SXM");
  CHECK(h100->peak_bf16_flops == 900e12);
  CHECK(c.instance("p5.48xlarge")->gpu == "H100 SXM");
  CHECK(c.default_instance("H100")->name == "p5.48xlarge");
}

namespace {

struct BadCatalog {
  const char* stem;  ///< tests/data/catalog/bad/<stem>.yaml
  const char* file;  ///< the file the error is located in: "" for the fixture itself
  int line;
  int column;
  const char* path;  ///< dotted field path
  const char* text;  ///< a distinctive part of found / expected
};

// One row per fixture, each with exactly one defect; locations read off the fixtures.
const BadCatalog kBadCatalogs[] = {
    {"unknown-field", "", 13, 5, "gpus[0].notes", "notes"},
    {"memory-with-unit", "", 7, 19, "gpus[0].memory_bytes", "string '96 GB', expected number"},
    {"negative-price", "", 7, 19, "instances[0].usd_per_hour", "-20"},
    {"date-with-slashes", "", 12, 11, "gpus[0].date", "2026/01"},
    {"unknown-top-level-key", "", 2, 1, "gpu", "gpu"},
    {"malformed", "", 14, 1, "", ""},
    {"instance-unknown-gpu", "", 5, 10, "instances[0].gpu", "unknown GPU 'H300', expected a catalog GPU: A100 40GB"},
    {"duplicate-instance", "", 13, 11, "instances[1].name", "'X9.48xlarge' a second time"},
    {"alias-clash", "", 13, 23, "gpus[0].aliases[1]", "'H100 SXM', a spelling of H100"},
    {"default-instance-other-gpu", "", 13, 23, "gpus[0].default_instance",
     "'p5.48xlarge' (H100 GPUs), expected an instance with X1 GPUs"},
    {"breaks-embedded-default", "catalog/gpus.yaml", 0, 0, "gpus[2].default_instance",
     "'p5.48xlarge' (H200 GPUs), expected an instance with H100 GPUs"},
};

}  // namespace

TEST_CASE("bad catalog files give located errors", "[catalog]") {
  for (const auto& bad : kBadCatalogs) {
    const std::string file = catalog_data(std::string("bad/") + bad.stem + ".yaml");
    INFO(bad.stem);
    const LoadedCatalog loaded = load_catalog_file(file);
    REQUIRE(loaded.errors.size() == 1);
    const Diagnostic& d = loaded.errors[0];
    INFO(d.to_string());
    CHECK(d.file == (std::string(bad.file).empty() ? file : std::string(bad.file)));
    if (bad.line > 0) {
      CHECK(d.line == bad.line);
      CHECK(d.column == bad.column);
    } else {
      CHECK(d.line > 0);  // located in the embedded file
    }
    CHECK(d.path == bad.path);
    CHECK(d.to_string().find(bad.text) != std::string::npos);
  }
}

TEST_CASE("a catalog file that cannot be read is refused with its reason", "[catalog]") {
  const LoadedCatalog loaded = load_catalog_file(catalog_data("no-such-file.yaml"));
  REQUIRE(loaded.errors.size() == 1);
  CHECK(loaded.errors[0].expected.find("a readable YAML catalog file") != std::string::npos);
}

TEST_CASE("a recipe on a GPU only the user's catalog defines validates with it and is refused without", "[catalog]") {
  EmbeddedCatalogAfter restore;
  const std::string recipe = catalog_data("tiny-on-l40s.yaml");
  const ValidatedRecipe without = validate_recipe_file(recipe);
  REQUIRE(without.errors.size() == 1);
  const Diagnostic& d = without.errors[0];
  CHECK(d.line == 6);
  CHECK(d.column == 9);
  CHECK(d.path == "gpu.type");
  CHECK(d.found == "unknown GPU 'L40S'");
  CHECK(d.expected.find("a GPU of the hardware catalog (A100 40GB, A100 80GB, H100, H100 PCIe") == 0);
  CHECK(d.expected.find("MI355X) or CPU; a GPU of your own is added with --catalog FILE") != std::string::npos);

  const LoadedCatalog loaded = load_catalog_file(catalog_data("override.yaml"));
  REQUIRE(loaded.ok());
  set_hardware_catalog(loaded.catalog);
  const ValidatedRecipe with = validate_recipe_file(recipe);
  for (const auto& e : with.errors) INFO(e.to_string());
  CHECK(with.ok());
}
