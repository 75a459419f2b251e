// The run's determinism switch (a recipe's bench.deterministic, docs/recipe-format.md): torch's deterministic
// algorithms and the cuBLAS workspace setting that makes cuBLAS reproducible. No libtorch in this header.
#pragma once

namespace recipebench::torch_model {

/// Applies bench.deterministic to this process. Call before the first GPU matmul (cuBLAS reads its workspace
/// setting when its first handle is made).
/// on = true: CUBLAS_WORKSPACE_CONFIG=:4096:8 unless it already holds one of cuBLAS's reproducible settings
/// (:4096:8 or :16:8; NVIDIA, cuBLAS documentation, "Results reproducibility"); torch's deterministic algorithms on,
/// strictly (not warn_only): an operation without a deterministic implementation stops the run with torch's error
/// naming it, rather than warning and changing the bits. Strict mode is also what selects deterministic kernels
/// inside scaled_dot_product_attention: libtorch 2.x leaves cuDNN's attention out of its backend choice and runs the
/// flash attention backward in its deterministic (no atomic dq) variant only when deterministic algorithms are on
/// and not warn-only (docs/determinism.md). cuDNN deterministic, its autotuner off; with libtorch >= 2.1 new tensors
/// are not filled with NaN (torch's default in deterministic mode).
/// on = false: torch's defaults (deterministic algorithms off). The model's own paths (MoE dispatch / combine, the
/// chunked LM loss, the optimizer) are deterministic either way: none has a faster non-deterministic variant yet.
void set_deterministic(bool on);

}  // namespace recipebench::torch_model
