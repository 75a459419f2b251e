#!/usr/bin/env python3
"""Runs Hugging Face transformers' Qwen3_5MoeForCausalLM (float64, CPU, eager attention, torch fallbacks of the
Gated DeltaNet kernels) on the weights and batch written by `torch_model_check --dump DIR`, and compares its
logits and SFT loss with recipebench's C++ model. All parameter names must match (none missing or extra).

Hugging Face computes norms, RoPE, the router softmax and the whole gated delta rule in float32 even for a
float64 model, so a plain run agrees only to float32 precision (~1e-6). The script therefore runs twice: as
shipped (reported), and with those float32 casts redirected to float64 inside the modeling module, which must
agree to 1e-10. Usage: hf_compare.py DIR  (exit status 1 on a mismatch)."""
import contextlib
import json
import sys

import numpy as np
import torch
import transformers
import transformers.models.qwen3_5_moe.modeling_qwen3_5_moe as hf_modeling
from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig


class _Float64Torch:
    """Stands in for `torch` inside the modeling module: torch.float32 / torch.float mean float64."""

    def __getattr__(self, name):
        if name in ("float32", "float"):
            return torch.float64
        return getattr(torch, name)


@contextlib.contextmanager
def float64_internals(active):
    """Redirects the modeling module's float32 casts (torch.float32, torch.float, Tensor.float()) to float64."""
    real_torch, real_float = hf_modeling.torch, torch.Tensor.float
    if active:
        hf_modeling.torch = _Float64Torch()
        torch.Tensor.float = lambda self, *a, **k: self.to(torch.float64)
    try:
        yield
    finally:
        hf_modeling.torch, torch.Tensor.float = real_torch, real_float


def main(d):
    idx = json.load(open(f"{d}/index.json"))
    data = np.fromfile(f"{d}/data.bin", dtype="<f8")

    def get(e):
        return torch.from_numpy(data[e["offset"] : e["offset"] + e["numel"]].reshape(e["shape"]).copy())

    c = dict(idx["config"])
    rope_dims = c.pop("rope_dims")
    rope_theta = c.pop("rope_theta")
    cfg = Qwen3_5MoeTextConfig(
        **c,
        rope_parameters={"rope_type": "default", "rope_theta": rope_theta,
                         "partial_rotary_factor": rope_dims / c["head_dim"]},
        tie_word_embeddings=False,
    )
    cfg._attn_implementation = "eager"
    if hasattr(cfg, "_experts_implementation"):
        cfg._experts_implementation = "eager"
    state = {e["name"]: get(e) for e in idx["params"]}
    models = {}
    for fp64 in (False, True):
        with float64_internals(fp64):  # the RoPE frequencies are computed at construction
            models[fp64] = Qwen3_5MoeForCausalLM(cfg).to(torch.float64).eval()
        missing, unexpected = models[fp64].load_state_dict(state, strict=False)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    print(f"parameters: {len(state)} from C++, missing in C++ {missing}, not in HF {unexpected}")
    ids = get(idx["input_ids"]).long()
    mask = get(idx["loss_mask"]).bool()[:, 1:]
    ours = get(idx["logits"])
    our_loss = get(idx["loss"]).item()
    ok = not missing and not unexpected
    for fp64, tol in ((False, None), (True, 1e-10)):
        with float64_internals(fp64), torch.no_grad():
            logits = models[fp64](input_ids=ids).logits
        assert logits.dtype == torch.float64
        err = ((logits - ours).norm() / ours.norm()).item()
        nll = -torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
        hf_loss = (nll[mask].sum() / mask.sum()).item()
        label = "HF with float64 internals" if fp64 else "HF as shipped (float32 internals)"
        print(f"{label}: logits relative error {err:.3e}; SFT loss HF {hf_loss:.12f}, recipebench {our_loss:.12f}, "
              f"difference {abs(hf_loss - our_loss):.3e}")
        if tol is not None:
            ok = ok and err < tol and abs(hf_loss - our_loss) < tol
    print("MATCH" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
