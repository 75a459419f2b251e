#!/bin/sh
# validate's memory check of a model outside the torch backend's family (docs/memory-plan.md): the public GPT OSS
# 120B H100 row (reports/bench/public-rows-2026-12-06) passes `validate --strict` (its analytical plan fits: 54.9 GB
# of 80); the same row at EP 1 needs 155.3 GB on its first stage, which `validate` warns of and `validate --strict`
# refuses (exit 1), located at layout.ep with the fix the plan finds (EP 4: 69.2 GB), naming the plan as the analytical
# plan of the recipe's own stack. Usage: validate_analytical_memory.sh RECIPEBENCH SOURCE WORKDIR.
set -u
rb=$1; rows=$2/reports/bench/public-rows-2026-12-06; work=$3
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
out=$("$rb" validate --strict "$rows/recipes/gpt-oss-120b-h100-26.04.01-bf16.yaml" 2>&1) || fail "the row is refused"
echo "$out" | grep -q 'memory plan' && fail "a memory diagnostic on a row that fits"
rm -rf "$work" && mkdir -p "$work/recipes"
cp "$rows/gpt-oss-120b-null-tokenizer-32000.json" "$work/"
sed 's/^  ep: 8$/  ep: 1/' "$rows/recipes/gpt-oss-120b-h100-26.04.01-bf16.yaml" >"$work/recipes/ep1.yaml"
grep -q '^  ep: 1$' "$work/recipes/ep1.yaml" || { out=""; fail "the EP 1 variant was not written"; }
expect='ep1.yaml:46:7: error: layout.ep: the analytical memory plan of the recipe'"'"'s own stack (Megatron-Core'"'"'s distributed optimizer, docs/memory-plan.md) does not fit: the first stage (pipeline rank 0) needs 155.3 GB at its peak, more than the H100'"'"'s 80.0 GB; largest term: parameters (58.0 GB), expected a layout whose peak and reserve fit the H100'"'"'s 80.0 GB: layout.ep 4 (64 GPUs): the worst rank needs 69.2 GB'
out=$("$rb" validate --strict "$work/recipes/ep1.yaml" 2>&1); rc=$?
[ "$rc" = 1 ] || fail "validate --strict exit $rc, expected 1"
echo "$out" | grep -qF "$expect" || fail "the strict error is not the expected one"
out=$("$rb" validate "$work/recipes/ep1.yaml" 2>&1); rc=$?
[ "$rc" = 0 ] || fail "validate exit $rc, expected 0 (a warning without --strict)"
echo "$out" | grep -qF "$(echo "$expect" | sed 's/: error: /: warning: /')" || fail "the warning is not the expected one"
echo "ok: the row fits; at EP 1 refused under --strict, warned without"
