#include "plan/proposal_stacks.h"

#include <algorithm>

#include <fmt/format.h>

#include "plan/torchtitan_command.h"

namespace recipebench {

namespace {

template <typename T>
bool listed(const std::vector<T>& list, const T& v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

/// Why the torch backend, by its declared capabilities `c`, cannot run `r`: one clause per field it does not list.
std::string torch_refusals(const Recipe& r, const ModelConfig& m, const BackendCapabilities& c) {
  const RecipeLayout& l = r.layout;
  std::vector<std::string> why;
  if (!c.model_families.empty() && !listed(c.model_families, m.family)) why.push_back("it does not build " + m.name);
  if (!listed(c.cp, l.cp)) why.push_back(fmt::format("CP {}", l.cp));
  if (!listed(c.etp, l.effective_etp())) why.push_back(fmt::format("ETP {}", l.effective_etp()));
  if (!listed(c.dispatchers, l.dispatcher)) why.push_back("dispatcher " + to_string(l.dispatcher));
  if (!listed(c.recompute, l.recompute.granularity)) why.push_back("recompute " + l.recompute.granularity);
  const std::string offload = l.offload.empty() ? "none" : l.offload;
  if (!listed(c.offload, offload)) why.push_back("offload " + offload);
  std::string s;
  for (const std::string& w : why) s += (s.empty() ? "" : "; ") + w;
  return s;
}

}  // namespace

const char* to_string(Stack s) {
  switch (s) {
    case Stack::kTorch:
      return "recipebench torch";
    case Stack::kMegatron:
      return "Megatron-LM";
    case Stack::kTorchTitan:
      return "TorchTitan";
  }
  return "Megatron-LM";
}

std::vector<StackVerdict> proposal_stacks(const Recipe& r, const ModelConfig& m, const BackendCapabilities& torch) {
  std::vector<StackVerdict> out;
  const std::string t = torch_refusals(r, m, torch);
  out.push_back({Stack::kTorch, t.empty(), t});
  out.push_back({Stack::kMegatron, true, ""});
  std::string tt;
  for (const std::string& w : torchtitan_refusals(r, m)) tt += (tt.empty() ? "" : "; ") + w;
  out.push_back({Stack::kTorchTitan, tt.empty(), tt});
  return out;
}

std::vector<std::string> running_stacks(const std::vector<StackVerdict>& verdicts) {
  std::vector<std::string> out;
  for (const StackVerdict& v : verdicts)
    if (v.runs) out.push_back(to_string(v.stack));
  return out;
}

bool torch_runs(const std::vector<StackVerdict>& verdicts) {
  return std::any_of(verdicts.begin(), verdicts.end(),
                     [](const StackVerdict& v) { return v.stack == Stack::kTorch && v.runs; });
}

}  // namespace recipebench
