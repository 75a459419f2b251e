#include "model/rms_norm.h"

#include "model/common.h"
#include "model/param_factory.h"

#ifdef RECIPEBENCH_GDN_CUDA
#include "cuda/gated_norm_cuda.h"
#endif

namespace recipebench::torch_model {

namespace {
torch::Tensor normalise(const torch::Tensor& xf, double eps) {
  return xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
}
}  // namespace

torch::Tensor zero_centred_rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  const auto ct = compute_dtype(x.scalar_type());
  const auto y = normalise(x.to(ct), eps) * (w.to(ct) + 1.0);
  return y.to(x.scalar_type());
}

torch::Tensor gated_rms_norm(const torch::Tensor& x, const torch::Tensor& z, const torch::Tensor& w, double eps,
                             GatedNormImpl impl) {
#ifdef RECIPEBENCH_GDN_CUDA
  if (impl == GatedNormImpl::Auto && cuda_gated_norm_supports(x, z, w)) return cuda_gated_norm(x, z, w, eps);
#else
  (void)impl;
#endif
  const auto ct = compute_dtype(x.scalar_type());
  const auto n = normalise(x.to(ct), eps).to(x.scalar_type()) * w;
  return (n.to(ct) * torch::silu(z.to(ct))).to(x.scalar_type());
}

RMSNormImpl::RMSNormImpl(int64_t dim_, double eps_) : dim(dim_), eps(eps_) {
  weight = register_parameter("weight", new_param({dim}));
  init_fill_(weight, 0.0);
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.size(-1) == dim, "RMSNorm: last dim ", x.size(-1), " != ", dim);
  return zero_centred_rms_norm(x, weight, eps);
}

GatedRMSNormImpl::GatedRMSNormImpl(int64_t dim_, double eps_, GatedNormImpl impl_) : dim(dim_), eps(eps_), impl(impl_) {
  weight = register_parameter("weight", new_param({dim}));
  init_fill_(weight, 1.0);
}

torch::Tensor GatedRMSNormImpl::forward(const torch::Tensor& x, const torch::Tensor& z) {
  TORCH_CHECK(x.size(-1) == dim && z.sizes() == x.sizes(), "GatedRMSNorm: x ", x.sizes(), " z ", z.sizes(), " dim ",
              dim);
  return gated_rms_norm(x, z, weight, eps, impl);
}

}  // namespace recipebench::torch_model
