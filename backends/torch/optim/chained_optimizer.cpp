#include "optim/chained_optimizer.h"

#include <cmath>
#include <utility>

namespace recipebench::train {

ChainedOptimizer::ChainedOptimizer(std::vector<std::unique_ptr<Optimizer>> members, dist::ProcessGroup* stages)
    : members_(std::move(members)), stages_(stages) {}

void ChainedOptimizer::zero_grad() {
  for (auto& m : members_) m->zero_grad();
}

void ChainedOptimizer::accumulate_grads() {
  for (auto& m : members_) m->accumulate_grads();
}

void ChainedOptimizer::begin_last_backward(int chunk) {
  for (auto& m : members_) m->begin_last_backward(chunk);
}

double ChainedOptimizer::squared_grad_norm() {
  double stage = 0;
  for (auto& m : members_) stage += m->squared_grad_norm();
  return sum_of_squares(stages_, std::sqrt(stage));  // the stage's norm, summed in squares over the pipeline
}

double ChainedOptimizer::clip(double norm) {
  double scale = 1.0;
  for (auto& m : members_) scale = m->clip(norm);  // the same scale for every member
  return scale;
}

void ChainedOptimizer::step(double lr) {
  for (auto& m : members_) m->step(lr);
}

void ChainedOptimizer::start_param_gather() {
  for (auto& m : members_) m->start_param_gather();
}

void ChainedOptimizer::finish_param_gather() {
  for (auto& m : members_) m->finish_param_gather();
}

}  // namespace recipebench::train
