#!/usr/bin/env bash
# One call on one H200 (`nvidia-h200`) for issue 29 (an emulated rank, docs/emulation.md). Run from the repository
# root with .deps/ carried:   RECIPEBENCH_GIT_COMMIT=<commit> bash bench/h200-emulate.sh
# 1. builds with scripts/gpu-build into build-gpu/;
# 2. the GPU tests (ctest -L cuda; PARTS without "tests" skips them);
# 3. the seed's three B200 recipes (Qwen3.5-397B-A17B at its real widths): the rank map and memory plan (--dry-run),
#    then a first-, a middle- and a last-stage rank of each emulated on this H200 (--emulate-rank; --layers K where
#    the plan of the whole stage does not fit 141 GB), each twice: plain (step time, peak memory against the plan)
#    and with --profile (time per component);
# 4. the 35B-A3B proxy's 2-GPU recipes (DP2, EP2, TP2, PP2): each rank emulated (plain), for the step-time model
#    to check against the committed 2-GPU records;
# 5. summary.json: per emulated rank its place, layers, mean step, peak memory against the plan, profile
#    components per microbatch and traffic per step (bench/emulation_summary.py).
# Everything is kept in bench/out/h200-emulate/ and packed into $OUT/h200-emulate.tar.gz after every run. Each run has
# its own time limit (RUN_LIMIT seconds, default 150); STEPS and WINDOW (default 3 and 1:2) set every run's steps.
# PARTS (default "tests seed proxy") picks the parts after the build, RECIPES (default all three) the seed recipes:
# a call is at most 10 minutes, so the seed's recipes go in two calls (the build stays on the machine between them).
# KINDS (default "first middle last") picks the kinds of rank; PLAIN=0 runs only the --profile run of each.
set -uo pipefail
[ -n "${RECIPEBENCH_GIT_COMMIT:-}" ] || echo "note: RECIPEBENCH_GIT_COMMIT is not set: the records name the copy's HEAD"
cd "$(dirname "$0")/.."
out=bench/out/h200-emulate
rm -rf "$out" && mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && tar -czf "$OUT/h200-emulate.tar.gz.tmp" -C bench/out h200-emulate &&
  mv "$OUT/h200-emulate.tar.gz.tmp" "$OUT/h200-emulate.tar.gz"; }
limit=${RUN_LIMIT:-150}
parts=${PARTS:-"tests seed proxy"}
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

if [[ " $parts " == *" tests "* ]]; then
  echo "== 2. GPU tests (ctest -L cuda)"
  timeout 300 ctest --test-dir build-gpu -L cuda --output-on-failure >"$out/ctest-cuda.log" 2>&1
  grep -E "tests passed|tests failed|\*\*\*" "$out/ctest-cuda.log" | tail -n 12
  pack
fi

emulate() {  # emulate NAME RECIPE RANK [ARGS...]: one emulated rank into $out/NAME/, log $out/NAME.log
  local name=$1 recipe=$2 rank=$3; shift 3
  timeout -k 10 "$limit" "$rb" run "$recipe" --device cuda --emulate-rank "$rank" --steps "${STEPS:-3}" --window "${WINDOW:-1:2}" "$@" \
    --out "$out/$name" >"$out/$name.log" 2>&1 || { echo "run $name failed:"; tail -n 8 "$out/$name.log"; }
  grep -E "^emulated rank|^  (layers|window|peak)" "$out/$name.log" | sed "s/^/$name: /"
  pack
}

if [[ " $parts " == *" seed "* ]]; then
  echo "== 3. the seed's B200 recipes at 397B widths, one rank of each kind emulated on this H200"
  # Per kind of rank: the rank and its --layers (- for the whole stage). The whole-stage plans (run --dry-run):
  # mt16k 118.1 / 145.9 / 115.4 GB, mt8k 115.8 / 143.2 / 114.5 GB, 48gpu 180.2 / 173.7 / 178.4 GB; ~18 GB a layer, so
  # 6 layers (3 per virtual stage with VPP 2, an attention layer among each 3) fit the H200's 141 GB.
  while read -r file first first_layers middle middle_layers last last_layers; do
    [[ " ${RECIPES:-$file} " == *" $file "* ]] || continue
    recipe=recipes/qwen3.5-397b-a17b/b200/$file.yaml
    "$rb" run "$recipe" --dry-run --device cuda >"$out/$file.dry-run.txt" 2>&1
    for kind in ${KINDS:-first middle last}; do
      layers_var=${kind}_layers
      rank=${!kind} layers=${!layers_var}
      extra=()
      [ "$layers" != - ] && extra=(--layers "$layers")
      [ "${PLAIN:-1}" = 1 ] && emulate "$file-$kind" "$recipe" "$rank" "${extra[@]}"
      emulate "$file-$kind-profile" "$recipe" "$rank" "${extra[@]}" --profile
    done
  done <<'RANKS'
attune-tp2-pp8-ep8-vpp2-mt16k 0 - 20 6 63 -
attune-tp2-pp8-ep8-vpp2-mt8k 0 - 20 6 63 -
attune-48gpu-tp2-pp6-ep8 0 6 20 6 47 6
RANKS
fi

if [[ " $parts " == *" proxy "* ]]; then
  echo "== 4. the 35B-A3B proxy's 2-GPU recipes, each rank emulated"
  for layout in dp2 ep2 tp2 pp2; do
    for rank in 0 1; do
      emulate "proxy-$layout-rank$rank" "recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-$layout-bf16.yaml" "$rank" --seed 7
    done
  done
fi

echo "== 5. summary"
"$python" bench/emulation_summary.py "$out" >"$out/summary.json" 2>"$out/summary.err" || cat "$out/summary.err"
"$python" bench/emulation_summary.py "$out" --table 2>/dev/null
pack
