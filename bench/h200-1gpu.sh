#!/usr/bin/env bash
# One lease of one H200 (`nvidia-h200`): the 1-GPU checks of issues 11, 13 and 17 in one call. Run from the
# repository root with .deps/ and .peer/ carried:   RECIPEBENCH_GIT_COMMIT=<commit> bash bench/h200-1gpu.sh
# 1. builds with scripts/gpu-build (CUDA kernels on); SMOKE=1 adds a 1-layer 3-step run (the model build time);
# 2. the GPU tests (ctest -L cuda): the GDN, conv1d + SiLU, gated RMSNorm and cross-entropy kernels against FP64 and
#    the libtorch-ops path, per-operation and whole-run repeatability, the fused kernels following the ops path;
# 3. the 35B-A3B proxy (recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml, seed 7): a 1-layer smoke run (the model
#    build's time), the fused kernels, --kernels ops (what the kernels buy; loss correlation), --profile (the
#    per-component table); bitwise repeatability is ctest's repeat_gpu test;
# 4. issue 13: the transformers + FLA peer through the command backend (peer-hf-1gpu-bf16.yaml, PEER_FLA=2), its
#    record's tokens/s against the RESULT line the script prints; then `recipebench report` over the records: the
#    leaderboard with both stacks side by side;
# 5. the GDN kernels alone against FLA's on the same shapes (bench/gdn-kernels.sh); the optimizer step alone, our
#    AdamW kernels against libtorch's (adamw_bench); the attention core alone in each of libtorch's fused attention
#    backends (bench/attention_probe.py);
# 6. summary.json (the fields issue 11 names).
# PARTS picks the parts after the build (default "tests proxy ops adamw profile peer gdn attention"): tests (2),
# proxy (the fused run), ops, profile, peer (4), gdn, adamw, attention (5); two more on request: nondet (the fused
# run with --deterministic=false: what bitwise repeatability costs) and kernels (Nsight Compute's per-kernel time of
# a 3-step fused run, summed by kernel: bench/kernel_table.py; NCU_SECONDS limits it, default 170). SMOKE=1 adds a 1-layer 3-step run.
# Time on one H200 (2026-12-01): build about 110 s; PARTS="proxy ops profile peer gdn adamw" 463 s in all; tests
# about 65 s and attention about 30 s more, and gdn about 40 s more since FLA runs in three processes: the default
# PARTS comes to about 600 s, the device's limit for one command, so split it over two calls.
# The device returns at most 8 files: everything is kept in bench/out/h200-1gpu/ and packed into
# $OUT/h200-1gpu.tar.gz after every part, so that a call cut short at the device's limit still brings back what
# finished. Do not pipe this script into `tail`.
set -uo pipefail
[ -n "${RECIPEBENCH_GIT_COMMIT:-}" ] || echo "note: RECIPEBENCH_GIT_COMMIT is not set: the run records name the copy's HEAD (-dirty where the tree differs)"
cd "$(dirname "$0")/.."
out=bench/out/h200-1gpu
rm -rf "$out" && mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && tar -czf "$OUT/h200-1gpu.tar.gz.tmp" -C bench/out h200-1gpu && mv "$OUT/h200-1gpu.tar.gz.tmp" "$OUT/h200-1gpu.tar.gz"; }
python=/opt/torch/.venv/bin/python3
[ -x "$python" ] || python=python3
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset} nproc=$(nproc)"; time scripts/gpu-build 2>&1 | tail -n 20; } \
  > "$out/build.log" 2>&1
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x build-gpu/recipebench ] || { echo "build failed"; grep -E "error|FAILED" "$out/build.log" | head -30; pack; exit 1; }
rb=build-gpu/recipebench
parts=" ${PARTS:-tests proxy ops adamw profile peer gdn attention} "
want() { [[ $parts == *" $1 "* ]]; }
recipe=recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml
run() {  # run NAME SECONDS ARGS...: one run into $out/NAME/, log $out/NAME.log; KILL 10 s after the limit's TERM
  local name=$1 seconds=$2; shift 2
  timeout -k 10 "$seconds" "$rb" run "$@" --out "$out/$name" > "$out/$name.log" 2>&1 ||
    { echo "run $name failed:"; tail -n 8 "$out/$name.log"; }
  grep -E "^window" "$out/$name.log" | tail -n 1
  pack
}

