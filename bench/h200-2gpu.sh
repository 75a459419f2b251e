#!/usr/bin/env bash
# One lease of two H200 (`nvidia-h200-x2`): the 2-GPU checks of issues 12, 15 and 17 in one call. Run from the
# repository root with .deps/ carried:   RECIPEBENCH_GIT_COMMIT=<commit> bash bench/h200-2gpu.sh
# 1. builds with scripts/gpu-build;
# 2. issue 12: the 397B stage-shapes recipe (TP2 EP2) on both GPUs: the memory plan before step 0, the host memory
#    each rank used while building, tokens/s/GPU;
# 3. issues 15 and 17: the 35B-A3B proxy (4 layers, 20 steps, seed 7) on 1 GPU and as DP2, EP2, TP2 and PP2
#    (recipes/qwen3.5-35b-a3b/h200/proxy4l-*-bf16.yaml; PP2 also with balanced stages, 3 + 1 layers), each run
#    twice (every step's loss and gradient norm of the two records must be equal), DP2 and EP2 also with
#    --overlap-grad-reduce true (what the overlap buys);
# 4. summary.json: issue 15's fields (the best switch setting of each layout) and the repeat checks.
# The device returns at most 8 files: everything is kept in bench/out/h200-2gpu/ and packed into
# $OUT/h200-2gpu.tar.gz after every run, so that a call cut short at the device's limit still brings back what
# finished. Do not pipe this script into `tail`: a rank left running holds the pipe open past the limit.
# Each run has its own time limit (RUN_LIMIT seconds, default 120): a hung collective costs one run, not the call.
# PARTS (default "stage layouts") picks what runs after the build: `PARTS=stage` runs only item 2; "tests" adds the
# GPU tests (ctest -L cuda) before it.
set -uo pipefail
[ -n "${RECIPEBENCH_GIT_COMMIT:-}" ] || echo "note: RECIPEBENCH_GIT_COMMIT is not set: the run records name the copy's HEAD (-dirty where the tree differs)"
cd "$(dirname "$0")/.."
out=bench/out/h200-2gpu
rm -rf "$out" && mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && tar -czf "$OUT/h200-2gpu.tar.gz.tmp" -C bench/out h200-2gpu && mv "$OUT/h200-2gpu.tar.gz.tmp" "$OUT/h200-2gpu.tar.gz"; }
limit=${RUN_LIMIT:-120}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
python=/opt/torch/.venv/bin/python3
[ -x "$python" ] || python=python3
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; time scripts/gpu-build 2>&1 | tail -n 20; } \
  > "$out/build.log" 2>&1
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x build-gpu/recipebench ] || { echo "build failed"; grep -E "error|FAILED" "$out/build.log" | head -30; pack; exit 1; }
rb=build-gpu/recipebench
run() {  # run NAME ARGS...: one run into $out/NAME/, log $out/NAME.log; KILL 10 s after the limit's TERM
  local name=$1; shift
  timeout -k 10 "$limit" "$rb" run "$@" --out "$out/$name" > "$out/$name.log" 2>&1 ||
    { echo "run $name failed:"; tail -n 8 "$out/$name.log"; }
  echo "$name: $(grep -E "^window" "$out/$name.log" | tail -n 1)"
  pack
}
proxy=recipes/qwen3.5-35b-a3b/h200

parts=${PARTS:-stage layouts}
if [[ $parts == *tests* ]]; then
  echo "== GPU tests (ctest -L cuda)"
  timeout 240 ctest --test-dir build-gpu -L cuda --output-on-failure > "$out/ctest-cuda.log" 2>&1
  grep -E "Test +#|tests passed" "$out/ctest-cuda.log"
  pack
fi
if [[ $parts == *stage* ]]; then
echo "== issue 12: 397B stage shapes on 2 GPUs (the memory plan before step 0)"
run stage-397b recipes/qwen3.5-397b-a17b/h200/stage-shapes-tp2-ep2-2gpu.yaml --nproc 2
sed -n '/^memory plan/,/^ *1\/20/p' "$out/stage-397b.log"
fi
[[ $parts == *layouts* ]] || { pack; exit 0; }

