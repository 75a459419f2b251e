// The layers of docs/architecture.md hold: every folder of harness/ and backends/ (tests and tools aside) is in the
// table, and no source file includes a header of a folder below its own. The table is read from the doc, so the
// doc and this check cannot drift apart.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace fs = std::filesystem;
using recipebench::test::read_file;
using recipebench::test::source_path;

namespace {

/// Folder (relative to the source tree, ending in '/') -> its layer's row in the table (0 = the top row).
using LayerTable = std::map<std::string, int>;

/// The folders of docs/architecture.md's layer table, each with its row.
LayerTable read_layer_table(const std::string& doc) {
  LayerTable table;
  std::istringstream in(doc);
  std::string line;
  bool inside = false;
  int row = 0;
  const std::regex folder("`((?:harness|backends)/[a-z_/]*)`");
  while (std::getline(in, line)) {
    if (line.rfind("| layer | folders | job |", 0) == 0) {
      inside = true;
      continue;
    }
    if (!inside || line.rfind("|---", 0) == 0) continue;
    if (line.rfind("|", 0) != 0) break;
    const std::string cells = line.substr(0, line.find('|', line.find('|', 1) + 1) + 1);  // layer and folders
    for (std::sregex_iterator m(cells.begin(), cells.end(), folder), end; m != end; ++m) table[(*m)[1]] = row;
    ++row;
  }
  return table;
}

/// The listed folder holding `rel` (the longest listed prefix), or nullopt.
std::optional<std::string> folder_of(const LayerTable& table, const std::string& rel) {
  std::optional<std::string> best;
  for (const auto& [folder, row] : table)
    if (rel.rfind(folder, 0) == 0 && (!best || folder.size() > best->size())) best = folder;
  return best;
}

/// The file an `#include "name"` of `rel` names (relative to the tree): its own folder first, then the include
/// roots harness/, backends/torch/ and the tree's root; nullopt when none has it (a generated or system header).
std::optional<std::string> resolve(const std::string& root, const std::string& rel, const std::string& name) {
  const std::string own = fs::path(rel).parent_path().string() + "/";
  for (const std::string& base : {own, std::string("harness/"), std::string("backends/torch/"), std::string()})
    if (fs::exists(root + "/" + base + name)) return fs::path(base + name).lexically_normal().string();
  return std::nullopt;
}

/// "file:line: includes "x" (layer N) from layer M" for each include of `rel` (its `text`) that goes down the table.
std::vector<std::string> downward_includes(const LayerTable& table, const std::string& root, const std::string& rel,
                                           const std::string& text) {
  std::vector<std::string> out;
  const auto from = folder_of(table, rel);
  if (!from) return out;
  std::istringstream in(text);
  std::string line;
  const std::regex include("^\\s*#\\s*include\\s+\"([^\"]+)\"");
  std::smatch m;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!std::regex_search(line, m, include)) continue;
    const auto target = resolve(root, rel, m[1]);
    const auto to = target ? folder_of(table, *target) : std::nullopt;
    if (to && table.at(*to) > table.at(*from))
      out.push_back(rel + ":" + std::to_string(n) + ": includes \"" + m[1].str() + "\" (" + *to + ", row " +
                    std::to_string(table.at(*to)) + ") from " + *from + " (row " + std::to_string(table.at(*from)) +
                    ")");
  }
  return out;
}

bool is_source(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".h" || e == ".cpp" || e == ".cu" || e == ".cuh";
}

bool exempt(const std::string& rel) {
  return rel.rfind("backends/torch/tests/", 0) == 0 || rel.rfind("backends/torch/tools/", 0) == 0;
}

}  // namespace

TEST_CASE("layers: docs/architecture.md's table lists every folder, and no include goes down it", "[layers]") {
  const std::string root = RECIPEBENCH_SOURCE_DIR;
  const LayerTable table = read_layer_table(read_file(source_path("docs/architecture.md")));
  REQUIRE(table.size() >= 20);
  CHECK(table.at("harness/util/") == 0);
  CHECK(table.at("backends/torch/model/") == table.at("backends/torch/cuda/"));  // one layer of two folders
  CHECK(table.at("harness/run/") < table.at("harness/report/"));
  std::vector<std::string> unlisted, downward;
  size_t files = 0;
  for (const char* top : {"harness", "backends"})
    for (const auto& e : fs::recursive_directory_iterator(root + "/" + top)) {
      if (!e.is_regular_file() || !is_source(e.path())) continue;
      const std::string rel = fs::relative(e.path(), root).string();
      if (exempt(rel)) continue;
      ++files;
      if (!folder_of(table, rel)) unlisted.push_back(rel);
      for (auto& d : downward_includes(table, root, rel, read_file(e.path().string()))) downward.push_back(d);
    }
  CHECK(files > 200);
  CHECK(unlisted == std::vector<std::string>{});
  CHECK(downward == std::vector<std::string>{});
}

TEST_CASE("layers: an include of a folder below is reported with its file and line", "[layers]") {
  const std::string root = RECIPEBENCH_SOURCE_DIR;
  const LayerTable table = read_layer_table(read_file(source_path("docs/architecture.md")));
  const std::string text = "#include <vector>\n#include \"util/json.h\"\n#include \"run/run_driver.h\"\n";
  const std::vector<std::string> found = downward_includes(table, root, "harness/recipe/x.cpp", text);
  REQUIRE(found.size() == 1);
  CHECK_THAT(found[0], Catch::StartsWith("harness/recipe/x.cpp:3: includes \"run/run_driver.h\" (harness/run/"));
  // The torch backend's own roots: a layer including the one above it is fine, the one below is not.
  CHECK(downward_includes(table, root, "backends/torch/optim/x.cpp", "#include \"rank/run_context.h\"\n").empty());
  CHECK(downward_includes(table, root, "backends/torch/rank/x.cpp", "#include \"optim/adam.h\"\n").size() == 1);
}
