#!/bin/sh
# The public GPT OSS 120B rows (reports/bench/public-rows-2026-12-06), measured by NVIDIA on 64 x H100, B200 and
# GB200, fit their GPUs in the analytical memory plan (docs/memory-plan.md, "Analytical plan"): `run --dry-run`
# of each says "fits" with at least 10 GB to spare beside its reserve. Usage: public_rows_fit.sh RECIPEBENCH SOURCE.
set -u
rb=$1; dir=$2/reports/bench/public-rows-2026-12-06/recipes
for gpu in h100 b200 gb200; do
  out=$("$rb" run "$dir/gpt-oss-120b-$gpu-26.04.01-bf16.yaml" --dry-run 2>&1)
  echo "$out" | grep -q 'memory [0-9.]* GB: fits$' || { echo "FAIL: $gpu: the plan does not fit"; echo "$out"; exit 1; }
  spare=$(echo "$out" | sed -n 's/.*; \([0-9.]*\) GB to spare (docs.*/\1/p')
  awk -v s="${spare:-0}" 'BEGIN { exit !(s >= 10) }' || { echo "FAIL: $gpu: ${spare:-no} GB to spare, expected at least 10"; exit 1; }
  echo "$gpu: fits, $spare GB to spare"
done
