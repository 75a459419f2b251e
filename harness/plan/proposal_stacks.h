// Which training stacks run a planned layout (docs/step-time.md, "Commands for your stack"): recipebench's torch
// backend by its declared capabilities (passed in: backends/torch/torch_backend_registration.h declares them, the
// CLI hands them over), Megatron-LM, and TorchTitan, each with why not where it cannot. No libtorch here.
#pragma once

#include <string>
#include <vector>

#include "backend/capabilities.h"
#include "catalog/models.h"
#include "recipe/recipe.h"

namespace recipebench {

/// The stacks plan writes commands for, in the order it names them.
enum class Stack { kTorch, kMegatron, kTorchTitan };

/// "recipebench torch", "Megatron-LM", "TorchTitan".
const char* to_string(Stack s);

/// Whether one stack runs a layout, and why not where it cannot (one clause per field it refuses, joined by "; ",
/// e.g. "CP 2 (it runs CP 1)").
struct StackVerdict {
  Stack stack = Stack::kMegatron;
  bool runs = false;
  std::string why_not;
};

/// The verdict of every stack on `r` (a planned recipe of model `m`): the torch backend where `torch` (its declared
/// capabilities) lists the model's family and each of the layout's CP, ETP, dispatcher, recompute granularity and
/// offload; Megatron-LM always (it runs every layout plan searches); TorchTitan where torchtitan_refusals is empty.
std::vector<StackVerdict> proposal_stacks(const Recipe& r, const ModelConfig& m, const BackendCapabilities& torch);

/// The names of the stacks of `verdicts` that run the layout, in order ("recipebench torch", "Megatron-LM").
std::vector<std::string> running_stacks(const std::vector<StackVerdict>& verdicts);

/// True when the torch backend's verdict among `verdicts` says it runs the layout.
bool torch_runs(const std::vector<StackVerdict>& verdicts);

}  // namespace recipebench
