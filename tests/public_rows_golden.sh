#!/bin/sh
# Golden figures of the public-row validation (issue 43, item 5; reports/bench/public-rows-2026-12-06): each line of
# golden.txt, written by bench/prediction-check.sh, is predicted again from the committed recipes and config and
# must give its stored tokens/s/GPU within a relative 1e-6 (the arithmetic is deterministic; the margin is for
# another compiler's rounding). Usage: public_rows_golden.sh RECIPEBENCH SOURCE. Prints what failed; exit 1 then.
set -u
rb=$1; dir=$2/reports/bench/public-rows-2026-12-06
n=0
while read -r recipe factor want; do
  case $recipe in '#'*|'') continue ;; esac
  got=$("$rb" predict "$dir/recipes/$recipe" --stack-factor "$factor" --format json 2>/dev/null |
    sed -n 's/^  "tokens_per_s_per_gpu": \([0-9.eE+-]*\),*$/\1/p' | head -n 1)
  [ -n "$got" ] || { echo "FAIL: $recipe x $factor: no tokens_per_s_per_gpu"; exit 1; }
  awk -v g="$got" -v w="$want" 'BEGIN { d = g / w - 1; if (d < 0) d = -d; exit !(d < 1e-6) }' ||
    { echo "FAIL: $recipe x $factor: $got tokens/s/GPU, expected $want (golden.txt)"; exit 1; }
  n=$((n + 1))
done <"$dir/golden.txt"
[ "$n" -ge 5 ] || { echo "FAIL: $n golden rows, expected at least 5"; exit 1; }
echo "$n golden predictions recomputed"
