#!/bin/sh
# validate's memory check of a model outside the torch backend's family (docs/memory-plan.md): the public GPT OSS
# 120B H100 row (reports/bench/public-rows-2026-12-06) passes `validate --strict` (its analytical plan fits: 54.9 GB
# of 80); the same row at EP 1 needs 155.3 GB on its first stage, which `validate` warns of, also with --strict (the
# analytical plan was never held against a measured peak), located at layout.ep with the fix the plan finds (EP 4:
# 69.2 GB), naming the plan as the analytical plan of the recipe's own stack and how the model is counted.
# Usage: validate_analytical_memory.sh RECIPEBENCH SOURCE WORKDIR.
set -u
rb=$1; rows=$2/reports/bench/public-rows-2026-12-06; work=$3
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
out=$("$rb" validate --strict "$rows/recipes/gpt-oss-120b-h100-26.04.01-bf16.yaml" 2>&1) || fail "the row is refused"
echo "$out" | grep -q 'memory plan' && fail "a memory diagnostic on a row that fits"
rm -rf "$work" && mkdir -p "$work/recipes"
cp "$rows/gpt-oss-120b-null-tokenizer-32000.json" "$work/"
sed 's/^  ep: 8$/  ep: 1/' "$rows/recipes/gpt-oss-120b-h100-26.04.01-bf16.yaml" >"$work/recipes/ep1.yaml"
grep -q '^  ep: 1$' "$work/recipes/ep1.yaml" || { out=""; fail "the EP 1 variant was not written"; }
expect='ep1.yaml:46:7: warning: layout.ep: the analytical memory plan of gpt-oss-120b (counted by the gpt_oss formula from '"$work"'/gpt-oss-120b-null-tokenizer-32000.json), the recipe'"'"'s own stack as Megatron-Core'"'"'s distributed optimizer holds it (docs/memory-plan.md), does not fit: the first stage (pipeline rank 0) needs 155.3 GB at its peak, more than the H100'"'"'s 80.0 GB; largest term: parameters (58.0 GB), expected a layout whose peak and reserve fit the H100'"'"'s 80.0 GB: layout.ep 4 (64 GPUs): the worst rank needs 69.2 GB'

for strict in --strict ""; do
  out=$("$rb" validate $strict "$work/recipes/ep1.yaml" 2>&1); rc=$?
  [ "$rc" = 0 ] || fail "validate $strict exit $rc, expected 0 (a warning)"
  echo "$out" | grep -qF "$expect" || fail "validate $strict: the warning is not the expected one"
done
echo "ok: the row fits; at EP 1 warned, also under --strict"
