#!/usr/bin/env bash
# Every test of the build carries exactly one kind label (docs/testing.md): none is left without one, and the
# tests of the kinds add up to all tests; no test name starts or ends with a blank (a Catch2 name holding ';', CTest's
# list separator, is registered as two such halves that match no test). Usage: check_kind_labels.sh CTEST BUILD_DIR
set -euo pipefail
ctest=$1 build=$2
kinds=(unit cli dist cuda browser fuzz faults scale)
count() { "$ctest" --test-dir "$build" -N "$@" | sed -n 's/^Total Tests: //p'; }
total=$(count)
split=$("$ctest" --test-dir "$build" -N | sed -n 's/^ *Test *#[0-9]*: //p' | grep -E '^ | $' || true)
if [ -n "$split" ]; then
  echo "test names split at ';' (a Catch2 TEST_CASE name must not hold one):"
  echo "$split"
  exit 1
fi
regex="^($(IFS='|'; echo "${kinds[*]}"))\$"
unlabelled=$(count -LE "$regex")
if [ "$unlabelled" -ne 0 ]; then
  echo "tests without a kind label (${kinds[*]}):"
  "$ctest" --test-dir "$build" -N -LE "$regex" | grep 'Test *#'
  exit 1
fi
sum=0
for k in "${kinds[@]}"; do
  n=$(count -L "^$k\$")
  echo "$k: $n"
  sum=$((sum + n))
done
echo "total: $total, sum over the kinds: $sum"
test "$sum" -eq "$total"
