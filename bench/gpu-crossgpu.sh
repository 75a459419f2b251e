#!/usr/bin/env bash
# Issue 47's device calls: the step-time model checked on a GPU it was not profiled on (docs/step-time.md), and the
# per-GPU speed of a published layout. Run from the repository root on the device machine with .deps/ carried:
#   RECIPEBENCH_GIT_COMMIT=<commit> PARTS="proxy" bash bench/gpu-crossgpu.sh
# Parts (PARTS, default "proxy published seed tests"), each run kept in bench/out/crossgpu/ and packed into
# $OUT/crossgpu.tar.gz after every run (each run limited to RUN_LIMIT s, default 150):
#   build      scripts/gpu-build into build-gpu/ (skipped when build-gpu/recipebench exists and BUILD=0);
#   proxy      the 35B-A3B proxy profiled at 2 x 8,192 tokens (`run --profile`) and every shape of
#              bench/predict-shapes/ measured plainly: the same runs as the H200's reports/bench/h200-2026-12-03-predict
#              call1, so each shape's measured step here sets against its prediction from the H200's profile;
#   published  recipes/qwen3.5-35b-a3b/h100/published-16gpu-tp1-pp2-ep8-bf16.yaml: the first rank of each pipeline
#              stage (ranks 0 and 8) emulated with --profile at PUBLISHED_LAYERS of the stage's 20 layers, and rank 0
#              plainly (the profile's calibration twin);
#   seed       the seed's mt16k and 48-GPU layouts, a first, middle and last rank each emulated with --profile at
#              SEED_LAYERS layers (the H200's profiles of the same ranks are committed); SEED_KINDS (default
#              "first middle last") picks the ranks;
#   tests      ctest -L cuda.
set -uo pipefail
[ -n "${RECIPEBENCH_GIT_COMMIT:-}" ] || echo "note: RECIPEBENCH_GIT_COMMIT is not set: the records name the copy's HEAD"
cd "$(dirname "$0")/.."
out=bench/out/crossgpu
mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && tar -czf "$OUT/crossgpu.tar.gz.tmp" -C bench/out crossgpu &&
  mv "$OUT/crossgpu.tar.gz.tmp" "$OUT/crossgpu.tar.gz"; }
limit=${RUN_LIMIT:-150}
parts=${PARTS:-"proxy published seed tests"}
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader >"$out/gpu.txt"
# The carried .deps/ replaces the machine's on every call: unpack its packages whether or not this call builds.
mkdir -p .deps/prefix && for deb in .deps/*.deb; do dpkg -x "$deb" .deps/prefix; done
cat "$out/gpu.txt"
if [ "${BUILD:-1}" = 1 ] || [ ! -x build-gpu/recipebench ]; then
  echo "== build (scripts/gpu-build)"
  { time scripts/gpu-build 2>&1 | tail -n 20; } >"$out/build.log" 2>&1
  tail -n 4 "$out/build.log"
fi
[ -x build-gpu/recipebench ] || { echo "build failed"; grep -E "error|FAILED" "$out/build.log" | head -30; pack; exit 1; }
pack
rb=build-gpu/recipebench

run() {  # run NAME RECIPE [ARGS...]: one run into $out/NAME/, log $out/NAME.log
  local name=$1 recipe=$2; shift 2
  local start=$SECONDS
  rm -rf "${out:?}/$name"
  timeout -k 10 "$limit" "$rb" run "$recipe" --device cuda "$@" --out "$out/$name" >"$out/$name.log" 2>&1 ||
    { echo "run $name failed:"; tail -n 8 "$out/$name.log"; }
  echo "$name: $((SECONDS - start)) s; $(grep -E "tokens/s/GPU|mean step" "$out/$name.log" | head -n 1)"
  pack
}

if [[ " $parts " == *" proxy "* ]]; then
  echo "== proxy: one profile at 2 x 8,192, every shape measured plainly"
  run profile-2x8k bench/predict-shapes/base-2x8k.yaml --profile --steps 10 --window 3:9
  for recipe in bench/predict-shapes/*.yaml; do run "$(basename "$recipe" .yaml)" "$recipe" --steps 12 --window 4:11; done
fi

if [[ " $parts " == *" published "* ]]; then
  echo "== published: the 16-GPU TP1 PP2 EP8 DP8 layout's first rank of each stage"
  recipe=recipes/qwen3.5-35b-a3b/h100/published-16gpu-tp1-pp2-ep8-bf16.yaml
  layers=${PUBLISHED_LAYERS:-10}
  run published-rank0-profile "$recipe" --emulate-rank 0 --layers "$layers" --profile --steps 3 --window 1:2
  run published-rank8-profile "$recipe" --emulate-rank 8 --layers "$layers" --profile --steps 3 --window 1:2
  run published-rank0 "$recipe" --emulate-rank 0 --layers "$layers" --steps 3 --window 1:2
fi

if [[ " $parts " == *" seed "* ]]; then
  echo "== seed: first, middle and last ranks of the mt16k and 48-GPU layouts at ${SEED_LAYERS:-2} layers"
  while read -r file rank kind; do
    [[ " ${SEED_KINDS:-first middle last} " == *" $kind "* ]] || continue
    run "seed-$file-$kind" "recipes/qwen3.5-397b-a17b/b200/$file.yaml" --emulate-rank "$rank" \
      --layers "${SEED_LAYERS:-2}" --profile --steps 3 --window 1:2
  done <<'LIST'
attune-tp2-pp8-ep8-vpp2-mt16k 0 first
attune-tp2-pp8-ep8-vpp2-mt16k 20 middle
attune-tp2-pp8-ep8-vpp2-mt16k 63 last
attune-48gpu-tp2-pp6-ep8 0 first
attune-48gpu-tp2-pp6-ep8 20 middle
attune-48gpu-tp2-pp6-ep8 47 last
LIST
fi

if [[ " $parts " == *" tests "* ]]; then
  echo "== tests: ctest -L cuda"
  (cd build-gpu && timeout -k 10 300 ctest -L cuda --output-on-failure) >"$out/ctest-cuda.log" 2>&1
  tail -n 6 "$out/ctest-cuda.log"
  pack
fi
echo "== done"
