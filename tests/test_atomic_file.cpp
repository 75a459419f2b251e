// Atomic writes: complete new content or the old file, never a partial one.
#include <catch2/catch.hpp>

#include <filesystem>

#include "test_util.h"
#include "util/atomic_file.h"

using namespace recipebench;
namespace fs = std::filesystem;

TEST_CASE("write_file_atomic replaces the file and leaves no temporary", "[atomic]") {
  const fs::path dir = fs::temp_directory_path() / "recipebench-atomic-test";
  fs::remove_all(dir);
  write_file_atomic((dir / "sub" / "a.json").string(), "first");
  CHECK(test::read_file((dir / "sub" / "a.json").string()) == "first");
  write_file_atomic((dir / "sub" / "a.json").string(), "second");
  CHECK(test::read_file((dir / "sub" / "a.json").string()) == "second");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir / "sub")) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 1);
  fs::remove_all(dir);
}

TEST_CASE("a failed write leaves the previous file intact", "[atomic]") {
  const fs::path dir = fs::temp_directory_path() / "recipebench-atomic-test2";
  fs::remove_all(dir);
  write_file_atomic((dir / "a.json").string(), "old");
  // The target is now a folder with content: rename over it fails, and the old file elsewhere is untouched.
  fs::create_directories(dir / "b.json" / "x");
  CHECK_THROWS_AS(write_file_atomic((dir / "b.json").string(), "new"), std::runtime_error);
  CHECK(test::read_file((dir / "a.json").string()) == "old");
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += 1 + 0 * e.is_regular_file();
  CHECK(entries == 2);  // a.json and the folder b.json: no temporary left behind
  fs::remove_all(dir);
}