if [ "${SMOKE:-0}" = 1 ]; then
  echo "== smoke: 1 layer, 3 steps (model build time in the record)"
  run smoke 150 "$recipe" --seed 7 --layers 1 --steps 3 --window 1:2
  "$python" -c 'import glob, json, sys; [print("model_build", json.load(open(f)).get("model_build")) for f in glob.glob(sys.argv[1] + "/smoke/*.json")]' "$out"
fi

if want tests; then
  echo "== GPU tests (ctest -L cuda)"
  timeout 300 ctest --test-dir build-gpu -L cuda --output-on-failure > "$out/ctest-cuda.log" 2>&1
  grep -E "Test +#|tests passed|loss correlation" "$out/ctest-cuda.log"
  pack
fi

want proxy && { echo "== proxy: fused"; run fused-1 150 "$recipe" --seed 7; }
want ops && { echo "== proxy: ops"; run ops 200 "$recipe" --seed 7 --kernels ops; }
want nondet && { echo "== proxy: fused, --deterministic=false"; run nondet 150 "$recipe" --seed 7 --deterministic=false; }

if want adamw; then
  echo "== the optimizer step alone: fused AdamW kernels against libtorch (1e9 BF16 parameters)"
  timeout 120 build-gpu/backends/torch/adamw_bench --params 1e9 --steps 10 > "$out/adamw-bench.log" 2>&1 ||
    echo "adamw_bench: exit $?"
  cat "$out/adamw-bench.log"
  pack
fi

if want profile; then
  echo "== proxy: profile"
  run profile 150 "$recipe" --seed 7 --profile
  grep -A 8 "^profile, mean" "$out/profile.log"
fi

