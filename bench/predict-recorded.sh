#!/usr/bin/env bash
# The step-time model's predictions from the committed records of reports/bench/h200-2026-12-03-predict (no GPU:
# `recipebench predict` is arithmetic). Run from the repository root after a build:   bash bench/predict-recorded.sh
# 1. the proxy's shapes, each from the one profile at 2 x 8,192 calibrated by its plain twin, and from the profile
#    alone (raw); bench/predict_summary.py gives the errors against the shapes' measured steps (call1/summary.*);
# 2. the proxy's 2-GPU recipes, each from its two emulated ranks (call1/two-*, calibrated by the plain emulated
#    ranks of reports/bench/h200-2026-12-02-emulate/call3), with the switches of the committed 2-GPU runs;
# 3. the seed's three B200 recipes from the seed's emulated ranks (the mt16k ranks of
#    reports/bench/h200-2026-12-02-emulate-profile and the 48-GPU ranks of call2: two microbatch sizes), raw and
#    with the stack factor fitted on the mt16k row (bench/fit_stack_factor.py).
set -euo pipefail
cd "$(dirname "$0")/.."
rb=${RB:-build/recipebench}
R=reports/bench/h200-2026-12-03-predict
one() { ls "$1"/*.json | head -n 1; }

echo "== 1. the proxy's shapes from one profile"
O=$R/call1
prof=$(one "$O/profile-2x8k")
base=$(one "$O/base-2x8k")
for recipe in bench/predict-shapes/*.yaml; do
  name=$(basename "$recipe" .yaml)
  "$rb" predict "$recipe" --profile "$prof" --profile "$base" --format json >"$O/$name.prediction.json"
  "$rb" predict "$recipe" --profile "$prof" --format json >"$O/$name.raw-prediction.json"
done
"$rb" predict bench/predict-shapes/mb4-8k.yaml --profile "$prof" --profile "$base" >"$O/mb4-8k.prediction.txt"
python3 bench/predict_summary.py "$O" | tee "$O/summary.txt"

echo "== 2. the proxy's 2-GPU recipes from their emulated ranks"
twins=reports/bench/h200-2026-12-02-emulate/call3
for layout in dp2 ep2 tp2 pp2; do
  switches=()
  [ "$layout" = dp2 ] || [ "$layout" = ep2 ] && switches=(--overlap-grad-reduce)  # as the committed runs ran
  "$rb" predict "recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-$layout-bf16.yaml" "${switches[@]}" \
    --profile "$(one "$O/two-$layout-rank0")" --profile "$(one "$O/two-$layout-rank1")" \
    --profile "$(one "$twins/proxy-$layout-rank0")" --profile "$(one "$twins/proxy-$layout-rank1")" \
    >"$O/two-$layout.prediction.txt"
  "$rb" predict "recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-$layout-bf16.yaml" "${switches[@]}" \
    --profile "$(one "$O/two-$layout-rank0")" --profile "$(one "$O/two-$layout-rank1")" \
    --profile "$(one "$twins/proxy-$layout-rank0")" --profile "$(one "$twins/proxy-$layout-rank1")" \
    --format json >"$O/two-$layout.prediction.json"
  grep -E "step time|tokens/s/GPU" "$O/two-$layout.prediction.txt" | sed "s/^/$layout: /"
done

echo "== 3. the seed's three B200 rows from the seed's emulated ranks (H200 -> B200)"
profiles=()
for kind in first middle last; do
  profiles+=(--profile "$(one reports/bench/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k-$kind-profile)")
  profiles+=(--profile "$(one "$R/call2/seed-attune-48gpu-tp2-pp6-ep8-$kind")")
done
RB=$rb python3 bench/fit_stack_factor.py "${profiles[@]}" | tee "$R/seed.txt"
