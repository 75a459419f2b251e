#!/usr/bin/env bash
# One call on one H200 (`nvidia-h200`) for the step-time model (issue 30, docs/step-time.md). Run from the repository
# root with .deps/ carried:   RECIPEBENCH_GIT_COMMIT=<commit> bash bench/h200-predict.sh
# 1. builds with scripts/gpu-build into build-gpu/;
# 2. "proxy": one profile of the 35B-A3B proxy at 2 x 8,192 tokens (`run --profile`), then every shape of
#    bench/predict-shapes/ measured plainly (other row counts, lengths, microbatch counts, layer counts, recompute),
#    and each predicted from that one profile (`predict --profile`): bench/predict_summary.py writes the errors;
# 3. "two": each rank of the proxy's 2-GPU recipes (DP2, EP2, TP2, PP2) emulated with --profile, and each recipe
#    predicted from its ranks (to set against the committed 2-GPU records);
# 4. "seed": the seed's mt8k and 48-GPU layouts, a first, middle and last rank emulated with --profile at 397B
#    widths (the mt16k ones are in reports/bench/h200-2026-12-02-emulate-profile).
# 3b. "diag": the proxy profiled at two more shapes, to see which components scale with the tokens.
# PARTS (default "proxy two") picks the parts after the build; SEED_RECIPES (default both) the seed's recipes. Everything is kept in bench/out/h200-predict/ and
# packed into $OUT/h200-predict.tar.gz after every run; each run has its own limit (RUN_LIMIT s, default 120).
set -uo pipefail
[ -n "${RECIPEBENCH_GIT_COMMIT:-}" ] || echo "note: RECIPEBENCH_GIT_COMMIT is not set: the records name the copy's HEAD"
cd "$(dirname "$0")/.."
out=bench/out/h200-predict
rm -rf "$out" && mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && tar -czf "$OUT/h200-predict.tar.gz.tmp" -C bench/out h200-predict &&
  mv "$OUT/h200-predict.tar.gz.tmp" "$OUT/h200-predict.tar.gz"; }
limit=${RUN_LIMIT:-120}
parts=${PARTS:-"proxy two"}
python=/opt/torch/.venv/bin/python3
[ -x "$python" ] || python=python3

echo "== 1. build (scripts/gpu-build)"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
  time scripts/gpu-build 2>&1 | tail -n 20; } >"$out/build.log" 2>&1
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x build-gpu/recipebench ] || { echo "build failed"; grep -E "error|FAILED" "$out/build.log" | head -30; pack; exit 1; }
tail -n 4 "$out/build.log"
pack
rb=build-gpu/recipebench

run() {  # run NAME RECIPE [ARGS...]: one run into $out/NAME/, log $out/NAME.log
  local name=$1 recipe=$2; shift 2
  timeout -k 10 "$limit" "$rb" run "$recipe" --device cuda "$@" --out "$out/$name" >"$out/$name.log" 2>&1 ||
    { echo "run $name failed:"; tail -n 8 "$out/$name.log"; }
  grep -E "tokens/s/GPU|^  (window|peak)|^emulated rank" "$out/$name.log" | head -n 3 | sed "s/^/$name: /"
  pack
}
record() { ls "$out/$1"/*.json 2>/dev/null | head -n 1; }

if [[ " $parts " == *" proxy "* ]]; then
  echo "== 2. the proxy: one profile at 2 x 8,192, every shape measured and predicted from it"
  run profile-2x8k bench/predict-shapes/base-2x8k.yaml --profile --steps 10 --window 3:9
  profile=$(record profile-2x8k)
  for recipe in bench/predict-shapes/*.yaml; do run "$(basename "$recipe" .yaml)" "$recipe" --steps 12 --window 4:11; done
  # Each shape predicted from the profile calibrated by its plain twin (base-2x8k: the same recipe without
  # --profile, docs/step-time.md "Calibration"), and from the profile alone (raw).
  for recipe in bench/predict-shapes/*.yaml; do
    name=$(basename "$recipe" .yaml)
    "$rb" predict "$recipe" --profile "$profile" --profile "$(record base-2x8k)" --format json \
      >"$out/$name.prediction.json" 2>"$out/$name.predict.err"
    "$rb" predict "$recipe" --profile "$profile" --format json >"$out/$name.raw-prediction.json" 2>>"$out/$name.predict.err"
  done
  "$rb" predict bench/predict-shapes/mb4-8k.yaml --profile "$profile" --profile "$(record base-2x8k)" >"$out/mb4-8k.prediction.txt" 2>&1
  "$python" bench/predict_summary.py "$out" >"$out/summary.txt" 2>&1; cat "$out/summary.txt"
  pack
fi

if [[ " $parts " == *" two "* ]]; then
  echo "== 3. the proxy's 2-GPU recipes: each rank emulated with --profile, each recipe predicted from its ranks"
  for layout in dp2 ep2 tp2 pp2; do
    recipe=recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-$layout-bf16.yaml
    profiles=()
    for rank in 0 1; do
      run "two-$layout-rank$rank" "$recipe" --emulate-rank "$rank" --profile --steps 10 --window 3:9
      profiles+=(--profile "$(record "two-$layout-rank$rank")")
    done
    "$rb" predict "$recipe" "${profiles[@]}" >"$out/two-$layout.prediction.txt" 2>&1
    "$rb" predict "$recipe" "${profiles[@]}" --format json >"$out/two-$layout.prediction.json" 2>/dev/null
    head -n 3 "$out/two-$layout.prediction.txt"
  done
  pack
fi

if [[ " $parts " == *" diag "* ]]; then
  echo "== 3b. the proxy profiled at two more shapes (one 16,384-token microbatch; four of 4,096): which components"
  echo "   scale with the tokens and which not (a diagnosis of the model, not used by its predictions)"
  run profile-rows2-8k bench/predict-shapes/rows2-8k.yaml --profile --steps 10 --window 3:9
  run profile-len4k-4x bench/predict-shapes/len4k-4x.yaml --profile --steps 10 --window 3:9
fi

if [[ " $parts " == *" seed "* ]]; then
  echo "== 4. the seed's mt8k and 48-GPU layouts, one rank of each kind emulated with --profile at 397B widths"
  while read -r file rank layers kind; do
    [[ " ${SEED_RECIPES:-$file} " == *" $file "* ]] || continue
    extra=()
    [ "$layers" != - ] && extra=(--layers "$layers")
    run "seed-$file-$kind" "recipes/qwen3.5-397b-a17b/b200/$file.yaml" --emulate-rank "$rank" "${extra[@]}" --profile \
      --steps 3 --window 1:2
  done <<'EOF'
attune-tp2-pp8-ep8-vpp2-mt8k 0 - first
attune-tp2-pp8-ep8-vpp2-mt8k 20 6 middle
attune-tp2-pp8-ep8-vpp2-mt8k 63 - last
attune-48gpu-tp2-pp6-ep8 0 6 first
attune-48gpu-tp2-pp6-ep8 20 6 middle
attune-48gpu-tp2-pp6-ep8 47 6 last
EOF
  pack
fi
echo "== done"
