#!/usr/bin/env python3
"""Runs Hugging Face transformers' Qwen3_5MoeForCausalLM (float64, CPU, eager attention, torch fallbacks of the
Gated DeltaNet kernels) on the weights and batch written by `torch_model_check --dump DIR`, and compares its
logits and SFT loss with recipebench's C++ model. Loads the weights with strict names: a renamed or reshaped
parameter fails. Usage: hf_compare.py DIR  (exit status 1 when the relative logits error exceeds 1e-10)."""
import json
import sys

import numpy as np
import torch
import transformers
from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig


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
    model = Qwen3_5MoeForCausalLM(cfg).to(torch.float64).eval()
    state = {e["name"]: get(e) for e in idx["params"]}
    missing, unexpected = model.load_state_dict(state, strict=False)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    print(f"parameters: {len(state)} from C++, missing in C++ {missing}, not in HF {unexpected}")
    ids = get(idx["input_ids"]).long()
    mask = get(idx["loss_mask"]).bool()
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    ours = get(idx["logits"])
    err = ((logits - ours).norm() / ours.norm()).item()
    logp = torch.log_softmax(logits[:, :-1], -1)
    nll = -logp.gather(-1, ids[:, 1:, None])[..., 0]
    m = mask[:, 1:]
    hf_loss = (nll[m].sum() / m.sum()).item()
    our_loss = get(idx["loss"]).item()
    print(f"logits relative error (HF vs recipebench): {err:.3e}")
    print(f"SFT loss: HF {hf_loss:.12f}, recipebench {our_loss:.12f}, difference {abs(hf_loss - our_loss):.3e}")
    ok = not missing and not unexpected and err < 1e-10 and abs(hf_loss - our_loss) < 1e-10
    print("MATCH" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
