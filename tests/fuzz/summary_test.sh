#!/usr/bin/env bash
# fuzz-bench-summary-zero (case of 2026-12-02, issue 33 kind 6; docs/fuzzing.md): the fuzz harness and bench/fuzz.sh
# count truly however a run ends. Under the case's guard (ulimit -v 6000000, timeout).
#   summary_test.sh harness FUZZ CASE_DIR   the harness: the case's run, SIGTERM, SIGINT, SIGKILL, a finding then a hang
#   summary_test.sh bench BUILD_DIR         bench/fuzz.sh stopped by SIGTERM: its totals from the processes' summaries
set -euo pipefail
ulimit -v 6000000
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
num() { grep -o "\"$2\": [0-9]*" "$1" | awk '{print $2}'; }
ended() { grep -o '"ended": "[a-z-]*"' "$1" | cut -d'"' -f4; }
fail() { echo "FAIL: $*"; for f in "$d"/*.log "$d"/*/seed-*/summary.json; do [ -e "$f" ] && { echo "== $f"; cat "$f"; }; done; exit 1; }

# The totals line and summary.json of a stopped run agree, with inputs > 0 and the way it ended.
stopped_true() {  # OUT LOG ENDED
  local n; n=$(num "$1/summary.json" inputs)
  [ "$n" -gt 0 ] || fail "$1: 0 inputs counted"
  [ "$(ended "$1/summary.json")" = "$3" ] || fail "$1: ended $(ended "$1/summary.json"), expected $3"
  if [ "$3" != running ]; then grep -q "^recipebench_fuzz: $n inputs .*; ended: $3\$" "$2" || fail "$2: no totals line of $n inputs"; fi
}

if [ "$1" = harness ]; then
  fuzz=$2
  mkdir "$d/seeds"; cp "$3/a-nul-key.yaml" "$d/seeds/"; printf ',\n' > "$d/seeds/b-comma.yaml"
  # The case as handed (a NUL-key finding, then ',' which hung): no finding, no hang now; 10 inputs counted.
  rc=0; timeout 60 "$fuzz" --inputs 10 --out "$d/case" "$d/seeds" > "$d/case.log" 2>&1 || rc=$?
  [ $rc = 0 ] || fail "the case's run: exit $rc"
  [ "$(num "$d/case/summary.json" inputs)" = 10 ] && [ "$(num "$d/case/summary.json" findings)" = 0 ] || fail "case counts"
  grep -q '^recipebench_fuzz: 10 inputs (0 through the binary) in .*, 0 findings; seed 1; ended: inputs$' "$d/case.log" || fail "case line"
  # SIGTERM (timeout's signal): the current input finishes, the counts are written and printed.
  rc=0; timeout -s TERM 3 "$fuzz" --inputs 100000000 --out "$d/term" "$d/seeds" > "$d/term.log" 2>&1 || rc=$?
  [ $rc = 124 ] || fail "SIGTERM: exit $rc"
  stopped_true "$d/term" "$d/term.log" signal
  # SIGINT, the same.
  "$fuzz" --inputs 100000000 --out "$d/int" "$d/seeds" > "$d/int.log" 2>&1 & pid=$!
  sleep 2; kill -INT $pid; rc=0; wait $pid || rc=$?
  stopped_true "$d/int" "$d/int.log" signal
  # SIGKILL cannot be caught: summary.json, written every second as the run goes, still holds a true count.
  "$fuzz" --inputs 100000000 --out "$d/kill" "$d/seeds" > "$d/kill.log" 2>&1 & pid=$!
  sleep 2.5; { kill -KILL $pid; wait $pid; } 2> /dev/null || true
  stopped_true "$d/kill" "$d/kill.log" running
  # A finding, then a hang (the case's order): a stand-in binary prints an unlocated error on its first call and
  # sleeps on its second; the watchdog (--stall-seconds 1, wall time) ends the process. findings.txt holds the finding, the summary counts 4
  # inputs (the 4th hung), 1 finding, 1 hang, and the totals line says so.
  printf '#!/bin/sh\nn=$(cat "%s/calls" 2>/dev/null || echo 0); echo $((n + 1)) > "%s/calls"\n[ "$n" = 0 ] && echo "recipebench: error: boom"\n[ "$n" -ge 1 ] && sleep 5\nexit 0\n' "$d" "$d" > "$d/stand-in.sh"
  chmod +x "$d/stand-in.sh"
  rc=0; timeout 30 "$fuzz" --inputs 100 --out "$d/hang" --binary "$d/stand-in.sh" --via-binary 3 --stall-seconds 1 "$d/seeds" > "$d/hang.log" 2>&1 || rc=$?
  [ $rc = 4 ] || fail "hang: exit $rc"
  [ -s "$d/hang/hang.input" ] || fail "no hang.input"
  [ "$(wc -l < "$d/hang/findings.txt")" = 1 ] && grep -q 'an error without a location: recipebench: error: boom' "$d/hang/findings.txt" || fail "findings.txt"
  s="$d/hang/summary.json"
  [ "$(num "$s" inputs)" = 4 ] && [ "$(num "$s" findings)" = 1 ] && [ "$(num "$s" hangs)" = 1 ] && [ "$(num "$s" through_binary)" = 1 ] || fail "hang counts: $(cat "$s")"
  grep -q '^recipebench_fuzz: 4 inputs (1 through the binary) in .*, 1 finding; seed 1; ended: hang$' "$d/hang.log" || fail "hang line"
