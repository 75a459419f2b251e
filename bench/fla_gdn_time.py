# FLA's chunked gated delta rule alone (bf16, 35B widths: 16 key heads, 32 value heads, dim 128), forward and
# forward+backward at B x 8,192 tokens, timed with CUDA events (mean of N after warm-up), the same inputs and
# Hopper guard switch as the peer's gdn_probe.py. Prints the probe's line format, which bench/gdn-kernels.sh parses:
#   FLA GDN 35B B=1 T=8192: fwd X ms, fwd+bwd Y ms
# Usage: PYTHONPATH=<folder with fla/> python3 bench/fla_gdn_time.py [iters] [--kernels]
#   --kernels: also FLA's per-kernel CUDA time at 1 x 8,192 (torch.profiler, mean over `iters` forward+backward
#   steps after the timed ones, so Triton's autotuning is done), to place our kernels against FLA's one by one.
import sys
import torch
import fla.ops.common.chunk_o as _co
_co.IS_NVIDIA_HOPPER = False  # as the peer does (FLA issue 640)
from fla.ops.gated_delta_rule import chunk_gated_delta_rule

args = [a for a in sys.argv[1:] if not a.startswith("--")]
iters = int(args[0]) if args else 20
per_kernel = "--kernels" in sys.argv
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

    if per_kernel and B == 1:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(iters):
                step()
            torch.cuda.synchronize()
        def dev_us(e):
            return getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
        rows = [e for e in prof.key_averages() if "CUDA" in str(e.device_type) and e.count >= iters and dev_us(e) > 0]
        rows.sort(key=lambda e: -dev_us(e))
        print(f"FLA per kernel, 1 x 8192, mean us per forward+backward over {iters}:")
        for e in rows[:24]:
            print(f"  {dev_us(e) / iters:9.1f} us  x{e.count // iters}  {e.key[:90]}")
