#!/usr/bin/env bash
# The GPU benchmark of the torch backend (run on the GPU machine from the repository root, with .deps/ carried):
# builds with the venv's libtorch (CUDA), runs the whole CTest suite there, trains the H200 proxy recipe
# (recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml) twice — plain, for the figures, and with --profile for
# the forward / backward / optimizer split — times each layer type alone (torch_model_check --cuda), and produces
# the Hugging Face parity reference. Everything it reports lands in $OUT (or bench/out when OUT is unset).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/out}
mkdir -p "$out"
{
  echo "== host"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  echo "== build"
  time scripts/gpu-build -DRECIPEBENCH_TORCH_TOOLS=ON 2>&1 | tail -n 15
} > "$out/build.log" 2>&1
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x build-gpu/recipebench ] || { echo "build failed"; tail -n 40 "$out/build.log"; exit 1; }
recipe=recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml
build-gpu/recipebench run "$recipe" --out "$out" 2>&1 | tee "$out/run.log"
# SKIP_REFERENCE=1 / SKIP_LAYERS=1 leave out the parts whose results are already committed (shorter calls).
[ "${SKIP_REFERENCE:-0}" = 1 ] || OUT="$out" bash tests/reference/run_on_gpu_machine.sh > "$out/hf_reference.log" 2>&1 ||
  tail -n 20 "$out/hf_reference.log"
build-gpu/recipebench run "$recipe" --profile --out bench/profile-run 2>&1 | tail -n 4 > "$out/breakdown.log"
python3 - bench/profile-run/*.json >> "$out/breakdown.log" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
w0, w1 = rec["settings"]["window"]
steps = rec["steps"][w0:w1 + 1]
n = len(steps)
tot = sum(s["seconds"] for s in steps) / n
for k in ("forward_seconds", "backward_seconds", "optimizer_seconds"):
    v = sum(s["phases"][k] for s in steps) / n
    print(f"{k:20s} {v * 1e3:9.1f} ms  {100 * v / tot:5.1f}% of the {tot * 1e3:.1f} ms step (profiled run)")
PY
echo "== each layer type alone (torch_model_check --cuda)" >> "$out/breakdown.log"
# CPU tests in parallel: 2 OpenMP threads each, or 8 libtorch processes x 16 threads oversubscribe the 16 cores.
(cd build-gpu && OMP_NUM_THREADS=2 timeout "${CTEST_TIMEOUT:-150}" ctest -j8 --output-on-failure -E 'browser' > "$out/ctest.log" 2>&1; tail -n 5 "$out/ctest.log")
[ "${SKIP_LAYERS:-0}" = 1 ] || [ ! -x build-gpu/backends/torch/torch_model_check ] || timeout 120 build-gpu/backends/torch/torch_model_check --cuda >> "$out/breakdown.log" 2>&1
ls -la "$out"