if want peer; then
  echo "== issue 13: the transformers + FLA peer through the command backend"
  PEER_FLA=2 run peer-command 240 recipes/qwen3.5-35b-a3b/h200/peer-hf-1gpu-bf16.yaml
  grep -h RESULT "$out/peer-command.log" "$out"/peer-command/*.log 2>/dev/null | head -n 1
  records=$(ls -d "$out"/fused-1 "$out"/ops "$out"/nondet "$out"/peer-command 2>/dev/null)
  # shellcheck disable=SC2086  # one argument per record folder
  "$rb" report $records --out "$out/leaderboard" > "$out/report.log" 2>&1 || tail -n 5 "$out/report.log"
fi

if want gdn; then
  echo "== the GDN kernels alone against FLA's (1 x 8,192 tokens and more, 35B widths)"
  timeout 300 bash bench/gdn-kernels.sh "$out/gdn" > "$out/gdn.log" 2>&1 || echo "gdn-kernels.sh: exit $?"
  grep -A 6 "^tokens" "$out/gdn/gdn-kernels.log" 2>/dev/null | head -n 16
  pack
fi

"$python" - "$out" <<'PY' | tee "$out/summary.txt"
import glob, json, math, sys, datetime
out = sys.argv[1]
def rec(name):
    f = glob.glob(f"{out}/{name}/*.json")
    return json.load(open(f[0])) if f else None
a, ops, peer, nondet = rec("fused-1"), rec("ops"), rec("peer-command"), rec("nondet")
corr = None
if a and ops:
    x, y = [s["loss"] for s in a["steps"]], [s["loss"] for s in ops["steps"]]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((p - mx) * (q - my) for p, q in zip(x, y))
    corr = sxy / math.sqrt(sum((p - mx) ** 2 for p in x) * sum((q - my) ** 2 for q in y))
    print(f"fused vs ops: loss correlation {corr:.6f}, final loss {x[-1]:.6f} vs {y[-1]:.6f}")
m = lambda r: (r or {}).get("metrics") or {}
printed = None
for f in glob.glob(f"{out}/peer-command.log") + glob.glob(f"{out}/peer-command/*.log"):  # absent without the peer
    for line in open(f, errors="replace"):
        if line.startswith("RESULT"): printed = json.loads(line[len("RESULT"):])
s = {"date": datetime.date.today().isoformat(),
     "gpu": a["environment"]["device"]["name"] if a else None,
     "recipebench_tokens_per_s": m(a).get("tokens_per_s_per_gpu"),
     "recipebench_ops_tokens_per_s": m(ops).get("tokens_per_s_per_gpu"),
     "recipebench_nondeterministic_tokens_per_s": m(nondet).get("tokens_per_s_per_gpu"),
     "peer_tokens_per_s": m(peer).get("tokens_per_s_per_gpu"),
     "peer_printed_tokens_per_s": (printed or {}).get("tokens_per_s"),
     "recipebench_peak_gb": m(a).get("peak_memory_bytes", 0) / 1e9 if m(a) else None,
     "peer_peak_gb": m(peer).get("peak_memory_bytes", 0) / 1e9 if m(peer).get("peak_memory_bytes") else None,
     "peer_printed_peak_gb": (printed or {}).get("peak_mem_gb"),
     "recipebench_mfu": m(a).get("mfu"), "fused_vs_ops_loss_correlation": corr,
     "model_build": (a or {}).get("model_build")}
adamw = {}
try:
    adamw = json.loads(open(f"{out}/adamw-bench.log").read().strip().splitlines()[-1])
except (OSError, ValueError, IndexError):
    pass
s["optimizer_bench"] = adamw or None
gdn = {}
try:
    gdn = json.load(open(f"{out}/gdn/gdn_summary.json"))
except (OSError, ValueError):
    pass
row = next((r for r in gdn.get("timings", []) if r.get("tokens") == "1x8192" and "fla_fwd_bwd_ms" in r), {})
s["gdn_fwd_bwd_ms"], s["fla_gdn_fwd_bwd_ms"] = row.get("fwd_bwd_ms"), row.get("fla_fwd_bwd_ms")
s["gdn_checks_pass"] = gdn.get("checks_pass")
if s["recipebench_tokens_per_s"] and s["peer_tokens_per_s"]:
    s["ratio"] = s["recipebench_tokens_per_s"] / s["peer_tokens_per_s"]
json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps(s, indent=1))
PY
pack

if want kernels; then
  echo "== proxy under Nsight Compute: kernel time per step by kernel (3 steps)"
  timeout -k 10 "${NCU_SECONDS:-170}" ncu --clock-control none --target-processes all --metrics gpu__time_duration.sum \
    --print-units base --csv "$rb" run "$recipe" --seed 7 --steps 3 --window 1:2 --out "$out/kernels" \
    > "$out/kernels-ncu.csv" 2> "$out/kernels-ncu.err" || echo "ncu: exit $?"
  "$python" bench/kernel_table.py "$out/kernels-ncu.csv" 3 --top 50 --json "$out/kernels.json" \
    --step-end adamw_chunks > "$out/kernels.txt" 2>&1
  head -n 45 "$out/kernels.txt"
  gzip -f "$out/kernels-ncu.csv"
  pack
fi

if want attention; then
  echo "== the attention core alone: libtorch's fused attention backends at the layer's shapes"
  PYTHONUNBUFFERED=1 timeout 120 "$python" bench/attention_probe.py 10 > "$out/attention-probe.log" 2>&1 ||
    echo "attention_probe.py: exit $?"
  grep -E "^torch|^PROBE" "$out/attention-probe.log"
  pack
fi
