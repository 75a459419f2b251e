#!/usr/bin/env bash
# Issue 43's validation of the step-time model's modes on the seed's three B200 rows (docs/step-time.md, "Checked"),
# CPU only (`recipebench predict` is arithmetic). Run from the repository root after a build:
#   bash bench/prediction-check.sh [OUT]      (default OUT: reports/bench/prediction-check-2026-12-05)
# Each row predicted from the seed's emulated H200 ranks (the mt16k ranks of reports/bench/h200-2026-12-02-emulate-
# profile, the 48-GPU ranks of reports/bench/h200-2026-12-03-predict/call2): carried operation by operation (the
# catalog's efficiencies), by the ratio of peaks alone (bench/peak-ratio-catalog.yaml laid over the catalog), both
# calibrated on the mt16k row (--calibrate); and in the analytical mode (no profile), raw and calibrated.
# Writes OUT/predictions/*.json, OUT/table.md and OUT/summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
rb=${RB:-build/recipebench}
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
PY
