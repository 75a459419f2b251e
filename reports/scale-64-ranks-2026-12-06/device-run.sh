#!/usr/bin/env bash
# The one device call of this report (issue 45, item 4), on the GPU machine's 16 CPU cores (docs/testing.md, "Scale"):
#   1. two builds side by side: the branch as committed (build-gpu/, scripts/gpu-scale-tests) and a copy of the tree
#      with injected-bugs.patch (two layout bugs, each switched on by RB_INJECT; off, the arithmetic is the branch's);
#   2. the scale parity case (the seed's layout on 64 ranks against one rank, float64, 5 steps, the parameters dumped
#      after every step), then compare.py on its two runs;
#   3. the same 64-rank run with each injected bug (RB_INJECT=sp_grads, adam_decay), compared with the same one-rank run;
#   4. the two fault cases (a rank killed mid-step, a rank's NaN loss), last (they passed on 2026-12-05, unchanged).
# Usage: reports/scale-64-ranks-2026-12-06/device-run.sh OUTDIR. Everything small lands in OUTDIR (no parameter dump);
# the device tool brings back at most 8 files of $OUT, so give it a scratch folder and pack that into $OUT (README.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: device-run.sh OUTDIR}
here=reports/scale-64-ranks-2026-12-06
mkdir -p "$out"
start=$(date +%s)
stamp() { echo "$(($(date +%s) - start)) s: $*" | tee -a "$out/timeline.txt"; }
inj=/tmp/rb-injected
rm -rf "$inj" && mkdir -p "$inj"
tar --exclude=./build-gpu --exclude=./.git -cf - . | tar -xf - -C "$inj"
(cd "$inj" && { git apply "$here/injected-bugs.patch" || patch -p1 <"$here/injected-bugs.patch"; } &&
  RB_TARGETS="recipebench" scripts/gpu-scale-tests "$out/injected-build" none) >"$out/injected-build.txt" 2>&1 &
injected_build=$!
scripts/gpu-scale-tests "$out" none >"$out/build.txt" 2>&1
wait "$injected_build"
stamp "both builds done"
cat "$out/build.txt" "$out/injected-build.txt"
t=build-gpu/tests/test_distributed
runs=build-gpu/tests/distributed/scale
timeout 420 "$t" "the seed's layout at its world size*" >"$out/parity.log" 2>&1
stamp "parity case: exit $?"
grep -E "^(parity|scale)" "$out/parity.log"
python3 "$here/compare.py" "$runs/one-rank" "$runs/seed-layout-64" | tee "$out/compare-seed-layout-64.txt"
stamp "compared"
for bug in sp_grads adam_decay; do
  d=$runs/injected-$bug
  rm -rf "$d" && mkdir -p "$d"
  RB_INJECT=$bug RECIPEBENCH_DUMP_PARAMS="$PWD/$d/params.bin" RECIPEBENCH_DUMP_STEP_PARAMS=1 timeout 120 \
    "$inj/build-gpu/recipebench" run tests/data/scale/tiny-seed-layout-64.yaml --steps 5 --window 1:4 \
    --out "$d/runs" --nproc 64 --oversubscribe >"$d/log" 2>&1
  stamp "injected $bug: exit $?"
  python3 "$here/compare.py" "$runs/one-rank" "$d" | tee "$out/compare-injected-$bug.txt"
done
for c in kill nan-loss; do
  pattern="*a rank killed mid-step*"
  [ "$c" = nan-loss ] && pattern="*one rank's loss NaN*"
  timeout 90 "$t" "$pattern" >"$out/$c.log" 2>&1
  stamp "fault $c: exit $?"
  grep -E "^scale" "$out/$c.log"
done
for d in "$runs"/*/; do
  n=$(basename "$d")
  cp "$d/log" "$out/console-$n.log" 2>/dev/null
  for r in "$d"/runs/*.json; do [ -f "$r" ] && cp "$r" "$out/record-$n.json"; done
done
stamp "done"
