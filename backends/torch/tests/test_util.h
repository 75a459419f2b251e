// Helpers of the torch model tests: float64 comparisons and finite-difference gradient checks.
#pragma once

#include <torch/autograd.h>
#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace rbt_test {

/// ||a - b|| / ||b|| (Frobenius norms), computed in float64.
inline double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  const auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  return (ad - bd).norm().item<double>() / bd.norm().item<double>();
}

/// Result of a finite-difference gradient check over one tensor.
struct GradCheckEntry {
  std::string name;
  double rel_error = 0;     ///< ||autograd - numeric|| / ||numeric|| over the sampled entries
  double numeric_norm = 0;  ///< ||numeric|| over the sampled entries (shows the check is not vacuous)
  int samples = 0;
};

/// Compares the autograd gradient of the scalar `loss()` with central differences
///   (loss(t + eps e_i) - loss(t - eps e_i)) / (2 eps)
/// for `samples` random entries of each named float64 CPU tensor plus the entry with the largest |autograd
/// gradient| (so that a tensor whose gradient is mostly zero still checks a live entry). Tensors must be
/// contiguous leaves with requires_grad set; they are restored afterwards.
inline std::vector<GradCheckEntry> grad_check(const std::function<torch::Tensor()>& loss,
                                              const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                              int samples = 3, double eps = 1e-6, unsigned seed = 1234) {
  std::vector<torch::Tensor> ts;
  for (const auto& nt : tensors) ts.push_back(nt.second);
  const auto l = loss();
  const auto grads = torch::autograd::grad({l}, ts, /*grad_outputs=*/{}, /*retain_graph=*/false,
                                           /*create_graph=*/false, /*allow_unused=*/true);
  std::mt19937 rng(seed);
  std::vector<GradCheckEntry> out;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < ts.size(); ++i) {
    const auto& t = ts[i];
    TORCH_CHECK(t.scalar_type() == torch::kDouble && t.is_contiguous(), tensors[i].first, ": needs contiguous fp64");
    const int64_t n = t.numel();
    const auto g = grads[i].defined() ? grads[i].contiguous() : torch::zeros_like(t);
    std::vector<int64_t> idx;
    std::uniform_int_distribution<int64_t> pick(0, n - 1);
    for (int s = 0; s < samples && s < n; ++s) idx.push_back(pick(rng));
    idx.push_back(g.abs().argmax().item<int64_t>());
    std::sort(idx.begin(), idx.end());
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
    double* p = t.data_ptr<double>();
    const double* gp = g.data_ptr<double>();
    double diff2 = 0, num2 = 0;
    for (int64_t j : idx) {
      const double orig = p[j];
      p[j] = orig + eps;
      const double lp = loss().item<double>();
      p[j] = orig - eps;
      const double lm = loss().item<double>();
      p[j] = orig;
      const double numeric = (lp - lm) / (2 * eps);
      diff2 += (gp[j] - numeric) * (gp[j] - numeric);
      num2 += numeric * numeric;
    }
    GradCheckEntry e;
    e.name = tensors[i].first;
    e.numeric_norm = std::sqrt(num2);
    e.rel_error = std::sqrt(diff2) / std::max(e.numeric_norm, 1e-300);
    e.samples = static_cast<int>(idx.size());
    out.push_back(e);
  }
  return out;
}

/// One line per entry, for test failure messages.
inline std::string describe(const std::vector<GradCheckEntry>& entries) {
  std::ostringstream os;
  for (const auto& e : entries)
    os << e.name << ": rel " << e.rel_error << " |numeric| " << e.numeric_norm << " (" << e.samples << " entries)\n";
  return os.str();
}

/// Named parameters of a module as (name, tensor) pairs.
inline std::vector<std::pair<std::string, torch::Tensor>> params_of(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, torch::Tensor>> v;
  for (const auto& kv : m.named_parameters()) v.emplace_back(kv.key(), kv.value());
  return v;
}

/// Re-draws every parameter of `m` (outside autograd) so that tests see weights of order 1 rather than the
/// 0.02 of the training init: weights N(0, std^2); norm weights N(0, 0.3^2) (+1 for the gated norm, whose
/// identity is 1); A_log = log U(0.5, 4); dt_bias N(1, 0.3^2). Deterministic under torch::manual_seed.
inline void randomize(torch::nn::Module& m, double std = 0.3) {
  torch::NoGradGuard no_grad;
  const auto all = m.named_parameters();
  for (const auto& kv : all) {
    const std::string& name = kv.key();
    auto p = kv.value();
    const auto ends_with = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ends_with("A_log")) {
      p.uniform_(0.5, 4.0).log_();
    } else if (ends_with("dt_bias")) {
      p.normal_(1.0, 0.3);
    } else if (ends_with("norm.weight") &&
               all.contains(name.substr(0, name.size() - std::string("norm.weight").size()) + "A_log")) {
      p.normal_(1.0, 0.3);  // the gated RMSNorm of a Gated DeltaNet (a sibling of A_log)
    } else if (name.find("norm") != std::string::npos) {
      p.normal_(0.0, 0.3);
    } else {
      p.normal_(0.0, std);
    }
  }
}

}  // namespace rbt_test
