#!/usr/bin/env bash
# Repeatability and cost of the torch backend's training step on one H200 (issues 11 and 17). Run on the GPU machine
# from the repository root with .deps/ carried. Builds with scripts/gpu-build, trains the H200 proxy recipe
# (recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml) twice with the same seed and compares the two run records'
# losses and gradient norms bit for bit (prints IDENTICAL or the first difference), once with
# bench.deterministic false (the switch's cost in tokens/s), and once with --profile (the phase split).
# Everything lands in $OUT (bench/out when OUT is unset). SEED, STEPS and WINDOW override 7, 8 and 2:7.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/out}
mkdir -p "$out"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  time scripts/gpu-build 2>&1 | tail -n 15
} > "$out/build.log" 2>&1
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x build-gpu/recipebench ] || { echo "build failed"; tail -n 40 "$out/build.log"; exit 1; }
recipe=recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml
args=(--steps "${STEPS:-8}" --window "${WINDOW:-2:7}" --seed "${SEED:-7}")

# run NAME EXTRA-ARGS...: one run into $out/NAME/ (its record is the one .json there), log in $out/NAME.log.
run() {
  local name=$1
  shift
  rm -rf "${out:?}/$name"
  build-gpu/recipebench run "$recipe" "${args[@]}" "$@" --out "$out/$name" > "$out/$name.log" 2>&1 ||
    { echo "run $name failed:"; tail -n 20 "$out/$name.log"; }
}
run repeat-1
run repeat-2
run nondeterministic --deterministic=false
run profile --profile

python3 - "$out" <<'PY' | tee "$out/summary.txt"
import glob, json, sys
out = sys.argv[1]
def record(name):
    files = glob.glob(f"{out}/{name}/*.json")
    return json.load(open(files[0])) if files else None
a, b = record("repeat-1"), record("repeat-2")
if not a or not b:
    print("REPEAT: a run left no record"); sys.exit(0)
# JSON numbers carry 17 significant digits, so equal doubles print equal and float.hex shows the bits.
diff = None
for sa, sb in zip(a["steps"], b["steps"]):
    for key in ("loss", "grad_norm"):
        if sa[key] != sb[key] and diff is None:
            diff = f"step {sa['step']} {key}: {float(sa[key]).hex()} vs {float(sb[key]).hex()} ({sa[key]!r} vs {sb[key]!r})"
if len(a["steps"]) != len(b["steps"]):
    diff = diff or f"step counts differ: {len(a['steps'])} vs {len(b['steps'])}"
print("REPEAT (deterministic=%s, seed %s, %d steps): %s" % (
    a["settings"].get("deterministic"), a["settings"]["seed"], len(a["steps"]), "IDENTICAL" if diff is None else "DIFFERENT: " + diff))
print("losses:", " ".join(f"{s['loss']:.9f}" for s in a["steps"]))
nd = record("nondeterministic")
for name, rec in (("deterministic", a), ("deterministic (repeat)", b), ("non-deterministic", nd)):
    if rec and rec.get("status") == "complete":
        m = rec["metrics"]
        print(f"{name:24s} {m['tokens_per_s_per_gpu']:10.1f} tokens/s/GPU  step {m['mean_step_seconds'] * 1e3:7.1f} ms  "
              f"peak {m['peak_memory_bytes'] / 1e9:6.1f} GB")
p = record("profile")
if p and p.get("status") == "complete":
    w0, w1 = p["settings"]["window"]
    steps = p["steps"][w0:w1 + 1]
    tot = sum(s["seconds"] for s in steps) / len(steps)
    for k in ("forward_seconds", "backward_seconds", "optimizer_seconds"):
        v = sum(s["phases"][k] for s in steps) / len(steps)
        print(f"{k:20s} {v * 1e3:9.1f} ms  {100 * v / tot:5.1f}% of the {tot * 1e3:.1f} ms step (profiled run)")
PY
# Operations torch flagged as lacking a deterministic implementation (warn-only mode), if any.
grep -h "does not have a deterministic implementation" "$out"/repeat-*.log | sort -u | head -n 20
# The per-component table that --profile prints, if the backend prints one.
tail -n 25 "$out/profile.log" > "$out/profile-tail.txt"
