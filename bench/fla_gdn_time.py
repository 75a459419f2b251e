# FLA's chunked gated delta rule alone (bf16, 35B widths: 16 key heads, 32 value heads, dim 128), forward and
# forward+backward at B x 8,192 tokens, timed with CUDA events (mean of N after warm-up), the same inputs and
# Hopper guard switch as the peer's gdn_probe.py. Prints the probe's line format, which bench/gdn-kernels.sh parses:
#   FLA GDN 35B B=1 T=8192: fwd X ms, fwd+bwd Y ms
# Usage: PYTHONPATH=<folder with fla/> python3 bench/fla_gdn_time.py [iters]
import sys
import torch
import fla.ops.common.chunk_o as _co
_co.IS_NVIDIA_HOPPER = False  # as the peer does (FLA issue 640)
from fla.ops.gated_delta_rule import chunk_gated_delta_rule

iters = int(sys.argv[1]) if len(sys.argv) > 1 else 20
dev = "cuda"


def make(B, T, HK, HV, D, seed=1):
    g = torch.Generator(device=dev).manual_seed(seed)
    q = torch.nn.functional.normalize(torch.randn(B, T, HK, D, device=dev, generator=g), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(B, T, HK, D, device=dev, generator=g), dim=-1)
    v = torch.randn(B, T, HV, D, device=dev, generator=g)
    gg = -torch.nn.functional.softplus(torch.randn(B, T, HV, device=dev, generator=g)) * 0.5
    beta = torch.sigmoid(torch.randn(B, T, HV, device=dev, generator=g))
    return [x.to(torch.bfloat16).requires_grad_(True) for x in (q, k, v, gg, beta)]


def timed(fn, n):
    for _ in range(3):
        fn()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / n


for B in (1, 2):
    ins = make(B, 8192, 16, 32, 128)

    def step():
        o, _ = chunk_gated_delta_rule(*ins, use_qk_l2norm_in_kernel=False)
        o.backward(torch.ones_like(o))

    def fwd():
        with torch.no_grad():
            chunk_gated_delta_rule(*ins, use_qk_l2norm_in_kernel=False)

    fb = timed(step, iters)
    f = timed(fwd, iters)
    print(f"FLA GDN 35B B={B} T=8192: fwd {f:.3f} ms, fwd+bwd {fb:.3f} ms", flush=True)
