#!/usr/bin/env bash
# The multi-GPU benchmark of the torch backend (issue 4; run on a GPU machine with 2 or more H200s, from the
# repository root, with .deps/ carried): builds with the venv's libtorch (CUDA, c10d NCCL), checks NCCL parity on
# the tiny model (DP2, EP2, TP2 and PP2 on two GPUs against one GPU, float32), then trains the 4-layer
# Qwen3.5-35B-A3B proxy on 1 GPU and on 2 GPUs (DP2, EP2 DP2, TP2, PP2) with about the same per-GPU work, for the
# scaling efficiency. PARITY, RUNS and BUILD (below) choose parts, for calls that fit the device's time limit. On 4
# GPUs: PARITY="dp4:tiny-dp4.yaml ep4:tiny-ep4-dp4.yaml tp2pp2:tiny-tp2-pp2-vpp2.yaml" RUNS="proxy4l-1gpu-bf16
# proxy4l-4gpu-dp4-bf16 proxy4l-4gpu-ep4-bf16 proxy4l-4gpu-tp2-pp2-bf16" (issue 4's 4-GPU target, issue 5's TP2 PP2). Every result lands
# in $OUT (or bench/out when OUT is unset): build.log, parity.txt, summary.txt and results.tgz (every log, run
# record and parameter dump; the device tool brings back at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
final=${OUT:-bench/out}
out=bench/out-multi
rm -rf "$out" && mkdir -p "$out/runs" "$final"
trap 'cp "$out"/build.log "$out"/parity.txt "$out"/summary.txt "$final"/ 2>/dev/null; tar czf "$final/results.tgz" -C "$out" .' EXIT
# NVLink multicast stays off on these machines (device README): keep it off in every rank.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{
  echo "== host"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  nvidia-smi topo -m 2>&1 | head -n 8
  echo "== build"
  # BUILD=0 keeps a build-gpu/ left by an earlier call on the same (warm) machine.
  if [ "${BUILD:-1}" = 1 ] || [ ! -x build-gpu/recipebench ]; then time scripts/gpu-build 2>&1 | tail -n 15; fi
} > "$out/build.log" 2>&1
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x build-gpu/recipebench ] || { echo "build failed"; tail -n 40 "$out/build.log"; exit 1; }
gpus=$(nvidia-smi -L | wc -l)

# 1. NCCL parity: the tiny model (tests/data/dist), float32 on the GPUs, 5 steps, against one GPU.
parity() {  # name fixture
  RECIPEBENCH_DUMP_PARAMS="$out/parity-$1.bin" timeout 180 build-gpu/recipebench run "tests/data/dist/$2" \
    --device cuda --steps 5 --window 1:4 --out "$out/parity-$1" > "$out/parity-$1.log" 2>&1
  echo "$1 exit $?"
}
{
  # PARITY: the layouts to check against one GPU (name:fixture), default DP2, EP2, TP2 and PP2 on two GPUs.
  parity one tiny-dp1.yaml
  for p in ${PARITY:-dp2:tiny-dp2.yaml ep2:tiny-ep2-dp2.yaml tp2:tiny-tp2.yaml pp2:tiny-pp2.yaml}; do
    parity "${p%%:*}" "${p#*:}"
  done
  python3 - "$out" <<'PY'
import glob, json, sys
import numpy as np
out = sys.argv[1]
def load(name):
    rec = json.load(open(glob.glob(f"{out}/parity-{name}/*.json")[0]))
    return [s["loss"] for s in rec["steps"]], np.fromfile(f"{out}/parity-{name}.bin", dtype=np.float64)
l1, p1 = load("one")
for f in sorted(glob.glob(f"{out}/parity-*.bin")):
    name = f.split("parity-")[1][:-4]
    if name == "one":
        continue
    try:
        l, p = load(name)
    except Exception as e:
        print(f"{name}: no result ({e})"); continue
    dl = max(abs(a - b) / abs(b) for a, b in zip(l, l1))
    dp = float(np.linalg.norm(p.astype(np.float64) - p1) / np.linalg.norm(p1))
    print(f"{name} vs 1 GPU: worst relative loss difference {dl:.2e}, parameters relative L2 {dp:.2e}"
          f" -> {'PASS' if dl < 1e-5 and dp < 1e-5 else 'FAIL'} (bounds 1e-5)")
PY
} > "$out/parity.txt" 2>&1
cat "$out/parity.txt"

# 2. The proxy: one GPU, then two (DP2, EP2 DP2, TP2, PP2); each record under $out/runs.
# RUNS: the recipes of recipes/qwen3.5-35b-a3b/h200/ to train, default all five.
for r in ${RUNS:-proxy4l-1gpu-bf16 proxy4l-2gpu-dp2-bf16 proxy4l-2gpu-ep2-bf16 proxy4l-2gpu-tp2-bf16 proxy4l-2gpu-pp2-bf16}; do
  timeout 240 build-gpu/recipebench run "recipes/qwen3.5-35b-a3b/h200/$r.yaml" --out "$out/runs" > "$out/$r.log" 2>&1
  echo "$r exit $?"; tail -n 3 "$out/$r.log"
done
python3 - "$out" > "$out/summary.txt" <<'PY'
import glob, json, sys
out = sys.argv[1]
rows = []
for f in sorted(glob.glob(f"{out}/runs/*.json")):
    r = json.load(open(f))
    if r["status"] != "complete":
        print(f"{f}: {r['status']}: {r['error']}"); continue
    m = r["metrics"]; mfu = m.get("mfu"); peak = m["peak_memory_bytes"] / 1e9
    rows.append((r["recipe"]["document"]["layout"]["label"], r["environment"]["device"]["count"],
                 m["tokens_per_s_per_gpu"], mfu, m["step_time_cv_percent"], m["mean_step_seconds"], peak))
base = next((x[2] for x in rows if x[1] == 1), None)
print(f"{'layout':18s} {'GPUs':>4s} {'tokens/s/GPU':>13s} {'MFU':>6s} {'CV %':>6s} {'step s':>7s} {'peak GB':>8s} {'scaling':>8s}")
for label, n, tps, mfu, cv, step, peak in rows:
    eff = f"{100 * tps / base:.1f}%" if base else "-"
    print(f"{label:18s} {n:4d} {tps:13.1f} {100 * (mfu or 0):5.1f}% {cv:6.2f} {step:7.3f} {peak:8.1f} {eff:>8s}")
PY
cat "$out/summary.txt"
