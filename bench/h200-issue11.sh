#!/usr/bin/env bash
# Issue 11 / 17 benchmark on one H200, everything in one call (machines differ by 10-20% between calls, so only
# ratios from one run count). Run on the GPU machine from the repository root with .deps/ and .peer/ carried:
#   bash bench/h200-issue11.sh
# 1. builds with scripts/gpu-build (CUDA kernels on);
# 2. trains the 35B-A3B proxy (recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml) twice with the same seed
#    (bench.deterministic true: the two records' losses and gradient norms must be bitwise equal), once with
#    --deterministic=false (the switch's cost) and once with --profile;
# 3. runs the GPU tests (ctest -L cuda: GDN kernels, repeatability) and the peer (../shared/peer/peer_hf.py:
#    transformers + FLA Triton kernels) on the same shapes;
# 4. times the libtorch operations of one GDN layer (bench/gdn_layer_ops.py) and our GDN kernels alone against
#    FLA's alone, per kernel with ncu (bench/gdn-kernels.sh);
# 5. writes summary.json (the fields issue 11 names) and tars everything into $OUT/issue11.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
# PHASE=1: build, proxy runs; PHASE=2: GPU tests, peer, GDN kernels, summary (two calls of at most 10 minutes on a
# warm machine; results stay in bench/out/issue11, which both phases tar into $OUT). Unset: both.
phase=${PHASE:-12}
out=bench/out/issue11
mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && tar -czf "$OUT/issue11.tar.gz" -C bench/out issue11; }
trap pack EXIT
python=/opt/torch/.venv/bin/python3
[ -x "$python" ] || python=python3
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
if [[ $phase == *1* ]]; then
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  git rev-parse HEAD 2>/dev/null || true
  time scripts/gpu-build 2>&1 | tail -n 30
} > "$out/build.log" 2>&1
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ ! -x build-gpu/recipebench ]; then
  echo "build failed"; grep -E "error|FAILED" "$out/build.log" | head -40
  exit 1
fi

recipe=recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml
run() {  # run NAME ARGS...: one run into $out/NAME/, log $out/NAME.log
  local name=$1; shift
  timeout 300 build-gpu/recipebench run "$recipe" --seed 7 "$@" --out "$out/$name" > "$out/$name.log" 2>&1 ||
    { echo "run $name failed:"; tail -n 15 "$out/$name.log"; }
  tail -n 4 "$out/$name.log"
}
run repeat-1
run repeat-2
run nondeterministic --deterministic=false
run profile --profile
fi
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[[ $phase == *2* ]] || exit 0

echo "== GPU tests (ctest -L cuda: GDN kernels, per-operation and whole-run repeatability)"
(cd build-gpu && timeout 300 ctest -L cuda --output-on-failure > "../$out/ctest-cuda.log" 2>&1; tail -n 8 "../$out/ctest-cuda.log")

echo "== peer (transformers + FLA)"
PYTHONPATH=.peer PYTHONUNBUFFERED=1 timeout 300 "$python" .peer/peer_hf.py --widths 35b --layers 4 --rows 2 \
  --seq 8192 --fla 2 > "$out/peer.log" 2>&1; grep RESULT "$out/peer.log" || tail -n 15 "$out/peer.log"

echo "== libtorch operations of one GDN layer (bench/gdn_layer_ops.py)"
timeout 120 "$python" bench/gdn_layer_ops.py > "$out/gdn_layer_ops.log" 2>&1; tail -n 11 "$out/gdn_layer_ops.log"

echo "== GDN kernels alone vs FLA"
OUT="$out/gdn" PROFILE=${GDN_PROFILE:-1} timeout 300 bash bench/gdn-kernels.sh "$out/gdn" > "$out/gdn.log" 2>&1; tail -n 8 "$out/gdn.log"

"$python" - "$out" <<'PY' | tee "$out/summary.txt"
import glob, json, sys, datetime
out = sys.argv[1]
def rec(name):
    f = glob.glob(f"{out}/{name}/*.json")
    return json.load(open(f[0])) if f else None
a, b, nd = rec("repeat-1"), rec("repeat-2"), rec("nondeterministic")
same = None
if a and b:
    same = all(x["loss"] == y["loss"] and x["grad_norm"] == y["grad_norm"] for x, y in zip(a["steps"], b["steps"]))
    print("repeat runs bitwise equal (loss, grad norm, every step):", same)
peer = None
for line in open(f"{out}/peer.log"):
    if line.startswith("RESULT"): peer = json.loads(line[len("RESULT"):])
gdn = json.load(open(f"{out}/gdn/gdn_summary.json")) if glob.glob(f"{out}/gdn/gdn_summary.json") else {}
t = next((r for r in gdn.get("timings", []) if r.get("tokens") == "1x8192"), {})
m = a["metrics"] if a and a.get("metrics") else {}
s = {"date": datetime.date.today().isoformat(),
     "gpu": a["environment"]["device"]["name"] if a else None,
     "recipebench_tokens_per_s": m.get("tokens_per_s_per_gpu"),
     "peer_tokens_per_s": peer.get("tokens_per_s") if peer else None,
     "recipebench_peak_gb": m.get("peak_memory_bytes", 0) / 1e9 if m else None,
     "peer_peak_gb": peer.get("peak_mem_gb") if peer else None,
     "gdn_fwd_bwd_ms": t.get("fwd_bwd_ms"), "fla_gdn_fwd_bwd_ms": t.get("fla_fwd_bwd_ms"),
     "recipebench_mfu": m.get("mfu"), "repeat_bitwise_equal": same,
     "nondeterministic_tokens_per_s": (nd or {}).get("metrics", {}).get("tokens_per_s_per_gpu")}
if s["recipebench_tokens_per_s"] and s["peer_tokens_per_s"]:
    s["ratio"] = s["recipebench_tokens_per_s"] / s["peer_tokens_per_s"]
json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps(s, indent=1))
PY
