#!/usr/bin/env bash
# One lease of two H200 (`nvidia-h200-x2`): the 2-GPU checks of issues 17, 13 and 12 in one call. Run from the
# repository root with .deps/ and .peer/ carried:   RECIPEBENCH_GIT_COMMIT=<commit> bash bench/h200-2gpu.sh
# 1. builds with scripts/gpu-build;
# 2. issue 17: DP2, EP2, TP2 and PP2 of the 35B-A3B proxy (recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-*.yaml, 2 layers,
#    4 steps, seed 7), each run twice: every step's loss and gradient norm of the two records must be equal;
# 3. issue 13: the transformers peer through the command backend (recipes/.../peer-hf-1gpu-bf16.yaml, FLA kernels),
#    its record's tokens/s against the RESULT line the script prints itself;
# 4. issue 12 / 11: the 397B stage-shapes recipe (TP2 EP2) on both GPUs: the memory plan before step 0, the host
#    memory each rank used while building, tokens/s/GPU against its committed 19,531.5.
# Everything is written straight into $OUT/h200-2gpu/ (bench/out/h200-2gpu/ without $OUT), file by file, so that a
# call cut short at the device's limit still brings back what finished. Do not pipe this script into `tail`: a rank
# left running holds the pipe open past the limit (2026-11-30: a call lost all its output that way).
# Each run has its own time limit (RUN_LIMIT seconds, default 90): a hung collective costs one run, not the call.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/out}/h200-2gpu
rm -rf "$out" && mkdir -p "$out"
limit=${RUN_LIMIT:-90}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; time scripts/gpu-build 2>&1 | tail -n 20; } \
  > "$out/build.log" 2>&1
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x build-gpu/recipebench ] || { echo "build failed"; grep -E "error|FAILED" "$out/build.log" | head -30; exit 1; }
rb=build-gpu/recipebench
run() {  # run NAME SECONDS ARGS...: one run into $out/NAME/, log $out/NAME.log; KILL 10 s after the limit's TERM
  local name=$1 seconds=$2; shift 2
  timeout -k 10 "$seconds" "$rb" run "$@" --out "$out/$name" > "$out/$name.log" 2>&1 ||
    { echo "run $name failed:"; tail -n 8 "$out/$name.log"; }
  grep -E "^window|tokens/s/GPU" "$out/$name.log" | tail -n 1
}

echo "== issue 17: 2-GPU layouts, each twice"
for layout in dp2 ep2 tp2 pp2; do
  for i in 1 2; do
    run "$layout-$i" "$limit" recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-$layout-bf16.yaml --nproc 2 --layers 2 --steps 4 \
      --window 1:3 --seed 7
  done
done

echo "== issue 13: the transformers peer through the command backend"
PEER_FLA=2 run peer-command 180 recipes/qwen3.5-35b-a3b/h200/peer-hf-1gpu-bf16.yaml
grep RESULT "$out/peer-command.log" | head -n 1

echo "== issue 12 / 11: 397B stage shapes on 2 GPUs"
run stage-397b 180 recipes/qwen3.5-397b-a17b/h200/stage-shapes-tp2-ep2-2gpu.yaml --nproc 2
grep -iE "plan|peak|rss|host memory" "$out/stage-397b.log" | head -n 30

python3 - "$out" <<'PY' | tee "$out/summary.txt"
import glob, json, sys
out = sys.argv[1]
def rec(name):
    f = glob.glob(f"{out}/{name}/*.json")
    return json.load(open(f[0])) if f else None
for layout in ["dp2", "ep2", "tp2", "pp2"]:
    a, b = rec(f"{layout}-1"), rec(f"{layout}-2")
    if not (a and b):
        print(layout, "missing record"); continue
    same = all(x["loss"] == y["loss"] and x["grad_norm"] == y["grad_norm"] for x, y in zip(a["steps"], b["steps"]))
    print(f"{layout}: {len(a['steps'])} steps, bitwise equal: {same}; losses {[s['loss'] for s in a['steps']]}")
PY
