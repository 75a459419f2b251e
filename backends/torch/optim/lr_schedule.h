// Learning-rate schedule: linear warm-up, then cosine / linear decay to min_lr, or constant. No libtorch here.
#pragma once

#include <cmath>

#include "recipe/recipe.h"

namespace recipebench::train {

/// Learning rate of step `step` (0-based) of a run of `total_steps` steps.
/// Warm-up: W = round(lr_warmup_fraction x total_steps) steps rising linearly, lr x (step + 1) / W.
/// Then, with progress p = (step - W) / max(1, total_steps - 1 - W) in [0, 1]:
/// cosine: min_lr + (lr - min_lr) x (1 + cos(pi p)) / 2; linear: lr - (lr - min_lr) p; constant: lr.
/// Follows Megatron-LM's OptimizerParamScheduler (warm-up then decay over the remaining steps).
inline double learning_rate(const RecipeOptimizer& o, int step, int total_steps) {
  const int warmup = static_cast<int>(std::lround(o.lr_warmup_fraction * total_steps));
  if (step < warmup) return o.lr * (step + 1) / warmup;
  if (o.lr_decay_style == LrDecay::kConstant) return o.lr;
  const int span = total_steps - 1 - warmup;
  const double p = span > 0 ? std::min(1.0, static_cast<double>(step - warmup) / span) : 1.0;
  if (o.lr_decay_style == LrDecay::kLinear) return o.lr - (o.lr - o.min_lr) * p;
  return o.min_lr + (o.lr - o.min_lr) * 0.5 * (1.0 + std::cos(M_PI * p));
}

}  // namespace recipebench::train
