#!/usr/bin/env bash
# One lease of two H200 (`nvidia-h200-x2`): the 2-GPU checks of issues 12, 15 and 17 in one call. Run from the
# repository root with .deps/ carried:   RECIPEBENCH_GIT_COMMIT=<commit> bash bench/h200-2gpu.sh
# 1. builds with scripts/gpu-build;
# 2. issue 12: the 397B stage-shapes recipe (TP2 EP2) on both GPUs: the memory plan before step 0, the host memory
#    each rank used while building, tokens/s/GPU;
# 3. issues 15 and 17: the 35B-A3B proxy (4 layers, 20 steps, seed 7) on 1 GPU and as DP2, EP2, TP2 and PP2
#    (recipes/qwen3.5-35b-a3b/h200/proxy4l-*-bf16.yaml; PP2 also with balanced stages, 3 + 1 layers), in each
#    setting of the switches that apply (--overlap-grad-reduce, --overlap-param-gather, --ep-dispatch,
#    --overlap-p2p-comm, --overlap-tp-comm: the variants
#    below; VARIANTS picks some), each run twice (every step's loss and gradient norm of the two records must be
#    equal), all first runs before all second runs;
# 4. summary.json: issue 15's fields (the best setting of each layout), every variant's figures, rank 0's step
#    phases (compute and other, exposed TP / EP / DP communication, pipeline waits: steps[].comm_waits) and the
#    repeat checks.
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

# Each variant: NAME RECIPE-SUFFIX ARGS... (recipes/qwen3.5-35b-a3b/h200/proxy4l-<suffix>-bf16.yaml, seed 7); every
# variant runs twice (NAME-1, NAME-2). VARIANTS picks them (default: all, in this order).
declare -A recipe_of args_of
add() { local name=$1 suffix=$2; shift 2; recipe_of[$name]=$suffix; args_of[$name]="$*"; }
add one 1gpu
add dp2 2gpu-dp2
add dp2-rs 2gpu-dp2 --overlap-grad-reduce
add dp2-ag 2gpu-dp2 --overlap-param-gather
add dp2-rs-ag 2gpu-dp2 --overlap-grad-reduce --overlap-param-gather
add ep2 2gpu-ep2
add ep2-rs 2gpu-ep2 --overlap-grad-reduce
add ep2-rs-ag 2gpu-ep2 --overlap-grad-reduce --overlap-param-gather
add ep2-cap 2gpu-ep2 --ep-dispatch fixed_capacity
add ep2-cap-rs 2gpu-ep2 --ep-dispatch fixed_capacity --overlap-grad-reduce
add tp2 2gpu-tp2
add tp2-cap 2gpu-tp2 --ep-dispatch fixed_capacity
add tp2-tpo 2gpu-tp2 --overlap-tp-comm
add tp2-cap-tpo 2gpu-tp2 --ep-dispatch fixed_capacity --overlap-tp-comm
add pp2 2gpu-pp2
add pp2-p2p 2gpu-pp2 --overlap-p2p-comm
add pp2-split31 2gpu-pp2-split31
add pp2-split31-p2p 2gpu-pp2-split31 --overlap-p2p-comm
variants=${VARIANTS:-one dp2 dp2-rs dp2-ag dp2-rs-ag ep2 ep2-rs ep2-rs-ag ep2-cap ep2-cap-rs tp2 tp2-cap tp2-tpo tp2-cap-tpo
  pp2 pp2-p2p pp2-split31 pp2-split31-p2p}
echo "== issues 15 / 17: the 35B-A3B proxy on 1 GPU and in each 2-GPU layout and switch setting, twice each: $variants"
for pass in 1 2; do
  for v in $variants; do
    ranks="--nproc 2"; [ "${recipe_of[$v]}" = 1gpu ] && ranks=""  # one GPU: one process, as a user runs it
    # shellcheck disable=SC2086
    run "$v-$pass" "$proxy/proxy4l-${recipe_of[$v]}-bf16.yaml" $ranks --seed 7 ${args_of[$v]}
  done
done

