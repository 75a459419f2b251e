#!/usr/bin/env bash
# Failure handling on NCCL (run on a machine with 2 GPUs, after scripts/gpu-build or with BUILD=1): a failure
# injected on one rank of the tiny DP2 model on two GPUs must stop both ranks within seconds, show the failing
# rank's message once and leave rank 0's run record `failed` (docs/distributed.md, Failures). Also re-checks that a
# clean DP2 run still completes (the watcher does not abort a healthy run). Results in $OUT (or bench/out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ "${BUILD:-1}" = 1 ] || [ ! -x build-gpu/recipebench ]; then scripts/gpu-build > "$out/build.log" 2>&1; fi
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  for fail_rank in 1 0; do
    rm -rf "bench/fail$fail_rank"
    start=$(date +%s.%N)
    RECIPEBENCH_FAIL_RANK=$fail_rank RECIPEBENCH_FAIL_STEP=2 timeout 200 build-gpu/recipebench run \
      tests/data/dist/tiny-dp2.yaml --device cuda --steps 5 --window 1:4 --out "bench/fail$fail_rank" \
      > "bench/fail$fail_rank.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    echo "== failure injected on rank $fail_rank at step 2: exit $rc after $(python3 -c "print(round($end - $start, 1))") s"
    grep -c "injected failure" "bench/fail$fail_rank.log" | sed 's/^/   lines naming the injected failure: /'
    python3 -c "
import glob, json
fs = glob.glob('bench/fail$fail_rank/*.json')
print('   run records:', len(fs))
for f in fs:
    r = json.load(open(f)); print('   status', r['status'], '| error', r['error'])"
    tail -n 4 "bench/fail$fail_rank.log" | sed 's/^/   | /'
  done
  echo "== a healthy DP2 run"
  timeout 120 build-gpu/recipebench run tests/data/dist/tiny-dp2.yaml --device cuda --steps 5 --window 1:4 \
    --out bench/healthy > bench/healthy.log 2>&1
  echo "   exit $?"; tail -n 2 bench/healthy.log | sed 's/^/   | /'
} 2>&1 | tee "$out/failure.txt"
