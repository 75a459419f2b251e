#!/usr/bin/env bash
# GDN kernels alone on the GPU machine: builds gdn_check with nvcc (no libtorch), runs its correctness checks and
# timings, then FLA's chunked gated delta rule on the same shapes in the same call (the peer's gdn_probe.py), and
# prints the ratio. Usage (repo root): bench/gdn-kernels.sh [OUTDIR]
#   OUTDIR defaults to $OUT when set (the device machine), else reports/bench/gdn-<date>.
#   PEER_DIR: folder holding fla/ and gdn_probe.py (default .peer); PYTHON: python with torch + triton
#   (default /opt/torch/.venv/bin/python3); SANITIZE=1 also runs compute-sanitizer on the small cases.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../backends/torch/cuda
out=${1:-${OUT:-reports/bench/gdn-$(date +%F)}}
peer=${PEER_DIR:-.peer}
python=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$python" ] || python=python3
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$out"
build=$(mktemp -d)
log=$out/gdn-kernels.log
echo "== build gdn_check ($nvcc)" | tee "$log"
for f in gdn_forward gdn_backward gdn_check; do
  "$nvcc" -std=c++17 -O3 -arch=sm_90 -Xptxas -v -c "$src/$f.cu" -o "$build/$f.o" >"$build/$f.ptxas" 2>&1 &
done
g++ -std=c++17 -O2 -pthread -I"$(dirname "$nvcc")/../include" -c "$src/gdn_reference.cpp" -o "$build/gdn_reference.o" &
wait
cat "$build"/*.ptxas | grep -E "error|registers|spill" | tee -a "$log"
"$nvcc" -arch=sm_90 -o "$build/gdn_check" "$build"/*.o -lpthread 2>&1 | tee -a "$log" || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a "$log"
if [ "${SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  echo "== compute-sanitizer (memcheck), small cases" | tee -a "$log"
  timeout 150 compute-sanitizer --tool memcheck "$build/gdn_check" --skip-time --quick 2>&1 | tail -15 | tee -a "$log"
fi
echo "== gdn_check" | tee -a "$log"
"$build/gdn_check" --json "$out/gdn_check.json" --iters 50 2>&1 | tee -a "$log"
check_rc=${PIPESTATUS[0]}
echo "== FLA (gdn_probe.py 35B)" | tee -a "$log"
PYTHONPATH=$peer PYTHONUNBUFFERED=1 timeout 300 "$python" "$peer/gdn_probe.py" 35B 2>&1 | tee "$out/fla_probe.log" | tee -a "$log"
"$python" - "$out" <<'PY' | tee -a "$log"
import json, re, sys, datetime
out = sys.argv[1]
ours = json.load(open(f"{out}/gdn_check.json"))
fla = {}
for line in open(f"{out}/fla_probe.log"):
    m = re.search(r"FLA GDN 35B B=(\d) T=8192: fwd ([\d.]+) ms, fwd\+bwd ([\d.]+) ms", line)
    if m: fla[f"{m.group(1)}x8192"] = (float(m.group(2)), float(m.group(3)))
rows = []
print(f"{'tokens':8} {'ours fwd':>9} {'FLA fwd':>8} {'ratio':>6} {'ours f+b':>9} {'FLA f+b':>8} {'ratio':>6}")
for t in ours.get("timings_35b", []):
    f = fla.get(t["tokens"])
    r = {"tokens": t["tokens"], "fwd_ms": t["fwd_ms"], "fwd_bwd_ms": t["fwd_bwd_ms"]}
    if f:
        r.update(fla_fwd_ms=f[0], fla_fwd_bwd_ms=f[1], fwd_ratio=t["fwd_ms"] / f[0], fwd_bwd_ratio=t["fwd_bwd_ms"] / f[1])
        print(f"{t['tokens']:8} {t['fwd_ms']:9.3f} {f[0]:8.2f} {r['fwd_ratio']:6.2f} {t['fwd_bwd_ms']:9.3f} {f[1]:8.2f} {r['fwd_bwd_ratio']:6.2f}")
    rows.append(r)
json.dump({"date": datetime.date.today().isoformat(), "checks_pass": ours.get("pass"), "timings": rows},
          open(f"{out}/gdn_summary.json", "w"), indent=1)
PY
rm -rf "$build"
exit "$check_rc"
