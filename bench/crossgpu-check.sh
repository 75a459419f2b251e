#!/usr/bin/env bash
# Issue 47's cross-GPU check from the committed records (CPU only): the 35B-A3B proxy's shapes measured on one H100
# at 2 layers (reports/bench/h100-2026-12-05-crossgpu/proxy2), each predicted from the committed H200 profile
# (reports/bench/h200-2026-12-03-predict/call1: 4 layers, calibrated by its plain twin) carried to the H100 operation
# by operation, by the ratio of peaks alone (bench/peak-ratio-catalog.yaml), and from the H100's own profile (same
# GPU). Writes OUT/predictions/*.json and OUT/summary.json. Run from the repository root after a build.
set -euo pipefail
cd "$(dirname "$0")/.."
rb=${RB:-build/recipebench}
out=${1:-reports/bench/h100-2026-12-05-crossgpu}
h200=reports/bench/h200-2026-12-03-predict/call1
one() { ls "$1"/*.json | head -n 1; }
mkdir -p "$out/predictions" "$out/recipes"
for r in bench/predict-shapes/*.yaml; do
  n=$(basename "$r" .yaml)
  h=$out/recipes/$n-h100-2l.yaml  # the shape as it ran: H100, 2 layers
  sed -e 's/^  type: H200$/  type: H100/' -e 's/^  memory_gb: 141$/  memory_gb: 80/' \
    -e 's/^  instance: AWS p5en.48xlarge$/  instance: AWS p5.48xlarge/' -e 's/^  layers: [0-9]*$/  layers: 2/' "$r" >"$h"
  "$rb" predict "$h" --profile "$(one $h200/profile-2x8k)" --profile "$(one $h200/base-2x8k)" --format json \
    >"$out/predictions/$n.per-operation.json"
  "$rb" predict "$h" --profile "$(one $h200/profile-2x8k)" --profile "$(one $h200/base-2x8k)" \
    --catalog bench/peak-ratio-catalog.yaml --format json >"$out/predictions/$n.peak-ratio.json"
  "$rb" predict "$h" --profile "$(one "$out/proxy2/profile-2x8k")" --profile "$(one "$out/proxy2/base-2x8k")" \
    --format json >"$out/predictions/$n.same-gpu.json"
done
python3 - "$out" <<'PY'
import json, sys, pathlib, statistics
out = pathlib.Path(sys.argv[1])
rows, err = [], {"per-operation": [], "peak-ratio": [], "same-gpu": []}
for rec in sorted((out / "proxy2").glob("*/*.json")):
    n = rec.parent.name
    if n == "profile-2x8k":
        continue
    measured = json.load(open(rec))["metrics"]["mean_step_seconds"]
    row = {"shape": n, "measured_step_s": measured}
    for m in err:
        p = json.load(open(out / "predictions" / f"{n}.{m}.json"))["step_seconds"]
        row[m] = {"step_s": p, "error": p / measured - 1}
        if not (m == "same-gpu" and n == "base-2x8k"):  # the same-GPU profile's own twin: 0 by construction
            err[m].append(abs(p / measured - 1))
    rows.append(row)
summary = {
    "gpu": "NVIDIA H100 80GB HBM3 (one, device nvidia-h100-x1)",
    "cross_gpu_mean_abs_error": statistics.mean(err["per-operation"]),
    "cross_gpu_max_abs_error": max(err["per-operation"]),
    "single_ratio_mean_abs_error": statistics.mean(err["peak-ratio"]),
    "same_gpu_mean_abs_error": statistics.mean(err["same-gpu"]),
    "shapes": rows,
}
json.dump(summary, open(out / "summary-proxy.json", "w"), indent=2)  # merged into summary.json with the published layout (README)
print("| shape | measured step (s) | per-operation from H200 | peak ratio from H200 | same GPU (H100 profile) |")
print("|---|---|---|---|---|")
for r in rows:
    print(f"| {r['shape']} | {r['measured_step_s']:.4f} | " + " | ".join(
        f"{r[m]['step_s']:.4f} ({100 * r[m]['error']:+.1f}%)" for m in err) + " |")
print({k: round(v, 4) for k, v in summary.items() if k.endswith("error")})
PY
