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
# Public rows of one model family on several GPUs with one stack (issue 43, item 5): Megatron-Bridge's GPT OSS 120B
# BF16 rows of the 26.04.01 container on DGX-H100, DGX-B200 and DGX-GB200 (reports/bench/public-rows-2026-12-06,
# each recipe naming its row). Each row: the analytical mode uncalibrated; its own stack factor (--calibrate on
# itself, the calibration rows); and every other row predicted with that factor (--stack-factor): calibrated on one
# GPU, predicted on the others. The seed's rows are predicted with the B200 row's factor too (a Megatron-on-B200 stack
# factor found apart from the seed).
pub=reports/bench/public-rows-2026-12-06/recipes
mkdir -p "$out/public-rows"
factor() { python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["basis"]["stack_factor"]))' "$1"; }
for g in h100 b200 gb200; do
  r=$pub/gpt-oss-120b-$g-26.04.01-bf16.yaml
  "$rb" predict "$r" --format json >"$out/public-rows/$g.analytical.json"
  "$rb" predict "$r" --calibrate "$r" --format json >"$out/public-rows/$g.calibration.json"
done
for c in h100 b200 gb200; do
  f=$(factor "$out/public-rows/$c.calibration.json")
  for g in h100 b200 gb200; do
    [ "$g" = "$c" ] && continue
    "$rb" predict "$pub/gpt-oss-120b-$g-26.04.01-bf16.yaml" --stack-factor "$f" --format json \
      >"$out/public-rows/$g.calibrated-on-$c.json"
  done
done
f=$(factor "$out/public-rows/b200.calibration.json")
for row in attune-tp2-pp8-ep8-vpp2-mt16k attune-tp2-pp8-ep8-vpp2-mt8k attune-48gpu-tp2-pp6-ep8; do
  "$rb" predict "$seed/$row.yaml" --stack-factor "$f" --format json >"$out/predictions/$row.analytical-public-b200-factor.json"
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
qwen = "Qwen3.5 MoE / Qwen3-Next"  # catalog/models.h family_label of the seed's and the proxy's model
for b in bands:
    b["family"] = qwen

# The public rows (reports/bench/public-rows-2026-12-06): errors, the table and their bands.
gpus = {"h100": "H100", "b200": "B200", "gb200": "GB200"}
pub = out / "public-rows"
def pred(name):
    j = json.load(open(pub / f"{name}.json"))
    return {"tokens_per_s_per_gpu": j["tokens_per_s_per_gpu"], "error": j["basis"]["measured"]["error"],
            "measured": j["basis"]["measured"]["tokens_per_s_per_gpu"], "stack_factor": j["basis"]["stack_factor"],
            "step_seconds": j["step_seconds"]}
public = {"source": "NVIDIA-NeMo/Megatron-Bridge 067f987df03b8355b03192d88d70f1709fedf51a, docs/performance-summary-archive.md, "
                    "26.04.01 NeMo Container, GPT OSS 120B, BF16 rows of DGX-H100, DGX-B200, DGX-GB200",
          "rows": {}}
for g, G in gpus.items():
    row = {"gpu": G, "analytical": pred(f"{g}.analytical"), "calibration_factor": pred(f"{g}.calibration")["stack_factor"]}
    for c in gpus:
        if c != g:
            row[f"calibrated_on_{c}"] = pred(f"{g}.calibrated-on-{c}")
    public["rows"][g] = row
seed_factor = public["rows"]["b200"]["calibration_factor"]
public["seed_with_public_b200_factor"] = {
    "stack_factor": seed_factor,
    "rows": {r: json.load(open(out / "predictions" / f"{r}.analytical-public-b200-factor.json"))["basis"]["measured"]["error"]
             for r in rows}}
json.dump(public, open(out / "public-rows.json", "w"), indent=2)
ptable = ["| row | measured | analytical | own factor | " + " | ".join(f"calibrated on {G}" for G in gpus.values()) + " |",
          "|---" * (4 + len(gpus)) + "|"]
for g, G in gpus.items():
    r = public["rows"][g]
    cells = [f"{r[f'calibrated_on_{c}']['tokens_per_s_per_gpu']:,.1f} ({100 * r[f'calibrated_on_{c}']['error']:+.1f}%)"
             if c != g else "(calibration row)" for c in gpus]
    ptable.append(f"| {G} | {r['analytical']['measured']:,.1f} | {r['analytical']['tokens_per_s_per_gpu']:,.1f} "
                  f"({100 * r['analytical']['error']:+.1f}%) | {r['calibration_factor']:.3f} | " + " | ".join(cells) + " |")
(out / "public-rows-table.md").write_text("\n".join(ptable) + "\n")
# Golden figures of a few of these predictions, recomputed by the CTest cli.public_rows_golden_predictions
# (tests/public_rows_golden.sh): recipe, stack factor, tokens/s/GPU.
golden = [f"gpt-oss-120b-{g}-26.04.01-bf16.yaml 1 {public['rows'][g]['analytical']['tokens_per_s_per_gpu']!r}"
          for g in gpus]
golden += [f"gpt-oss-120b-{g}-26.04.01-bf16.yaml {seed_factor!r} "
           f"{public['rows'][g]['calibrated_on_b200']['tokens_per_s_per_gpu']!r}" for g in gpus if g != "b200"]
pathlib.Path("reports/bench/public-rows-2026-12-06/golden.txt").write_text(
    "# recipe (under recipes/), --stack-factor, tokens/s/GPU: written by bash bench/prediction-check.sh\n"
    + "\n".join(golden) + "\n")
print("\n".join(ptable))
mb = "Megatron-Bridge's GPT OSS 120B BF16 row of the 26.04.01 container (NVIDIA's public table, forced-balanced routing)"
for g, G in gpus.items():
    r = public["rows"][g]
    bands.append(dict(band("analytical", False, "", G, [r["analytical"]["error"]], here,
                           mb + f" on DGX-{G}, no profile, no calibration"), family="gpt_oss"))
    others = [c for c in gpus if c != g]
    bands.append(dict(band("analytical", True, "", G, [r[f"calibrated_on_{c}"]["error"] for c in others], here,
                           mb + f" on DGX-{G}, the stack factor fitted on the same model's row on another GPU ("
                           + " and ".join(f"DGX-{gpus[c]}: {public['rows'][c]['calibration_factor']:.3f}" for c in others)
                           + ") and given by --stack-factor; the GPU's own row not used"), family="gpt_oss"))
json.dump({"schema": "recipebench-error-bands/1", "bands": bands}, open(out / "error-bands.json", "w"), indent=2)
PY
