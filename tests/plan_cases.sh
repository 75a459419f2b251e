#!/bin/sh
# plan's cases of 2026-12-05 (issue 44) through the binary, as a user runs them: plan_cases.sh RECIPEBENCH SOURCE
# WORKDIR PART, PART one of optimizer-state, headroom, topology, instance, json. Prints what failed; exit 1 then.
set -u
rb=$1; src=$2; work=$3; part=$4
cases=$src/tests/data/cases
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
# The committed profiles the docs plan from (tests/data/cases/../_shared in the cases: profiles.sh).
b=$src/reports/bench
p397=""
for k in first middle last; do
  p397="$p397 --profile $(ls "$b"/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k-$k-profile/*.json)"
  p397="$p397 --profile $(ls "$b"/h200-2026-12-03-predict/call2/seed-attune-48gpu-tp2-pp6-ep8-$k/*.json)"
done
p35="--profile $(ls "$b"/h200-2026-12-03-predict/call1/profile-2x8k/*.json) --profile $(ls "$b"/h200-2026-12-03-predict/call1/base-2x8k/*.json)"

case $part in
optimizer-state)
  # plan-ignores-optimizer-state-options: the seed's measured 48 x B200 layout is proposed with its bf16_remainder
  # state (163.5 GB), written with its optimizer block, and validate --strict accepts what plan writes.
  # (#56 since the flex dispatcher and ETP are priced: flex across two nodes leads; #19 before, in the wider search
  # of issue 44.) Every file written, torch recipes and Megatron-LM ones (bench.backend command), passes validate
  # --strict.
  "$rb" plan --model Qwen3.5-397B-A17B --gpu B200 --count 48 --global-batch 128 --row-tokens 8192 $p397 --top 60 \
    --out "$work/p48" >"$work/o.txt" 2>&1 || fail "plan 48: $(cat "$work/o.txt")"
  grep -qE '^ +[0-9]+  TP2 PP6 EP8 DP4 +8k +full  alltoall  bf16_remainder +163\.5 ' "$work/o.txt" || fail "48: $(cat "$work/o.txt")"
  grep -q '^  backend: "command"' "$work"/p48/*-allgather-*.yaml || fail "allgather: not the command backend's"
  f=$work/p48/plan-tp2-pp6-ep8-dp4-mt8k-recompute-bf16rem.yaml
  grep -q '^  master_weights: "bf16_remainder"' "$f" || fail "optimizer block: $(cat "$f")"
  # Its Megatron-LM command (run:) states the same layout and state form; validate --strict holds it to the fields.
  grep -q -- '--use-precision-aware-optimizer' "$f" && grep -q -- '--pipeline-model-parallel-size 6' "$f" &&
    grep -q -- 'torchrun --nnodes 6 --nproc-per-node 8 pretrain_gpt.py' "$f" || fail "run: $(cat "$f")"
  "$rb" validate --strict "$work/p48" >"$work/v.txt" 2>&1 || fail "validate --strict: $(cat "$work/v.txt")"
  # FP32 state only: the layout is not there (the search before issue 44).
  "$rb" plan --model Qwen3.5-397B-A17B --gpu B200 --count 48 --global-batch 128 --row-tokens 8192 $p397 --top 100 \
    --optimizer-state fp32 >"$work/o.txt" 2>&1
  grep -qE '^ +[0-9]+  TP2 PP6 EP8 DP4 +8k +full' "$work/o.txt" && fail "fp32 only proposes the seed's layout"
  # 35B-A3B on one 8 x H100 node: TP2 PP2 EP4 DP2 with BF16 moments at 67.7 GB, the case's recipe validates.
  "$rb" plan --model Qwen3.5-35B-A3B --gpu H100 --count 8 --global-batch 128 --row-tokens 8192 $p35 --top 25 \
    >"$work/o.txt" 2>&1 || fail "plan 35B on 8 H100: $(cat "$work/o.txt")"
  grep -qE 'TP2 PP2 EP4 DP2 +8k +full  alltoall  bf16_moments +67\.7 ' "$work/o.txt" || fail "35B: $(cat "$work/o.txt")"
  "$rb" validate --strict "$cases/plan-ignores-optimizer-state-options/h100-35b-tp2-pp2-ep4-dp2-bf16moments.yaml" \
    >"$work/v.txt" 2>&1 || fail "case recipe: $(cat "$work/v.txt")"
  ;;
headroom)
  # plan-no-memory-headroom: no proposal inside the reserve (every spare >= 0), the reserve stated in the header;
  # --memory-reserve 0 gives back the 179.8 of 180 GB row, and validate / dry run name the reserve.
  "$rb" plan --model Qwen3.5-397B-A17B --gpu B200 --count 96 --global-batch 128 --row-tokens 8192 $p397 --top 1000 \
    >"$work/o.txt" 2>&1 || fail "plan 96: $(cat "$work/o.txt")"
  grep -q 'with a reserve of 3.0 GB + 8% of the peak' "$work/o.txt" || fail "header: $(head -2 "$work/o.txt")"
  awk '/^ +[0-9]+  TP/ { for (i = 1; i <= NF; i++) if ($i ~ /^(fp32|bf16_remainder|bf16_moments)$/) { s = $(i + 2); if (s + 0 < 0) bad = 1 } } END { exit bad }' \
    "$work/o.txt" || fail "a row inside the reserve"
  grep -qE ' 179\.[0-9] ' "$work/o.txt" && fail "a 179.x GB row on 180 GB"
  "$rb" plan --model Qwen3.5-397B-A17B --gpu B200 --count 96 --global-batch 128 --row-tokens 8192 $p397 --top 1000 \
    --memory-reserve 0 --optimizer-state fp32 >"$work/o0.txt" 2>&1 || fail "reserve 0"
  grep -qE ' 179\.8 ' "$work/o0.txt" || fail "--memory-reserve 0: $(sed -n 1,6p "$work/o0.txt")"
  seed=$src/recipes/qwen3.5-397b-a17b/b200/attune-48gpu-tp2-pp6-ep8.yaml
  "$rb" run "$seed" --dry-run | grep -q '^  reserve beside the peak: 16.1 GB (3.0 GB + 8% of the peak); 0.4 GB to spare' ||
    fail "dry run's reserve line"
  "$rb" validate --memory-reserve 20 "$seed" >"$work/v.txt" 2>&1
  grep -q 'needs 163.5 GB at its peak and a reserve of 20.0 GB (--memory-reserve) beside it' "$work/v.txt" ||
    fail "validate --memory-reserve: $(cat "$work/v.txt")"
  ;;
topology)
  # plan-gb200-node-and-nvlink-domain: 144 GB200 default to the instance's 4 per node in its 72-GPU NVLink domain,
  # and --per-node 4 / 72 give the same answer.
  for pn in "" "--per-node 4" "--per-node 72"; do
    "$rb" plan --model Qwen3.5-35B-A3B --gpu GB200 --count 144 $pn --global-batch 288 --row-tokens 8192 $p35 --top 1 \
      >"$work/o.txt" 2>&1 || fail "GB200 $pn: $(cat "$work/o.txt")"
    grep -q 'NVLink domain of 72 GPUs (18 instances of 4)' "$work/o.txt" || fail "GB200 $pn: no domain"
    sed -n 4p "$work/o.txt" | sed 's/  */ /g' >>"$work/rows.txt"
  done
  head -1 "$work/o.txt" | grep -q '(72 per node' || fail "header: $(head -1 "$work/o.txt")"
  test "$(sort -u "$work/rows.txt" | wc -l)" -eq 1 || fail "different answers: $(cat "$work/rows.txt")"
  "$rb" plan --model Qwen3.5-35B-A3B --gpu GB200 --count 144 --global-batch 288 --row-tokens 8192 $p35 --top 1 |
    head -1 | grep -q '(4 per node, NVLink domain 72 on AWS p6e-gb200.36xlarge)' || fail "default per node"
  ;;
