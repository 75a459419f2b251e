#!/usr/bin/env python3
"""Hugging Face reference of recipebench's parity check (tests/reference/README.md).

Loads tests/data/hf-parity/{config.json, weights.safetensors, batch.safetensors} (written by recipebench's
`recipebench_hf_reference_inputs`) into transformers' Qwen3_5MoeForCausalLM in float32 -- eager attention, eager
experts, and the torch reference implementations of the Gated DeltaNet (torch_chunk_gated_delta_rule, the conv1d
fallback; never flash-linear-attention, causal-conv1d or hub kernels) -- with strict name matching, runs the batch
and writes
  reference.safetensors  logits float32 [batch, seq, vocab]
  reference.json         the SFT loss (recipebench's convention, see below), versions, device, date, command,
                         the SHA-256 of the three inputs, and checks made on the way
The SFT loss follows recipebench's Qwen35MoeForCausalLM::sft_loss: position t predicts input_ids[:, t+1], counted
where loss_mask[:, t+1]; mean over the supervised tokens (log-softmax of the float32 logits, here in float64).
transformers' own loss (labels = input_ids, -100 where unsupervised) is computed too and must agree.

usage: hf_reference.py [--data DIR] [--out DIR] [--device cpu|cuda]
Exit status 1 (with a message) when a check fails: names that do not match, a kernel that is not the torch one,
the two losses disagreeing.
"""
import argparse
import datetime
import hashlib
import importlib.util
import inspect
import json
import os
import platform
import shlex
import struct
import sys