elif [ "$1" = bench ]; then
  # bench/fuzz.sh under timeout: SIGTERM to the script reaches its processes; the totals are their summaries' sum.
  rc=0; BUILD_DIR=$2 OUT="$d/bench" INPUTS=100000000 JOBS=2 timeout -s TERM 4 "$(dirname "$0")/../../bench/fuzz.sh" > "$d/bench.log" 2>&1 || rc=$?
  [ $rc = 124 ] || fail "fuzz.sh: exit $rc"
  a=$(num "$d/bench/seed-1/summary.json" inputs); b=$(num "$d/bench/seed-2/summary.json" inputs)
  [ "$a" -gt 0 ] && [ "$b" -gt 0 ] || fail "a process counted 0 inputs"
  grep -q "^fuzz bench: $((a + b)) inputs in [0-9]* s over 2 processes (signal x2); 0 findings; 0 crashes; 0 hangs\$" "$d/bench.log" || fail "bench line"
  [ "$(num "$d/bench/summary.json" inputs)" = $((a + b)) ] && grep -q '"stopped": true' "$d/bench/summary.json" || fail "bench summary: $(cat "$d/bench/summary.json")"
  # One process still finishing its input when the other has ended (case of the CI run of 2026-12-05: the script's
  # signal handler changed the wait loop's variable, so the totals were read before process 1 had ended). A stand-in
  # binary takes 2 s on process 1's inputs and every input goes through it (VIA=1); one TERM to the script only
  # (--foreground), which passes it on: process 1 finishes its input, is waited for, and both totals lines count.
  mkdir -p "$d/sb/tests"
  ln -s "$(cd "$2" && pwd)/tests/recipebench_fuzz" "$d/sb/tests/recipebench_fuzz"
  printf '#!/bin/sh\ncase "$2" in */seed-1/*) sleep 2 ;; esac\nexec "%s" "$@"\n' "$(cd "$2" && pwd)/recipebench" > "$d/sb/recipebench"
  chmod +x "$d/sb/recipebench"
  rc=0; BUILD_DIR="$d/sb" OUT="$d/slow" INPUTS=100000000 JOBS=2 VIA=1 timeout --foreground -s TERM 3 "$(dirname "$0")/../../bench/fuzz.sh" > "$d/slow.log" 2>&1 || rc=$?
  [ $rc = 124 ] || fail "fuzz.sh with a slow process: exit $rc"
  a=$(num "$d/slow/seed-1/summary.json" inputs); b=$(num "$d/slow/seed-2/summary.json" inputs)
  [ "$(grep -c '^recipebench_fuzz: [0-9]* inputs .*; ended: signal$' "$d/slow.log")" = 2 ] || fail "slow: not 2 totals lines"
  grep -q "^fuzz bench: $((a + b)) inputs in [0-9]* s over 2 processes (signal x2); 0 findings; 0 crashes; 0 hangs\$" "$d/slow.log" || fail "slow: bench line"
else
  echo "usage: summary_test.sh harness FUZZ CASE_DIR | bench BUILD_DIR"; exit 2
fi
echo "ok"
