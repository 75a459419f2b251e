// Float64 per-token gated delta rule on the CPU, forward and backward: the reference of gdn_check. Same contract as
// recipebench::gdn::forward/backward (gdn_kernels.h), inputs as float (the caller rounds them to bf16 first).
#pragma once

#include <cstdint>
#include <vector>

namespace recipebench::gdn::reference {

/// Inputs of one problem (host, float): q, k [N, Hk, 128]; v [N, Hv, 128]; g, beta [N, Hv];
/// h0 [rows, Hv, 128, 128] (empty = zeros); cu_seqlens of the packed rows.
struct Inputs {
  int k_heads = 0, v_heads = 0;
  double scale = 0;
  std::vector<int64_t> cu_seqlens;
  std::vector<float> q, k, v, g, beta, h0;
};

/// Forward and, when d_o is not empty, backward in float64. Per token and value head h (key head h / (Hv / Hk)):
///   S = e^g S;  u = beta (v - S^T k);  S += k u^T;  o = scale S^T q.
/// The backward walks the tokens in reverse, recomputing the states from checkpoints every 64 tokens.
struct Result {
  std::vector<double> o, ht;                       // [N, Hv, 128], [rows, Hv, 128, 128]
  std::vector<double> dq, dk, dv, dg, dbeta, dh0;  // shapes of the inputs
};
Result run(const Inputs& in, const std::vector<float>& d_o, const std::vector<float>& dht, int threads);

}  // namespace recipebench::gdn::reference