echo "== issues 15 / 17: 1 GPU, DP2, EP2, TP2, PP2 (seed 7), twice each; DP2 and EP2 with the overlap too"
run one-1 "$proxy/proxy4l-1gpu-bf16.yaml" --seed 7
for layout in dp2 ep2; do
  run "$layout-1" "$proxy/proxy4l-2gpu-$layout-bf16.yaml" --nproc 2 --seed 7
  run "$layout-overlap-1" "$proxy/proxy4l-2gpu-$layout-bf16.yaml" --nproc 2 --seed 7 --overlap-grad-reduce true
done
for layout in tp2 pp2 pp2-split31; do
  run "$layout-1" "$proxy/proxy4l-2gpu-$layout-bf16.yaml" --nproc 2 --seed 7
  run "$layout-2" "$proxy/proxy4l-2gpu-$layout-bf16.yaml" --nproc 2 --seed 7
done
for layout in dp2 ep2; do
  run "$layout-2" "$proxy/proxy4l-2gpu-$layout-bf16.yaml" --nproc 2 --seed 7
  run "$layout-overlap-2" "$proxy/proxy4l-2gpu-$layout-bf16.yaml" --nproc 2 --seed 7 --overlap-grad-reduce true
done
run one-2 "$proxy/proxy4l-1gpu-bf16.yaml" --seed 7

"$python" - "$out" <<'PY' | tee "$out/summary.txt"
import datetime, glob, json, statistics, sys
out = sys.argv[1]
def rec(name):
    f = glob.glob(f"{out}/{name}/*.json")
    return json.load(open(f[0])) if f else None
def tps(r): return ((r or {}).get("metrics") or {}).get("tokens_per_s_per_gpu")
def cv(r): return ((r or {}).get("metrics") or {}).get("step_time_cv_percent")
def loss_gap(r, ref):
    """The largest relative difference of a run's per-step losses from the 1-GPU run's (same seed and rows)."""
    if not (r and ref): return None
    return max(abs(x["loss"] - y["loss"]) / abs(y["loss"]) for x, y in zip(r["steps"], ref["steps"]))
def same(a, b):
    if not (a and b): return None
    return all(x["loss"] == y["loss"] and x["grad_norm"] == y["grad_norm"] for x, y in zip(a["steps"], b["steps"]))
one = [tps(rec("one-1")), tps(rec("one-2"))]
one_gpu = statistics.mean([t for t in one if t]) if any(one) else None
layouts = []
for layout in ["dp2", "ep2", "tp2", "pp2", "pp2-split31"]:
    variants = [("off", f"{layout}-1", f"{layout}-2")]
    if layout in ("dp2", "ep2"): variants.append(("overlap", f"{layout}-overlap-1", f"{layout}-overlap-2"))
    best = None
    for setting, n1, n2 in variants:
        a, b = rec(n1), rec(n2)
        gap = loss_gap(a, rec("one-1"))
        print(f"{layout} {setting}: {tps(a)} / {tps(b)} tokens/s/GPU, CV {cv(a)} / {cv(b)}, bitwise repeat: {same(a, b)}, "
              f"largest loss gap to 1 GPU {gap}")
        if tps(a) and (best is None or tps(a) > best["tokens_per_s_per_gpu"]):
            best = {"name": layout, "setting": setting, "tokens_per_s_per_gpu": tps(a),
                    "share_of_one_gpu": tps(a) / one_gpu if one_gpu else None,
                    "cv_percent": cv(a),
                    "repeat_tokens_per_s_per_gpu": tps(b), "repeat_bitwise_equal": same(a, b),
                    "loss_gap_to_one_gpu": gap}
    if best: layouts.append(best)
stage = rec("stage-397b")
s = {"date": datetime.date.today().isoformat(), "gpu": "NVIDIA H200", "one_gpu_tokens_per_s": one_gpu,
     "one_gpu_runs": one, "one_gpu_bitwise_equal": same(rec("one-1"), rec("one-2")), "layouts": layouts,
     "stage_397b": {"tokens_per_s_per_gpu": tps(stage), "model_build": (stage or {}).get("model_build")}}
json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps(s, indent=1))
PY
pack
