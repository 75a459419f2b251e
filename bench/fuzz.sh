#!/usr/bin/env bash
# The fuzz bench (docs/fuzzing.md): runs the in-process fuzz harness (build-harness/tests/recipebench_fuzz) over
# mutants of every recipe, catalog file and config.json (the catalog, the tiny distributed fixtures and the field
# cases), of the run records, the committed profile (predict --profile / --calibrate), the training logs of each
# import format and their regex: patterns (tests/data/logs, the cases' logs), the recipes' run: commands and
# predict / plan arguments (tests/data/cases/fuzz/args), for INPUTS inputs (default 10^6)
# spread over JOBS processes with different seeds (default: the machine's cores), every VIA-th input also through
# the recipebench binary (exit status and located error lines; every args input). SURFACES (default all: recipe,
# record,config,catalog,profile,log,run,args) names the surfaces fuzzed (docs/fuzzing.md, "Surfaces"). Findings land in OUT (default bench/out-fuzz)/seed-<n>/.
# SECONDS_LIMIT (when set) ends each process after that many seconds even short of INPUTS.
# The totals come from each process's OUT/seed-<n>/summary.json, which the harness writes as it goes and at every
# end (inputs, seconds, a signal, a crash, a hang), so they are true however a process ended; SIGTERM / SIGINT to
# this script stop the processes and the totals are still written. Prints per process and in total: inputs run,
# accepted as valid, findings, crashes, hangs, and writes them to OUT/summary.json (atomically).
# Exit 1 on any finding, crash or hang (or a process without a summary).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-harness}
inputs=${INPUTS:-1000000}
jobs=${JOBS:-$(nproc)}
via=${VIA:-5000}
out=${OUT:-bench/out-fuzz}
fuzz="$build/tests/recipebench_fuzz"
[ -x "$fuzz" ] || { echo "no $fuzz: cmake --preset harness && cmake --build --preset harness --target recipebench_fuzz"; exit 2; }
seeds=(recipes catalog tests/data/dist tests/data/cases tests/data/catalog tests/data/logs
       reports/bench/h200-2026-12-03-predict/call1)
extra=(--surfaces "${SURFACES:-all}" --profile-probe bench/predict-shapes/mb4-8k.yaml
       --import-probe tests/data/command/megatron-h100-dp8.yaml)
rm -rf "$out" && mkdir -p "$out"
per=$(( (inputs + jobs - 1) / jobs ))
start=$(date +%s)
pids=()
stopped=0
# A stop: each process finishes (or, at a second signal, abandons) its input and writes its counts. The handler
# keeps its own loop variable: it runs in the middle of the wait loop below, whose `p` it must not change (it did,
# and the totals were read while the first process was still finishing its input).
stop_all() {
  local q
  stopped=1
  for q in "${pids[@]}"; do kill -TERM "$q" 2>/dev/null; done
}
trap stop_all TERM INT
for j in $(seq 1 "$jobs"); do
  "$fuzz" --inputs "$per" ${SECONDS_LIMIT:+--seconds "$SECONDS_LIMIT"} --seed "$((20261130 + j))" --out "$out/seed-$j" --binary "$build/recipebench" \
    --via-binary "$via" "${extra[@]}" "${seeds[@]}" > "$out/seed-$j.log" 2>&1 &
  pids+=($!)
done
# `wait` returns early when a trapped signal arrives: wait again until every process has ended.
for p in "${pids[@]}"; do while kill -0 "$p" 2>/dev/null; do wait "$p"; done; done
cat "$out"/seed-*.log
# Every process prints its totals line at every end it can catch; one without it was killed outright (SIGKILL).
for j in $(seq 1 "$jobs"); do
  grep -q '^recipebench_fuzz: [0-9]* inputs' "$out/seed-$j.log" || echo "fuzz bench: process $j printed no totals line"
done
# One figure summed over the processes' summary.json files.
total() { cat "$out"/seed-*/summary.json 2>/dev/null | grep -o "\"$1\": [0-9]*" | awk '{s += $2} END {print s + 0}'; }
summaries=$(ls "$out"/seed-*/summary.json 2>/dev/null | wc -l)
inputs_run=$(total inputs); found=$(total findings); crashes=$(total crashes); hangs=$(total hangs)
accepted=$(total accepted); via_binary=$(total through_binary); secs=$(( $(date +%s) - start ))
ended=$(cat "$out"/seed-*/summary.json 2>/dev/null | grep -o '"ended": "[a-z-]*"' | cut -d'"' -f4 | sort | uniq -c | awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}')
surface_json=""
for s in recipe record config catalog profile log run args; do surface_json+="${surface_json:+, }\"$s\": $(total "$s")"; done
printf '{"inputs": %s, "through_binary": %s, "accepted": %s, "findings": %s, "crashes": %s, "hangs": %s, "seconds": %s, "processes": %s, "summaries": %s, "stopped": %s, "ended": "%s", "by_surface": {%s}}\n' \
  "$inputs_run" "$via_binary" "$accepted" "$found" "$crashes" "$hangs" "$secs" "$jobs" "$summaries" \
  "$([ $stopped = 1 ] && echo true || echo false)" "$ended" "$surface_json" > "$out/.summary.json.tmp" && mv "$out/.summary.json.tmp" "$out/summary.json"
echo "fuzz bench: $inputs_run inputs in $secs s over $jobs processes ($ended); $found findings; $crashes crashes; $hangs hangs"
echo "fuzz bench: inputs by surface: $(echo "$surface_json" | tr -d '"' | sed 's/: / /g')"
[ "$found" = 0 ] && [ "$crashes" = 0 ] && [ "$hangs" = 0 ] && [ "$summaries" = "$jobs" ]
