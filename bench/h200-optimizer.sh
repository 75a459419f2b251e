#!/usr/bin/env bash
# One call on one H200 (`nvidia-h200`) for issue 31 item 1, the precision-aware optimizer state (docs/optimizer.md):
# 1. builds with scripts/gpu-build;
# 2. the GPU optimizer tests (test_torch_cuda "[adam]": the fused kernels with BF16 + remainder masters against the
#    FP32 arm, BF16 moments against libtorch's path, the seed's component test at its shape with its error figures);
# 3. adamw_bench: the optimizer step alone on 1e9 parameters, FP32 masters (fused, ops), remainders, BF16 moments;
# 4. the 35B-A3B proxy (recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml) with FP32 masters, with remainders and
#    with remainders + BF16 moments (bench/optimizer-shapes/): tokens/s, peak memory, and `recipebench converge`
#    of each against the FP32 arm;
# 5. the seed recipes' memory plans (`run --dry-run`) and `validate --strict`.
# Run from the repository root with .deps/ present:   RECIPEBENCH_GIT_COMMIT=<commit> bash bench/h200-optimizer.sh
# Everything goes to bench/out/h200-optimizer/, packed into $OUT/h200-optimizer.tar.gz after every part.
set -uo pipefail
cd "$(dirname "$0")/.."
out=bench/out/h200-optimizer
rm -rf "$out" && mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && tar -czf "$OUT/h200-optimizer.tar.gz.tmp" -C bench/out h200-optimizer && mv "$OUT/h200-optimizer.tar.gz.tmp" "$OUT/h200-optimizer.tar.gz"; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; time scripts/gpu-build 2>&1 | tail -n 30; } \
  > "$out/build.log" 2>&1
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x build-gpu/recipebench ] || { echo "build failed"; grep -E "error|FAILED" "$out/build.log" | head -30; pack; exit 1; }
rb=build-gpu/recipebench

echo "== GPU optimizer tests"
timeout 240 build-gpu/backends/torch/test_torch_cuda "[adam]" > "$out/test-adam.log" 2>&1
echo "rc=$?"; grep -E "worst|passed|failed|FAILED|with expansion" "$out/test-adam.log" | head -30
pack

echo "== adamw_bench"
timeout 120 build-gpu/backends/torch/adamw_bench --params 1e9 --steps 10 | tee "$out/adamw_bench.json"
pack

run() {  # run NAME RECIPE: one run into $out/NAME/
  timeout -k 10 150 "$rb" run "$2" --seed 7 --out "$out/$1" > "$out/$1.log" 2>&1 || { echo "run $1 failed:"; tail -n 8 "$out/$1.log"; }
  grep -E "^window|peak" "$out/$1.log" | tail -n 2
  pack
}
echo "== proxy runs"
run fp32 recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml
run remainder bench/optimizer-shapes/proxy4l-1gpu-remainder.yaml
run bf16-moments bench/optimizer-shapes/proxy4l-1gpu-bf16-moments.yaml
for c in remainder bf16-moments; do
  echo "== converge fp32 -> $c"
  "$rb" converge "$out"/fp32/*.json "$out"/$c/*.json > "$out/converge-$c.txt" 2>&1; echo "rc=$?"; cat "$out/converge-$c.txt" | head -20
done
pack

echo "== seed recipes: plans"
for f in recipes/qwen3.5-397b-a17b/b200/*.yaml; do
  "$rb" run "$f" --dry-run > "$out/dry-$(basename "$f" .yaml).txt" 2>&1
  grep -iE "peak|fits|does not fit" "$out/dry-$(basename "$f" .yaml).txt" | head -6
done
"$rb" validate --strict recipes/qwen3.5-397b-a17b/b200/ > "$out/validate-strict.txt" 2>&1; echo "validate --strict rc=$?"; tail -n 3 "$out/validate-strict.txt"
pack