"$python" - "$out" "$variants" <<'PY' | tee "$out/summary.txt"
import datetime, glob, json, statistics, sys
out, variants = sys.argv[1], sys.argv[2].split()
def rec(name):
    f = glob.glob(f"{out}/{name}/*.json")
    return json.load(open(f[0])) if f else None
def tps(r): return ((r or {}).get("metrics") or {}).get("tokens_per_s_per_gpu")
def cv(r): return ((r or {}).get("metrics") or {}).get("step_time_cv_percent")
def phases(r):
    """Rank 0's mean waits per step over the window (ms) and compute and other = step - waits."""
    if not r: return None
    w = r["settings"]["window"] if "window" in r.get("settings", {}) else None
    steps = [s for s in r["steps"] if "comm_waits" in s and (not w or w[0] <= s["step"] <= w[1])]
    if not steps: return None
    ms = {k: 1e3 * statistics.mean(s["comm_waits"][k + "_seconds"] for s in steps) for k in ("tp", "ep", "dp", "pp")}
    step = 1e3 * statistics.mean(s["seconds"] for s in steps)
    return {"step_ms": step, "compute_and_other_ms": step - sum(ms.values()),
            "exposed_tp_ms": ms["tp"], "exposed_ep_ms": ms["ep"], "exposed_dp_ms": ms["dp"], "pipeline_wait_ms": ms["pp"]}
def loss_gap(r, ref):
    """The largest relative difference of a run's per-step losses from the 1-GPU run's (same seed and rows)."""
    if not (r and ref): return None
    return max(abs(x["loss"] - y["loss"]) / abs(y["loss"]) for x, y in zip(r["steps"], ref["steps"]))
def same(a, b):
    if not (a and b): return None
    return all(x["loss"] == y["loss"] and x["grad_norm"] == y["grad_norm"] for x, y in zip(a["steps"], b["steps"]))
one = [tps(rec("one-1")), tps(rec("one-2"))]
one_gpu = statistics.mean([t for t in one if t]) if any(one) else None
layout_of = lambda v: v.split("-")[0] + ("-split31" if "split31" in v else "")
best_of = {}
runs = []
for v in variants:
    a, b = rec(f"{v}-1"), rec(f"{v}-2")
    gap = loss_gap(a, rec("one-1"))
    row = {"variant": v, "tokens_per_s_per_gpu": [tps(a), tps(b)], "cv_percent": [cv(a), cv(b)],
           "share_of_one_gpu": tps(a) / one_gpu if tps(a) and one_gpu else None, "bitwise_repeat": same(a, b),
           "loss_gap_to_one_gpu": gap, "phases": phases(a)}
    runs.append(row)
    print(f"{v}: {tps(a)} / {tps(b)} tokens/s/GPU, CV {cv(a)} / {cv(b)}, share {row['share_of_one_gpu']}, "
          f"bitwise repeat: {same(a, b)}, loss gap to 1 GPU {gap}, phases {phases(a)}")
    if v == "one" or not tps(a): continue
    L = layout_of(v)
    if L not in best_of or tps(a) > best_of[L]["tokens_per_s_per_gpu"]:
        best_of[L] = {"name": L, "setting": v, "tokens_per_s_per_gpu": tps(a),
                      "share_of_one_gpu": row["share_of_one_gpu"], "cv_percent": cv(a),
                      "repeat_tokens_per_s_per_gpu": tps(b), "repeat_bitwise_equal": same(a, b),
                      "loss_gap_to_one_gpu": gap, "phases": phases(a)}
layouts = list(best_of.values())
stage = rec("stage-397b")
s = {"date": datetime.date.today().isoformat(), "gpu": "NVIDIA H200", "one_gpu_tokens_per_s": one_gpu,
     "one_gpu_runs": one, "one_gpu_bitwise_equal": same(rec("one-1"), rec("one-2")), "layouts": layouts,
     "runs": runs,
     "stage_397b": {"tokens_per_s_per_gpu": tps(stage), "cv_percent": cv(stage), "phases": phases(stage),
                    "model_build": (stage or {}).get("model_build")}}
json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps(s, indent=1))
PY
pack
