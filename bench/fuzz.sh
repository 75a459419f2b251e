#!/usr/bin/env bash
# The fuzz bench (docs/fuzzing.md): runs the in-process fuzz harness (build-harness/tests/recipebench_fuzz) over
# mutants of every recipe, the tiny distributed fixtures and the field cases, for INPUTS inputs (default 10^6)
# spread over JOBS processes with different seeds (default: the machine's cores), every VIA-th input also through
# the recipebench binary (exit status and located error lines). With RECORDS=1 run records (*.json seeds) are
# fuzzed through the report's reading too. Findings land in OUT (default bench/out-fuzz)/seed-<n>/.
# SECONDS_LIMIT (when set) ends each process after that many seconds even short of INPUTS.
# Prints per process and in total: inputs run, inputs/s, accepted as valid, findings. Exit 1 on any finding.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-harness}
inputs=${INPUTS:-1000000}
jobs=${JOBS:-$(nproc)}
via=${VIA:-5000}
out=${OUT:-bench/out-fuzz}
fuzz="$build/tests/recipebench_fuzz"
[ -x "$fuzz" ] || { echo "no $fuzz: cmake --preset harness && cmake --build --preset harness --target recipebench_fuzz"; exit 2; }
seeds=(recipes tests/data/dist tests/data/cases)
extra=()
[ "${RECORDS:-0}" = 1 ] && extra+=(--records)
rm -rf "$out" && mkdir -p "$out"
per=$(( (inputs + jobs - 1) / jobs ))
start=$(date +%s)
pids=()
for j in $(seq 1 "$jobs"); do
  "$fuzz" --inputs "$per" ${SECONDS_LIMIT:+--seconds "$SECONDS_LIMIT"} --seed "$((20261130 + j))" --out "$out/seed-$j" --binary "$build/recipebench" \
    --via-binary "$via" "${extra[@]}" "${seeds[@]}" > "$out/seed-$j.log" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
cat "$out"/seed-*.log
total=$(grep -ho '^recipebench_fuzz: [0-9]* inputs' "$out"/seed-*.log | awk '{s += $2} END {print s + 0}')
found=$(grep -ho ', [0-9]* finding' "$out"/seed-*.log | awk '{s += $2} END {print s + 0}')
crashes=$(ls "$out"/seed-*/crash.input "$out"/seed-*/hang.input 2>/dev/null | wc -l)
echo "fuzz bench: $total inputs in $(( $(date +%s) - start )) s over $jobs processes; $found findings; $crashes crashes/hangs"
exit $status
