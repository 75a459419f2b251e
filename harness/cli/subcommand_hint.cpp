#include "subcommand_hint.h"

#include <algorithm>
#include <numeric>

namespace recipebench::cli {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> unknown_subcommand_message(const std::string& word,
                                                      const std::vector<std::string>& subcommands) {
  if (word.empty() || word[0] == '-') return std::nullopt;
  if (std::find(subcommands.begin(), subcommands.end(), word) != subcommands.end()) return std::nullopt;
  std::string nearest, list;
  size_t best = 3;  // suggest within 2 edits only
  for (const auto& s : subcommands) {
    list += (list.empty() ? "" : ", ") + s;
    if (const size_t d = edit_distance(word, s); d < best) {
      best = d;
      nearest = s;
    }
  }
  return "recipebench: unknown subcommand '" + word + "'" +
         (nearest.empty() ? std::string() : " (did you mean '" + nearest + "'?)") + "; subcommands: " + list;
}

}  // namespace recipebench::cli