instance)
  # plan-instance-of-another-gpu: an H200 instance for --gpu H100, and an unknown instance: exit 2 before searching,
  # located at <command line>, with the catalog's H100 instances.
  "$rb" plan --model Qwen3.5-35B-A3B --gpu H100 --count 32 --global-batch 128 --row-tokens 8192 $p35 \
    --instance p5en.48xlarge >"$work/o.txt" 2>&1
  test $? -eq 2 || fail "p5en for H100: exit"
  grep -q "^<command line>: error: --instance: 'AWS p5en.48xlarge' (H200 GPUs), expected an instance of the catalog with H100 GPUs (--gpu): p5.48xlarge, " \
    "$work/o.txt" || fail "p5en: $(cat "$work/o.txt")"
  # plan-search-space-and-cli: 12 GPUs of 8 per node is refused up front with the counts that would do.
  "$rb" plan --model Qwen3.5-35B-A3B --gpu H200 --count 12 --global-batch 96 --row-tokens 8192 $p35 >"$work/o.txt" 2>&1
  test $? -eq 2 || fail "12 GPUs: exit"
  grep -q "^<command line>: error: --count: 12 GPUs, expected whole nodes of 8 GPUs (the instance's): 8, 16, ...; or --per-node with a divisor of 12 (2, 3, 4, 6, 12)$" \
    "$work/o.txt" || fail "12 GPUs: $(cat "$work/o.txt")"
  "$rb" plan --model Qwen3.5-35B-A3B --gpu H100 --count 32 --global-batch 128 --row-tokens 8192 $p35 \
    --instance p5.48xl >"$work/o.txt" 2>&1
  test $? -eq 2 || fail "unknown instance: exit"
  grep -q "^<command line>: error: --instance: p5.48xl, expected an instance of the catalog with H100 GPUs (--gpu): p5.48xlarge" \
    "$work/o.txt" || fail "unknown: $(cat "$work/o.txt")"
  ;;