# Element sizes of the safetensors dtypes the inputs use (and a few more).
_DTYPE_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def fail(msg):
    print(f"hf_reference.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


def check_layout(path):
    """Checks a safetensors file against the format (the rules of the reference implementation) without torch:
    header size, JSON object, known dtypes, offsets matching the shapes and covering the data buffer exactly.
    Returns {name: (dtype, shape)} and the metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        fail(f"{path}: {len(raw)} bytes, too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        fail(f"{path}: header size {n} beyond the file ({len(raw)} bytes)")
    header = json.loads(raw[8 : 8 + n].decode("utf-8"))
    data_size = len(raw) - 8 - n
    meta = header.pop("__metadata__", {})
    spans, out = [], {}
    for name, e in header.items():
        size = _DTYPE_SIZES.get(e["dtype"])
        if size is None:
            fail(f"{path}: tensor {name}: unexpected dtype {e['dtype']}")
        numel = 1
        for s in e["shape"]:
            numel *= s
        b, end = e["data_offsets"]
        if not 0 <= b <= end <= data_size or end - b != numel * size:
            fail(f"{path}: tensor {name}: data_offsets {e['data_offsets']} do not hold shape {e['shape']} of {e['dtype']}")
        spans.append((b, end, name))
        out[name] = (e["dtype"], e["shape"])
    covered = 0
    for b, end, name in sorted(spans):
        if b != covered:
            fail(f"{path}: tensor {name} starts at byte {b} of the data, expected {covered} (gap or overlap)")
        covered = end
    if covered != data_size:
        fail(f"{path}: the tensors cover {covered} of the {data_size} data bytes")
    return out, meta


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class _Counted:
    """Calls `fn` and counts the calls (to show that the torch reference kernels did run)."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0
        self.__name__ = getattr(fn, "__name__", "fn")

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


def force_torch_kernels(modeling):
    """transformers resolves the Gated DeltaNet kernels when the modeling module is imported: the module attributes
    torch_chunk_gated_delta_rule, torch_recurrent_gated_delta_rule, causal_conv1d_fn and causal_conv1d_update are
    wrappers (functools.wraps of the torch function) that call flash-linear-attention / causal-conv1d when those are
    installed. Replace each with the torch function defined in the modeling file itself, counting its calls."""
    modeling_file = os.path.realpath(modeling.__file__)
    counted = {}
    for name in ("torch_chunk_gated_delta_rule", "torch_recurrent_gated_delta_rule", "causal_conv1d_fn",
                 "causal_conv1d_update"):
        fn = getattr(modeling, name, None)
        if fn is None:
            if name == "torch_chunk_gated_delta_rule":
                fail(f"{modeling.__name__} has no {name}: this transformers version is not supported by the script")
            print(f"  note: {modeling.__name__} has no {name}")
            continue
        base = inspect.unwrap(fn)
        code = getattr(base, "__code__", None)
        if code is None or os.path.realpath(code.co_filename) != modeling_file:
            fail(f"cannot find the torch implementation of {name} (unwrapped to {base!r})")
        counted[name] = _Counted(base)
        setattr(modeling, name, counted[name])
        print(f"  {name}: torch implementation from {os.path.basename(modeling_file)} line {code.co_firstlineno}"
              + ("" if base is fn else " (replacing the kernel-dispatch wrapper)"))
    return counted


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_data = os.path.normpath(os.path.join(here, "..", "data", "hf-parity"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=default_data, help="folder with config.json, weights/batch.safetensors")
    ap.add_argument("--out", default=None, help="folder for reference.safetensors/.json (default: --data)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args()
    out_dir = args.out or args.data
    paths = {f: os.path.join(args.data, f) for f in ("config.json", "weights.safetensors", "batch.safetensors")}
    for f, p in paths.items():
        if not os.path.exists(p):
            fail(f"{p} is missing: write it with recipebench's `recipebench_hf_reference_inputs`")

    print(f"inputs in {args.data}:")
    w_layout, w_meta = check_layout(paths["weights.safetensors"])
    b_layout, b_meta = check_layout(paths["batch.safetensors"])
    print(f"  weights.safetensors: {len(w_layout)} tensors, layout valid; metadata {w_meta}")
    print(f"  batch.safetensors: {b_layout}")

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    import transformers
    import transformers.models.qwen3_5_moe.modeling_qwen3_5_moe as modeling
    from safetensors.torch import load_file, save_file
    from transformers.models.qwen3_5_moe.configuration_qwen3_5_moe import Qwen3_5MoeTextConfig

    Qwen3_5MoeForCausalLM = modeling.Qwen3_5MoeForCausalLM

    print(f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}")
    optional = {p: importlib.util.find_spec(p) is not None for p in ("fla", "causal_conv1d", "kernels")}
    print(f"optional kernel packages installed (not used): {optional}")
    print("Gated DeltaNet kernels:")
    counted = force_torch_kernels(modeling)

    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            fail("--device cuda but torch.cuda.is_available() is False")
        torch.backends.cuda.matmul.allow_tf32 = False  # true float32 matmuls and convolutions
        torch.backends.cudnn.allow_tf32 = False
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({platform.processor() or platform.machine()})"

    with open(paths["config.json"]) as f:
        config_dict = json.load(f)
    cfg = Qwen3_5MoeTextConfig.from_dict(config_dict)
    cfg._attn_implementation = "eager"
    if hasattr(type(cfg), "_experts_implementation"):
        cfg._experts_implementation = "eager"
    torch.manual_seed(0)  # the initial values are all overwritten below
    model = Qwen3_5MoeForCausalLM(cfg)
    # Eager attention and experts everywhere (the config objects of the submodules may be copies).
    for m in model.modules():
        c = getattr(m, "config", None)
        if c is not None and hasattr(c, "_attn_implementation"):
            if c._attn_implementation != "eager":
                c._attn_implementation = "eager"
            if getattr(c, "_experts_implementation", None) not in (None, "eager"):
                c._experts_implementation = "eager"
    impls = {(getattr(m.config, "_attn_implementation", None), getattr(m.config, "_experts_implementation", None))
             for m in model.modules() if getattr(m, "config", None) is not None}
    print(f"attention / experts implementations of the modules: {sorted(impls, key=str)}")
    if any(a != "eager" or e not in (None, "eager") for a, e in impls):
        fail(f"could not make every module use eager attention and experts: {impls}")
    # Older modeling code (transformers 4.x) keeps the kernels as attributes of each Gated DeltaNet instead.
    for m in model.modules():
        if type(m).__name__.endswith("GatedDeltaNet"):
            attrs = vars(m)
            if "chunk_gated_delta_rule" in attrs:
                m.chunk_gated_delta_rule = counted["torch_chunk_gated_delta_rule"]
            if "recurrent_gated_delta_rule" in attrs and "torch_recurrent_gated_delta_rule" in counted:
                m.recurrent_gated_delta_rule = counted["torch_recurrent_gated_delta_rule"]
            if "causal_conv1d_fn" in attrs:
                m.causal_conv1d_fn = None  # the torch path: self.conv1d
            if "causal_conv1d_update" in attrs:
                m.causal_conv1d_update = getattr(modeling, "torch_causal_conv1d_update", None)
    model = model.to(device=device, dtype=torch.float32).eval()
    rot = model.model.rotary_emb
    rope_dims = 2 * rot.inv_freq.numel()
    print(f"model: {type(model).__name__}, layer types {cfg.layer_types}, RoPE on {rope_dims} of {cfg.head_dim} "
          f"head dims, rope_parameters {getattr(cfg, 'rope_parameters', None)}, tie_word_embeddings {cfg.tie_word_embeddings}")
    expected_rope = round(config_dict["partial_rotary_factor"] * config_dict["head_dim"])
    if rope_dims != expected_rope:
        fail(f"transformers applies RoPE to {rope_dims} dims, config.json asks for {expected_rope}")

    # Weights: strict name and shape matching.
    state = load_file(paths["weights.safetensors"])
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = sorted(f"{k}: file {list(state[k].shape)}, model {list(own[k].shape)}"
                    for k in set(state) & set(own) if state[k].shape != own[k].shape)
    print(f"weights: {len(state)} tensors in the file, {len(own)} in the model's state_dict; missing {missing}, "
          f"unexpected {unexpected}, wrong shape {shapes}")
    if missing or unexpected or shapes:
        fail("the weights do not match the model's names and shapes")
    model.load_state_dict(state, strict=True)
    params = dict(model.named_parameters())
    if params["lm_head.weight"].data_ptr() == params["model.embed_tokens.weight"].data_ptr():
        fail("lm_head is tied to the embedding")
    differ = [k for k, v in model.state_dict().items() if not torch.equal(v.cpu(), state[k].float())]
    if differ:
        fail(f"after loading, these tensors differ from the file: {differ}")
    print(f"weights loaded: all {len(state)} tensors equal to the file (dtype {next(model.parameters()).dtype})")

    batch = load_file(paths["batch.safetensors"])
    ids = batch["input_ids"].to(device=device, dtype=torch.long)
    mask = batch["loss_mask"].to(device=device).bool()
    labels = ids.masked_fill(~mask, -100)

    margins = []

    def router_hook(_module, _inputs, output):
        logits = output[0] if isinstance(output, tuple) else output
        top = torch.softmax(logits.double(), -1).topk(cfg.num_experts_per_tok + 1, dim=-1).values
        margins.append((top[:, -2] - top[:, -1]).min().item())

    for m in model.modules():
        if type(m).__name__.endswith("TopKRouter"):
            m.register_forward_hook(router_hook)

    with torch.no_grad():
        out = model(input_ids=ids, labels=labels, use_cache=False)
    logits = out.logits
    if logits.dtype != torch.float32 or list(logits.shape) != [*ids.shape, cfg.vocab_size]:
        fail(f"unexpected logits {logits.dtype} {list(logits.shape)}")
    calls = {k: v.calls for k, v in counted.items()}
    n_linear = sum(t == "linear_attention" for t in cfg.layer_types)
    print(f"forward on {device_name}: logits {list(logits.shape)} float32; torch kernel calls {calls}")
    if calls.get("torch_chunk_gated_delta_rule") != n_linear:
        fail(f"expected {n_linear} calls of torch_chunk_gated_delta_rule (one per linear-attention layer)")

    # recipebench's SFT loss convention.
    logp = torch.log_softmax(logits[:, :-1].double(), dim=-1)
    nll = -logp.gather(-1, ids[:, 1:, None])[..., 0]
    sup = mask[:, 1:]
    loss = (nll[sup].sum() / sup.sum()).item()
    hf_loss = out.loss.item()
    rel = abs(hf_loss - loss) / abs(loss)
    print(f"SFT loss over {int(sup.sum())} supervised tokens: {loss:.12f} (transformers' own loss from labels "
          f"{hf_loss:.9f}, relative difference {rel:.2e})")
    if rel > 1e-5:
        fail("transformers' loss and the recipebench-convention loss disagree: the convention is misunderstood")
    if margins:
        print(f"smallest top-{cfg.num_experts_per_tok} routing margin over {len(margins)} MoE layers: "
              f"{min(margins):.3e} (probability gap between the last chosen and the first unchosen expert)")
    rb = b_meta.get("recipebench_loss_fp32")
    if rb is not None:
        print(f"recipebench's loss when the inputs were written: {float(rb):.9f} "
              f"(relative difference {abs(float(rb) - loss) / abs(loss):.2e}; the C++ test checks < 1e-4)")

    os.makedirs(out_dir, exist_ok=True)
    ref_st = os.path.join(out_dir, "reference.safetensors")
    ref_json = os.path.join(out_dir, "reference.json")
    save_file({"logits": logits.detach().float().cpu().contiguous()}, ref_st,
              metadata={"format": "pt", "producer": "tests/reference/hf_reference.py", "loss": repr(loss)})
    record = {
        "loss": loss,
        "loss_transformers_labels": hf_loss,
        "logits": {"file": "reference.safetensors", "tensor": "logits", "dtype": "float32",
                   "shape": list(logits.shape)},
        "loss_convention": "position t predicts input_ids[:, t+1], counted where loss_mask[:, t+1]; mean over the "
                           "supervised tokens; log-softmax of the float32 logits computed in float64",
        "supervised_tokens": int(sup.sum()),
        "model": f"transformers {type(model).__name__} from config.json, float32, eval mode",
        "attn_implementation": "eager",
        "experts_implementation": "eager",
        "gated_deltanet_kernels": {k: f"torch reference in {os.path.basename(modeling.__file__)}, {v} calls"
                                   for k, v in calls.items()},
        "optional_kernel_packages_installed": optional,
        "min_router_top_k_margin": min(margins) if margins else None,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": device_name,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": shlex.join([sys.executable] + sys.argv),
        "inputs_sha256": {f: sha256(p) for f, p in paths.items()},
    }
    with open(ref_json, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    print(f"wrote {ref_st} (logits float32 {list(logits.shape)}) and {ref_json} (loss {loss:.12f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
