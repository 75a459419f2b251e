#!/usr/bin/env python3
"""Times PyTorch's fused attention backends on the gated attention's core shapes (GPU machine).

The torch backend's attention layer (backends/torch/model/gated_attention.cpp) calls
at::scaled_dot_product_attention(q, repeat_kv(k), repeat_kv(v), is_causal=True) and lets libtorch pick the backend;
with bench.deterministic the run sets deterministic algorithms. This probe times each backend libtorch has (flash,
memory-efficient, cuDNN) at Qwen3.5-35B-A3B's shapes (16 query heads, 2 KV heads expanded to 16, head dim 256,
one 8,192-token row, BF16), with deterministic algorithms on and off, and checks whether two backward passes give
the same bits. It prints one line per case and a JSON line per case ("PROBE {...}").

Usage: python3 bench/attention_probe.py [iters]
"""
import json
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # as the backend sets it for deterministic runs
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
B, HQ, HKV, S, D = 1, 16, 2, 8192, 256


def inputs():
    g = torch.Generator(device="cuda").manual_seed(7)
    q = torch.randn(B, HQ, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(B, HKV, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(B, HKV, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    do = torch.randn(B, HQ, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    return q, k, v, do


def step(q, k, v, do):
    """One forward and backward as the layer does it: K, V repeated to the query heads first."""
    q = q.detach().requires_grad_()
    k = k.detach().requires_grad_()
    v = v.detach().requires_grad_()
    rep = HQ // HKV
    o = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), is_causal=True)
    o.backward(do)
    return o.detach(), q.grad, k.grad, v.grad


def time_ms(fn, iters):
    for _ in range(3):
        fn()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    a.record()
    for _ in range(iters):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / iters


def probe(backend, deterministic, tensors):
    torch.use_deterministic_algorithms(deterministic, warn_only=False)
    row = {"backend": backend.name, "deterministic": deterministic}
    try:
        with sdpa_kernel([backend]):
            q, k, v, do = tensors
            rep = HQ // HKV
            fwd = lambda: F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1),
                                                         is_causal=True)
            row["fwd_ms"] = time_ms(fwd, ITERS)
            row["fwd_bwd_ms"] = time_ms(lambda: step(*tensors), ITERS)
            first, second = step(*tensors), step(*tensors)
            row["bitwise_repeat"] = all(torch.equal(x, y) for x, y in zip(first, second))
    except Exception as e:  # a backend that does not take these shapes or this mode says why
        row["error"] = str(e).splitlines()[0][:200]
    finally:
        torch.use_deterministic_algorithms(False)
    # causal: half of the S x S score matrix; forward 2 products, backward 5 (FlashAttention-2's count)
    flops_fwd = 4 * B * HQ * S * S * D / 2
    if "fwd_bwd_ms" in row:
        row["fwd_bwd_tflops"] = 3.5 * flops_fwd / row["fwd_bwd_ms"] / 1e9
    return row


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, cuDNN {torch.backends.cudnn.version()}")
    tensors = inputs()
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        for deterministic in (True, False):
            row = probe(backend, deterministic, tensors)
            print("PROBE " + json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
