#!/usr/bin/env bash
# One call on one H200 (`nvidia-h200`) for issue 28 (one switch table, options by concern, folders): the refactor must
# leave the GPU path as it was. Run from the repository root with .deps/ and .oldcuda/ carried:
#   RECIPEBENCH_GIT_COMMIT=<commit> bash bench/h200-switches.sh
# 1. builds with scripts/gpu-build (CUDA kernels on) into build-gpu/;
# 2. the GPU tests (ctest -L cuda): every CUDA kernel against FP64 and the libtorch-ops path, repeatability, the TP
#    overlap's collectives in flight, the fail_on_sync check;
# 3. the 35B-A3B proxy (seed 7) fused, with the run's switches through the new table (--fail-on-sync, bare);
# 4. the GDN kernels, whose wmma block product and two backward kernels were split into forced-inline helpers: the
#    kernels of this tree and of .oldcuda/ (the tree before the split, `git archive b71612d backends/torch/cuda
#    backends/torch/model/init_draw.h backends/torch/model/gated_delta_rule.h`) built with the same nvcc flags;
#    ptxas' registers and spills of both side by side, then gdn_check's timings of each, alternated twice in this
#    call (the ratio is what counts: machines differ by 10-20% between calls), and this tree's full check.
# ONLY=gdn runs part 4 alone. Everything is kept in bench/out/h200-switches/ and packed into $OUT/h200-switches.tar.gz after every part.
set -uo pipefail
cd "$(dirname "$0")/.."
out=bench/out/h200-switches
rm -rf "$out" && mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && tar -czf "$OUT/h200-switches.tar.gz.tmp" -C bench/out h200-switches &&
  mv "$OUT/h200-switches.tar.gz.tmp" "$OUT/h200-switches.tar.gz"; }
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cuda_home=$(dirname "$(dirname "$nvcc")")

echo "== 4a. build gdn_check of this tree and of .oldcuda (nvcc -O3 -arch=sm_90, ptxas -v)"
build_check() {  # build_check NAME SRC_ROOT: gdn_check of SRC_ROOT/backends/torch/cuda into $out/NAME/
  local d=$out/$1 src=$2/backends/torch/cuda
  mkdir -p "$d"
  for f in gdn_forward gdn_backward gdn_check; do
    "$nvcc" -std=c++17 -O3 -arch=sm_90 -Xptxas -v -I"$2/backends/torch" -c "$src/$f.cu" -o "$d/$f.o" \
      >"$d/$f.ptxas" 2>&1 &
  done
  g++ -std=c++17 -O2 -pthread -I"$cuda_home/include" -c "$src/gdn_reference.cpp" -o "$d/gdn_reference.o" &
  wait
  "$nvcc" -arch=sm_90 -o "$d/gdn_check" "$d"/gdn_*.o -lpthread
  cat "$d"/*.ptxas | grep -E "error|Compiling entry|registers|spill" >"$d/registers.txt"
}
build_check new . &
build_check old .oldcuda &

if [ "${ONLY:-}" = gdn ]; then  # ONLY=gdn: part 4 alone (no libtorch build, no GPU tests, no proxy run)
  wait
else
echo "== 1. build (scripts/gpu-build), beside 4a"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
  time scripts/gpu-build 2>&1 | tail -n 20; } >"$out/build.log" 2>&1
wait
fi
# The kernels' names carry a hash of the file's path: compare the register and spill lines in order.
grep -v "Compiling entry" "$out/old/registers.txt" >"$out/old/counts.txt"
grep -v "Compiling entry" "$out/new/registers.txt" >"$out/new/counts.txt"
diff "$out/old/counts.txt" "$out/new/counts.txt" >"$out/registers.diff" &&
  echo "ptxas: registers and spills of every kernel identical ($(grep -c registers "$out/new/counts.txt") kernels)" ||
  { echo "ptxas: registers or spills differ:"; head -40 "$out/registers.diff"; }
pack
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "${ONLY:-}" != gdn ]; then
[ -x build-gpu/recipebench ] || { echo "build failed"; grep -E "error|FAILED" "$out/build.log" | head -30; pack; exit 1; }
tail -n 4 "$out/build.log"
pack

echo "== 2. GPU tests (ctest -L cuda)"
timeout 300 ctest --test-dir build-gpu -L cuda --output-on-failure >"$out/ctest-cuda.log" 2>&1
grep -E "Test +#|tests passed|tests failed" "$out/ctest-cuda.log"
pack

echo "== 3. the 35B-A3B proxy, fused, seed 7, --fail-on-sync (bare: the table's one spelling)"
recipe=recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml
timeout -k 10 170 build-gpu/recipebench run "$recipe" --seed 7 --fail-on-sync --out "$out/fused" >"$out/fused.log" 2>&1 ||
  { echo "run failed:"; tail -n 8 "$out/fused.log"; }
grep -E "^window|no effect|error" "$out/fused.log" | tail -n 3
pack
fi

echo "== 4b. gdn_check timings: new, old, new, old (--skip-check, 10 iterations)"
for pass in 1 2; do
  for v in new old; do
    "$out/$v/gdn_check" --json "$out/$v-$pass.json" --iters 10 --skip-check >"$out/$v-$pass.log" 2>&1
    echo "$v pass $pass: exit $?"; pack
  done
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def rows(v, p):
    return {t["tokens"]: t for t in json.load(open(f"{out}/{v}-{p}.json")).get("timings_35b", [])}
for p in (1, 2):
    n, o = rows("new", p), rows("old", p)
    for name in n:
        if name in o:
            a, b = n[name], o[name]
            print(f"pass {p} {name:16} fwd new {a['fwd_ms']:.3f} old {b['fwd_ms']:.3f} ms (new/old {a['fwd_ms']/b['fwd_ms']:.3f})"
                  f"  fwd+bwd new {a['fwd_bwd_ms']:.3f} old {b['fwd_bwd_ms']:.3f} ms (new/old {a['fwd_bwd_ms']/b['fwd_bwd_ms']:.3f})")
PY
echo "== 4c. gdn_check of this tree: every check"
"$out/new/gdn_check" --skip-time >"$out/new-check.log" 2>&1
echo "gdn_check checks: exit $?"; tail -n 12 "$out/new-check.log"
pack

