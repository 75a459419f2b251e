#!/usr/bin/env python3
"""Times PyTorch's fused attention on the gated attention's core shapes (GPU machine).

The torch backend's attention layer (backends/torch/model/gated_attention.cpp) calls
at::scaled_dot_product_attention(q, repeat_kv(k), repeat_kv(v), is_causal=True) and lets libtorch pick the backend
(flash); with bench.deterministic (the default) the run sets deterministic algorithms. At Qwen3.5-35B-A3B's shapes
(16 query heads, 2 KV heads, head dim 256, one 8,192-token row, BF16) this probe times flash attention with
deterministic algorithms and the KV heads brought to the query heads three ways, then flash and cuDNN without
deterministic algorithms (memory-efficient attention took 133 ms deterministic, 39 ms not, on 2026-12-01: left
out), and checks whether two backward passes give the same bits. One JSON line per case ("PROBE {...}").

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


def attend(q, k, v, kv_mode):
    """Causal attention with the KV heads brought to the query heads by `kv_mode`: "expand" (an expanded view
    copied once: the layer's way since 2026-12-01; its backward a sum), "repeat_interleave" (the layer's way
    before: backward an index_add) or "enable_gqa" (SDPA reads the KV heads itself, where the backend can)."""
    rep = HQ // HKV
    if kv_mode == "enable_gqa":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    if kv_mode == "repeat_interleave":
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    else:
        k = k.unsqueeze(2).expand(B, HKV, rep, S, D).reshape(B, HQ, S, D)
        v = v.unsqueeze(2).expand(B, HKV, rep, S, D).reshape(B, HQ, S, D)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def step(q, k, v, do, kv_mode="expand"):
    """One forward and backward as the layer does it."""
    q = q.detach().requires_grad_()
    k = k.detach().requires_grad_()
    v = v.detach().requires_grad_()
    o = attend(q, k, v, kv_mode)
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


def probe(backend, deterministic, tensors, kv_mode="expand"):
    torch.use_deterministic_algorithms(deterministic, warn_only=False)
    row = {"backend": backend.name, "deterministic": deterministic, "kv": kv_mode}
    try:
        with sdpa_kernel([backend]):
            q, k, v, do = tensors
            row["fwd_ms"] = time_ms(lambda: attend(q, k, v, kv_mode), ITERS)
            row["fwd_bwd_ms"] = time_ms(lambda: step(*tensors, kv_mode), ITERS)
            first, second = step(*tensors, kv_mode), step(*tensors, kv_mode)
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
    for kv_mode in ("expand", "repeat_interleave", "enable_gqa"):  # the layer's configuration: flash, deterministic
        print("PROBE " + json.dumps(probe(SDPBackend.FLASH_ATTENTION, True, tensors, kv_mode)), flush=True)
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        print("PROBE " + json.dumps(probe(backend, False, tensors)), flush=True)


if __name__ == "__main__":
    main()
