#!/usr/bin/env bash
# Issue 43's validation of the step-time model's modes on the seed's three B200 rows (docs/step-time.md, "Checked"),
# CPU only (`recipebench predict` is arithmetic). Run from the repository root after a build:
#   bash bench/prediction-check.sh [OUT]      (default OUT: reports/bench/prediction-check-2026-12-05)
# Each row predicted from the seed's emulated H200 ranks (the mt16k ranks of reports/bench/h200-2026-12-02-emulate-
# profile, the 48-GPU ranks of reports/bench/h200-2026-12-03-predict/call2): carried operation by operation (the
# catalog's efficiencies), by the ratio of peaks alone (bench/peak-ratio-catalog.yaml laid over the catalog), both
# calibrated on the mt16k row (--calibrate); and in the analytical mode (no profile), raw and calibrated.
# Writes OUT/predictions/*.json, OUT/table.md, OUT/summary.json and OUT/error-bands.json (the error band of each
# mode, embedded in the binary: harness/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
rb=${RB:-build/recipebench}  # RB=build-harness/recipebench after `cmake --preset harness`
out=${1:-reports/bench/prediction-check-2026-12-05}
mkdir -p "$out/predictions"
seed=recipes/qwen3.5-397b-a17b/b200
calib=$seed/attune-tp2-pp8-ep8-vpp2-mt16k.yaml
profiles=()
for f in reports/bench/h200-2026-12-02-emulate-profile/*-profile/*.json reports/bench/h200-2026-12-03-predict/call2/seed-*/*.json; do
  profiles+=(--profile "$f")
done
for row in attune-tp2-pp8-ep8-vpp2-mt16k attune-tp2-pp8-ep8-vpp2-mt8k attune-48gpu-tp2-pp6-ep8; do
  r=$seed/$row.yaml
  p=$out/predictions/$row
  "$rb" predict "$r" "${profiles[@]}" --format json >"$p.per-operation.json"
  "$rb" predict "$r" "${profiles[@]}" --catalog bench/peak-ratio-catalog.yaml --format json >"$p.peak-ratio.json"
  "$rb" predict "$r" "${profiles[@]}" --calibrate "$calib" --format json >"$p.per-operation-calibrated.json"
  "$rb" predict "$r" "${profiles[@]}" --catalog bench/peak-ratio-catalog.yaml --calibrate "$calib" --format json \
    >"$p.peak-ratio-calibrated.json"
  "$rb" predict "$r" --format json >"$p.analytical.json"
  "$rb" predict "$r" --calibrate "$calib" --format json >"$p.analytical-calibrated.json"
done
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
rows = ["attune-tp2-pp8-ep8-vpp2-mt16k", "attune-tp2-pp8-ep8-vpp2-mt8k", "attune-48gpu-tp2-pp6-ep8"]
modes = ["peak-ratio", "per-operation", "peak-ratio-calibrated", "per-operation-calibrated", "analytical",
         "analytical-calibrated"]
table = ["| row | measured | " + " | ".join(modes) + " |", "|---" * (len(modes) + 2) + "|"]
summary = {"rows": {}, "calibrated_on": rows[0]}
for row in rows:
    cells, s = [], {}
    for m in modes:
        j = json.load(open(out / "predictions" / f"{row}.{m}.json"))
        b = j["basis"]
        measured = b["measured"]["tokens_per_s_per_gpu"]
        s[m] = {"tokens_per_s_per_gpu": j["tokens_per_s_per_gpu"], "error": b["measured"]["error"],
                "stack_factor": b["stack_factor"]}
        cells.append(f"{j['tokens_per_s_per_gpu']:,.1f} ({100 * b['measured']['error']:+.1f}%)")
    s["measured"] = measured
    summary["rows"][row] = s
    table.append(f"| {row} | {measured:,.1f} | " + " | ".join(cells) + " |")
(out / "table.md").write_text("\n".join(table) + "\n")
json.dump(summary, open(out / "summary.json", "w"), indent=2)
print("\n".join(table))

# The error band of each mode (docs/step-time.md, "What a prediction says about itself"): embedded in the binary
# (harness/CMakeLists.txt) and printed beside every prediction. The profiled same-GPU and H200 -> H100 rows are read
# from the reports that measured them; the seed's rows from this check (a calibrated mode's calibration row left out).
def band(mode, calibrated, source_gpu, target_gpu, errors, source, what):
    return {"mode": mode, "calibrated": calibrated, "from": source_gpu, "to": target_gpu, "rows": len(errors),
            "mean_abs_error": sum(abs(e) for e in errors) / len(errors), "max_abs_error": max(abs(e) for e in errors),
            "min_error": min(errors), "max_error": max(errors), "source": source, "what": what}
def errs(m, skip_first=False):
    return [summary["rows"][r][m]["error"] for r in (rows[1:] if skip_first else rows)]
here = str(out) + ", by bash bench/prediction-check.sh"
seed = "the seed's three B200 rows (slime + Megatron-LM, measured 2026-10-18)"
same = json.load(open("reports/bench/h200-2026-12-03-predict/call1/summary.json"))
h100 = json.load(open("reports/bench/h100-2026-12-05-crossgpu/summary.json"))
same_errors = [s["relative_error"] for s in same["shapes"] if not s["calibration_shape"]]
bands = [
    band("profiled_same_gpu", False, "H200", "H200", same_errors,
         "reports/bench/h200-2026-12-03-predict/call1/summary.json",
         "the 35B-A3B proxy's shapes of the profile's widths on one H200 (step time), the profile calibrated by its "
         f"plain twin ({100 * same['raw_mean_absolute_error']:.1f}% mean from a --profile record alone)"),
    band("profiled_other_gpu", False, "H200", "H100", [s["per-operation"]["error"] for s in h100["shapes"]],
         "reports/bench/h100-2026-12-05-crossgpu/summary.json",
         "the 35B-A3B proxy's shapes measured on one H100 (step time), predicted from the H200 profile"),
    band("profiled_other_gpu", False, "H200", "B200", errs("per-operation"), here, seed + " from the seed's H200 emulated ranks"),
    band("profiled_other_gpu", True, "H200", "B200", errs("per-operation-calibrated", True), here,
         "the seed's other two B200 rows, the stack factor fitted on " + rows[0]),
    band("analytical", False, "", "B200", errs("analytical"), here, seed + ", no profile"),
    band("analytical", True, "", "B200", errs("analytical-calibrated", True), here,
         "the seed's other two B200 rows, no profile, the stack factor fitted on " + rows[0]),
]
json.dump({"schema": "recipebench-error-bands/1", "bands": bands}, open(out / "error-bands.json", "w"), indent=2)
PY
