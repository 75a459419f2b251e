#include "plan/optimizer_traffic.h"

#include <stdexcept>

namespace recipebench {

namespace {
constexpr double kNormRead = 4, kGradRead = 4;    // FP32 gradient: read by the norm, then by the update
constexpr double kFp32Master = 4 + 4 + 2;         // FP32 master read and written, BF16 parameter written
constexpr double kRemainderMaster = 2 * (2 + 2);  // BF16 parameter and 16-bit remainder, read and written
constexpr double kOpsExtra = 8 + 8 + 4;  // norm as pow + sum, clip as its own pass, master copied to the parameter

double moment_bytes(StateDtype d) { return 2 * (d == StateDtype::kBf16 ? 2.0 : 4.0); }  // read and written
}  // namespace

double optimizer_step_bytes_per_param(const RecipeOptimizer& o, Kernels kernels) {
  const bool plain = o.master_weights == MasterWeights::kFp32 && o.exp_avg_dtype == StateDtype::kFp32 &&
                     o.exp_avg_sq_dtype == StateDtype::kFp32;
  if (kernels == Kernels::kOps && !plain)
    throw std::invalid_argument(
        "the optimizer step's memory traffic with bench.kernels ops and a precision-aware state (optimizer." +
        std::string(o.master_weights == MasterWeights::kFp32 ? "exp_avg_dtype / exp_avg_sq_dtype" : "master_weights") +
        ") is not modelled: profile with the fused kernels (docs/optimizer.md, \"Memory traffic\")");
  const double master = o.master_weights == MasterWeights::kFp32 ? kFp32Master : kRemainderMaster;
  const double fused =
      kNormRead + kGradRead + master + moment_bytes(o.exp_avg_dtype) + moment_bytes(o.exp_avg_sq_dtype);
  return kernels == Kernels::kOps ? fused + kOpsExtra : fused;
}

std::string optimizer_state_label(const RecipeOptimizer& o) {
  const bool plain_moments = o.exp_avg_dtype == StateDtype::kFp32 && o.exp_avg_sq_dtype == StateDtype::kFp32;
  const std::string masters = o.master_weights == MasterWeights::kFp32 ? "FP32 masters" : "BF16 + remainder masters";
  if (plain_moments) return masters + " and Adam moments";
  return masters + ", Adam moments in " + to_string(o.exp_avg_dtype) + " / " + to_string(o.exp_avg_sq_dtype);
}

}  // namespace recipebench
