"""Times the libtorch operations of one gated DeltaNet layer (backends/torch/model/gated_deltanet.cpp) on the
proxy's shapes, forward + backward each, with CUDA events: which of them, besides the gated delta rule kernels, make
the "GDN layers" row of `run --profile`. The same ATen operators the C++ layer calls, in the same order and dtypes;
no model, no optimizer. Usage (GPU machine): python3 bench/gdn_layer_ops.py [tokens_per_row] [rows]
"""
import sys
import torch
import torch.nn.functional as F

T = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
B = int(sys.argv[2]) if len(sys.argv) > 2 else 2
H, HK, HV, DK, DV, KER = 2048, 16, 32, 128, 128, 4
KD, VD = HK * DK, HV * DV
CONV = 2 * KD + VD
dev, bf = "cuda", torch.bfloat16


def timed(name, fn, iters=10):
    """Mean ms of fn() (forward + backward) over iters calls after 3 warm-up calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        fn()
    b.record()
    torch.cuda.synchronize()
    ms = a.elapsed_time(b) / iters
    print(f"{name:44s} {ms:8.3f} ms")
    return ms


def leaf(*shape, dtype=bf):
    return torch.randn(*shape, device=dev, dtype=dtype).requires_grad_(True)


x = leaf(B, T, H)
w_qkv, w_z, w_b, w_a, w_out = leaf(CONV, H), leaf(VD, H), leaf(HV, H), leaf(HV, H), leaf(H, VD)
conv_w = leaf(CONV, 1, KER)
qkv_raw = leaf(B, T, CONV)
qk = leaf(B, T, HK, DK)
o = leaf(B, T, HV, DV)
z = leaf(B, T, HV, DV)
norm_w = leaf(DV)
A_log, dt_bias = leaf(HV, dtype=torch.float32), leaf(HV, dtype=torch.float32)
a_in = leaf(B, T, HV)


def back(y):
    y.backward(torch.ones_like(y))


def conv_silu():  # causal_depthwise_conv1d_silu
    y = F.conv1d(qkv_raw.transpose(1, 2), conv_w, None, 1, KER - 1, 1, CONV).narrow(-1, 0, T)
    back(F.silu(y).transpose(1, 2))


def l2norm():  # l2_normalize(... .to(fp32)) of q or k
    xf = qk.float()
    back(xf * torch.rsqrt(xf.pow(2).sum(-1, keepdim=True) + 1e-6))


def gated_norm():  # gated_rms_norm(o, z, w)
    xf = o.float()
    n = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(bf) * norm_w
    back((n.float() * F.silu(z.float())).to(bf))


def gate():  # g = -exp(A_log) * softplus(a + dt_bias)
    back(-A_log.exp() * F.softplus(a_in.float() + dt_bias))


rows = [("in_proj_qkv (2048 -> 8192)", lambda: back(F.linear(x, w_qkv))),
        ("in_proj_z (2048 -> 4096)", lambda: back(F.linear(x, w_z))),
        ("in_proj_b + in_proj_a (2048 -> 32, twice)", lambda: (back(F.linear(x, w_b)), back(F.linear(x, w_a)))),
        ("out_proj (4096 -> 2048)", lambda: back(F.linear(o.reshape(B, T, VD), w_out))),
        ("causal depthwise conv1d + SiLU (8192 ch, k 4)", conv_silu),
        ("l2 normalize q or k (FP32), x2 per layer", l2norm),
        ("gated RMS norm (FP32)", gated_norm),
        ("decay gate g", gate)]
print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {B} x {T} tokens, forward + backward each")
total = 0.0
for name, fn in rows:
    ms = timed(name, fn)
    total += ms * (2 if name.startswith("l2") else 1)
print(f"{'sum (one GDN layer, kernels excluded)':44s} {total:8.3f} ms")