json)
  # plan-search-space-and-cli: plan --format json (recipebench-plan/1) and, in text, what was searched and not.
  "$rb" plan --model Qwen3.5-35B-A3B --gpu H200 --count 8 --global-batch 128 --row-tokens 8192 $p35 --top 2 \
    --format json --out "$work/out" >"$work/p.json" 2>"$work/err.txt" || fail "json: $(cat "$work/err.txt")"
  j=$work/p.json  # dump(2): one key per line, so grep reads it without a JSON tool
  grep -q '^  "schema": "recipebench-plan/1",$' "$j" || fail "schema: $(head -3 "$j")"
  grep -q '^    "memory_bytes": 141000000000.0' "$j" || fail "memory_bytes"
  grep -q '^    "fixed_bytes": 3000000000.0,$' "$j" && grep -q '^    "fraction_of_peak": 0.08$' "$j" || fail "reserve"
  grep -q '^    "CPU offload of optimizer state' "$j" || fail "not_searched"
  grep -q '^    "CP > 1 only for rows of 16384 tokens or more' "$j" || fail "pruned"
  test "$(grep -c '^      "rank": [12],$' "$j")" -eq 2 || fail "proposals"
  grep -q '^      "optimizer_state": "bf16_moments",$' "$j" || fail "optimizer_state"
  test "$(grep -c '^        "Megatron-LM"$' "$j")" -eq 2 || fail "stacks"
  grep -q '^        "TorchTitan": "no Qwen3.5 / Qwen3-Next model' "$j" || fail "not_stacks"
  grep -q '^      "spare_bytes": -' "$j" && fail "a proposal inside the reserve"
  test "$(grep -c '^      "file": ".*/out/plan-.*\.yaml"' "$j")" -eq 2 || fail "files"
  grep -q '^        "tokens_per_s_per_gpu": [1-9]' "$j" || fail "prediction"
  "$rb" validate --strict "$work/out" >"$work/v.txt" 2>&1 || fail "validate: $(cat "$work/v.txt")"
  "$rb" plan --model Qwen3.5-35B-A3B --gpu H200 --count 64 --global-batch 64 --row-tokens 131072 $p35 --top 1 \
    >"$work/o.txt" 2>&1 || fail "128k: $(cat "$work/o.txt")"
  grep -q '^  not searched:' "$work/o.txt" || fail "not searched: $(cat "$work/o.txt")"
  # 128k-token rows: CP searched (up to 32: 4,096 tokens per CP rank), the best proposal has it, for Megatron-LM.
  grep -q 'CP > 1 only with one row per microbatch and at least 4096 tokens per CP rank (CP up to 32' "$work/o.txt" ||
    fail "CP rule: $(cat "$work/o.txt")"
  grep -qE '^ +1  TP[0-9]+ PP[0-9]+( VPP[0-9]+)? CP[0-9]+ ' "$work/o.txt" || fail "no CP: $(cat "$work/o.txt")"
  grep -qE '^ +1  Megatron-LM; not recipebench torch: CP [0-9]+' "$work/o.txt" || fail "stacks: $(cat "$work/o.txt")"
  grep -qE -- '^ +--context-parallel-size ([2-9]|[1-9][0-9]) ' "$work/o.txt" || fail "run: $(cat "$work/o.txt")"
  ;;
*) fail "unknown part $part" ;;
esac
echo "ok: $part"
