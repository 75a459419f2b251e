#include "subcommand_hint.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "util/input_file.h"

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
  return "<command line>: error: unknown subcommand '" + escape_controls(word) + "'" +
         (nearest.empty() ? std::string() : " (did you mean '" + nearest + "'?)") + "; subcommands: " + list;
}

namespace {

/// Other tools' spellings of recipebench's options (Megatron-LM, torchrun, TorchTitan habits): the option they mean.
const std::vector<std::pair<std::string, std::string>>& foreign_spellings() {
  static const std::vector<std::pair<std::string, std::string>> kSpellings{
      {"--gpus", "--count"},
      {"--num-gpus", "--count"},
      {"--ngpus", "--count"},
      {"--world-size", "--count"},
      {"--gpu-count", "--count"},
      {"--seq-length", "--row-tokens"},
      {"--seq-len", "--row-tokens"},
      {"--sequence-length", "--row-tokens"},
      {"--max-seq-len", "--row-tokens"},
      {"--global-batch-size", "--global-batch"},
      {"--gpu-type", "--gpu"},
      {"--nproc-per-node", "--per-node"},
      {"--gpus-per-node", "--per-node"},
      {"--output", "--out"},
      {"--output-dir", "--out"},
      {"--out-dir", "--out"},
      {"--num-layers", "--layers"},
      {"--config", "--model-config"},
  };
  return kSpellings;
}

/// The option of `own` that `name` most likely means (unknown_option_message's order), or "".
std::string suggestion(const std::string& name, const std::vector<OptionSpec>& own) {
  auto has = [&](const std::string& o) {
    return std::any_of(own.begin(), own.end(), [&](const OptionSpec& s) { return s.name == o; });
  };
  for (const auto& [foreign, ours] : foreign_spellings())
    if (foreign == name && has(ours)) return ours;
  std::string nearest;
  size_t best = 3;  // within 2 edits only
  for (const OptionSpec& o : own)
    if (const size_t d = edit_distance(name, o.name); d < best) best = d, nearest = o.name;
  return nearest;
}

/// The message for `name`, unknown to `subcommand`.
std::string unknown_option_text(const std::string& subcommand, const std::string& name,
                                const std::map<std::string, std::vector<OptionSpec>>& options) {
  const std::vector<OptionSpec>& own = options.at(subcommand);
  std::string hint = suggestion(name, own);
  std::string text = "<command line>: error: " + subcommand + ": unknown option '" + escape_controls(name) + "'";
  if (!hint.empty()) {
    text += " (did you mean '" + hint + "'?)";
  } else {
    std::string others;
    for (const auto& [sub, opts] : options)
      for (const OptionSpec& o : opts)
        if (sub != subcommand && o.name == name) others += (others.empty() ? "" : ", ") + sub;
    if (!others.empty()) text += " (an option of " + others + ", not of " + subcommand + ")";
  }
  std::string list;
  for (const OptionSpec& o : own) list += (list.empty() ? "" : ", ") + o.name;
  return text + "; its options: " + list + " (recipebench help " + subcommand + ")";
}

}  // namespace

std::optional<std::string> unknown_option_message(const std::string& subcommand, const std::vector<std::string>& args,
                                                  const std::map<std::string, std::vector<OptionSpec>>& options) {
  const auto own = options.find(subcommand);
  if (own == options.end()) return std::nullopt;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;  // what follows is not ours to read
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) continue;
    const std::string name = a.substr(0, a.find('='));
    const auto known =
        std::find_if(own->second.begin(), own->second.end(), [&](const OptionSpec& o) { return o.name == name; });
    if (known == own->second.end()) return unknown_option_text(subcommand, name, options);
    if (known->takes_value && a.find('=') == std::string::npos) ++i;  // its value, whatever it looks like
  }
  return std::nullopt;
}

std::string command_line_failure(const CLI::App*, const CLI::Error& e) {
  return "<command line>: error: " + escape_controls(e.what()) + "\nRun with --help for more information.\n";
}

}  // namespace recipebench::cli
