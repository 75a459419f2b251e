#!/bin/sh
# plan and predict agree (issue 43): plan prices each proposal with the function predict uses
# (plan/analytical_costs.h analytical_costs_at_layout in predict_step), so for the seed's requests (64 and 48 B200,
# 128 rows of 8,192 tokens; no profile: the analytical mode, calibrated on the seed's mt16k row) the tokens/s/GPU
# plan writes into each proposal's recipe (prediction.tokens_per_s_per_gpu) is predict's for that recipe, within a
# relative 1e-9: the top 4 of each, and the seed's own layout (TP2 PP8 VPP2 EP8 DP4, 16k tokens per GPU, alltoall)
# wherever the 64's ranking puts it (since flex and ETP are priced, the 64's top 4 are flex layouts across two nodes).
# Usage: plan_predict_agree.sh RECIPEBENCH SOURCE WORKDIR. Prints what failed; exit 1 then.
set -u
rb=$1; src=$2; work=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
cal=$src/recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml
tokens() { sed -n 's/^  "tokens_per_s_per_gpu": \([0-9.eE+-]*\),*$/\1/p' | head -n 1; }
n=0
# agree FILE: predict's tokens/s/GPU of plan's proposal FILE is the figure plan wrote into it.
agree() {
  want=$(sed -n 's/^  tokens_per_s_per_gpu: //p' "$1" | head -n 1)
  got=$("$rb" predict "$1" --calibrate "$cal" --format json 2>"$work/e.txt" | tokens)
  [ -n "$want" ] && [ -n "$got" ] || fail "$1: plan ${want:-none}, predict ${got:-none} ($(cat "$work/e.txt"))"
  awk -v g="$got" -v w="$want" 'BEGIN { d = g / w - 1; if (d < 0) d = -d; exit !(d < 1e-9) }' ||
    fail "$1: plan $want tokens/s/GPU, predict $got"
  n=$((n + 1))
}
for count in 64 48; do
  "$rb" plan --model Qwen3.5-397B-A17B --gpu B200 --count $count --global-batch 128 --row-tokens 8192 \
    --calibrate "$cal" --top 4 --out "$work/p$count" >"$work/o$count.txt" 2>&1 || fail "plan $count: $(cat "$work/o$count.txt")"
  for f in "$work/p$count"/*.yaml; do agree "$f"; done
done
ls "$work/p64" | grep -q -- '-flex-' || fail "no flex layout among the 64's top 4: $(ls "$work/p64")"
"$rb" plan --model Qwen3.5-397B-A17B --gpu B200 --count 64 --global-batch 128 --row-tokens 8192 \
  --calibrate "$cal" --top 300 --out "$work/all64" >"$work/all.txt" 2>&1 || fail "plan 64 (all): $(cat "$work/all.txt")"
seed=$work/all64/plan-tp2-pp8-vpp2-ep8-dp4-split6-mt16k-recompute.yaml
[ -f "$seed" ] || fail "the seed's mt16k layout not proposed among $(ls "$work/all64" | wc -l)"
agree "$seed"
[ "$n" -ge 9 ] || fail "$n proposals compared, expected 9"
# Selective recompute's module sets (docs/step-time.md, "Selective recompute"): the public GPT OSS 120B model on 64
# B200 (the public row's request) proposes core_attn+layernorm+moe_act, layernorm+moe_act and moe_act among its first
# 64; each such proposal names the config.json its model came from (model_params.config), passes validate --strict,
# is predicted to the same figure as it stands and carries its modules and Megatron-LM's --recompute-modules.
pub=$src/reports/bench/public-rows-2026-12-06
"$rb" plan --model-config "$pub/gpt-oss-120b-null-tokenizer-32000.json" --gpu B200 --count 64 --global-batch 1280 \
  --row-tokens 4096 --top 64 --out "$work/oss" >"$work/oss.txt" 2>&1 || fail "plan gpt-oss: $(cat "$work/oss.txt")"
s=0
for f in "$work/oss"/*-selective*.yaml; do
  [ -f "$f" ] || break
  g=$f
  grep -q "^  config: \"$pub/gpt-oss-120b-null-tokenizer-32000.json\"" "$f" || fail "$f: no model_params.config"
  "$rb" validate --strict "$f" >"$work/v.txt" 2>&1 || fail "$f: validate --strict: $(cat "$work/v.txt")"
  want=$(sed -n 's/^  tokens_per_s_per_gpu: //p' "$f" | head -n 1)
  got=$("$rb" predict "$g" --format json 2>"$work/e.txt" | tokens)
  [ -n "$want" ] && [ -n "$got" ] || fail "$f: plan ${want:-none}, predict ${got:-none} ($(cat "$work/e.txt"))"
  awk -v g="$got" -v w="$want" 'BEGIN { d = g / w - 1; if (d < 0) d = -d; exit !(d < 1e-9) }' ||
    fail "$f: plan $want tokens/s/GPU, predict $got"
  grep -q '^    modules: \[' "$f" || fail "$f: no layout.recompute.modules"
  grep -q -- '--recompute-modules ' "$f" || fail "$f: no --recompute-modules in its command"
  grep -q '^  summary: ".*, recompute selective ([a-z_, ]*),' "$f" || fail "$f: its summary does not name its modules"
  s=$((s + 1))
done
for m in core_attn-layernorm-moe_act layernorm-moe_act moe_act; do
  ls "$work/oss"/*-selective-$m.yaml >/dev/null 2>&1 || fail "no selective $m proposal: $(ls "$work/oss")"
done
echo "$n proposals and $s selective ones: plan's figure is predict's"
