#!/usr/bin/env bash
# On the GPU machine (python3 with torch and transformers, no network), from the repository root:
#   bash tests/reference/run_on_gpu_machine.sh
# Runs transformers' Qwen3.5 MoE on the committed inputs in tests/data/hf-parity/ and writes
# reference.safetensors and reference.json there, and also into $OUT/ when OUT is set.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=python3
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
"$PY" tests/reference/hf_reference.py --data tests/data/hf-parity --device "${HF_REFERENCE_DEVICE:-cpu}"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp tests/data/hf-parity/reference.safetensors tests/data/hf-parity/reference.json "$OUT"/
  echo "copied reference.safetensors and reference.json to $OUT/"
fi
