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

TEST_CASE("write_files_atomically replaces a set of files together, or none of them", "[atomic]") {
  const fs::path dir = fs::temp_directory_path() / "recipebench-atomic-set";
  fs::remove_all(dir);
  const std::string a = (dir / "leaderboard.json").string(), b = (dir / "leaderboard.html").string();
  write_files_atomically({{a, "json 1"}, {b, "html 1"}});
  CHECK(test::read_file(a) == "json 1");
  CHECK(test::read_file(b) == "html 1");
  write_files_atomically({{a, "json 2"}, {b, "html 2"}});
  CHECK(test::read_file(a) == "json 2");
  CHECK(test::read_file(b) == "html 2");
  auto count_files = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
    return n;
  };
  CHECK(count_files() == 2);  // no temporaries or backups left
  // The third file cannot be written (its folder is a file): the first two keep their old content.
  const std::string blocked = (dir / "leaderboard.json" / "x.txt").string();
  CHECK_THROWS_AS(write_files_atomically({{a, "json 3"}, {b, "html 3"}, {blocked, "x"}}), std::runtime_error);
  CHECK(test::read_file(a) == "json 2");
  CHECK(test::read_file(b) == "html 2");
  // A target that cannot be replaced (a non-empty folder): the files before it keep their old content.
  fs::create_directories(dir / "c" / "inside");
  CHECK_THROWS_AS(write_files_atomically({{a, "json 4"}, {b, "html 4"}, {(dir / "c").string(), "c"}}),
                  std::runtime_error);
  CHECK(test::read_file(a) == "json 2");
  CHECK(test::read_file(b) == "html 2");
  CHECK(count_files() == 2);
  fs::remove_all(dir);
}
