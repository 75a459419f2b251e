#!/usr/bin/env python3
"""The step-time model's check on one GPU (bench/h200-predict.sh): for each shape of bench/predict-shapes/, the
measured mean step (its run record's window) against the step `recipebench predict` gave from the one profile; the
error of each and the mean absolute error. Writes summary.json beside the records and prints a table.

    python3 bench/predict_summary.py bench/out/h200-predict
"""
import glob
import json
import os
import sys


def window_mean(record):
    first, last = record["settings"]["window"]
    steps = [s["seconds"] for s in record["steps"] if first <= s["step"] <= last]
    return sum(steps) / len(steps)


def main(out):
    rows = []
    for pred_file in sorted(glob.glob(os.path.join(out, "*.prediction.json"))):
        name = os.path.basename(pred_file)[: -len(".prediction.json")]
        if name.startswith("two-"):
            continue
        records = glob.glob(os.path.join(out, name, "*.json"))
        if not records or os.path.getsize(pred_file) == 0:
            rows.append({"shape": name, "error": "no record or no prediction"})
            continue
        rec = json.load(open(records[0]))
        pred = json.load(open(pred_file))
        raw_file = pred_file.replace(".prediction.json", ".raw-prediction.json")
        raw = json.load(open(raw_file)) if os.path.exists(raw_file) and os.path.getsize(raw_file) else None
        measured = window_mean(rec)
        predicted = pred["step_seconds"]
        rows.append({
            "shape": name,
            "measured_step_seconds": measured,
            "predicted_step_seconds": predicted,
            "relative_error": predicted / measured - 1,
            "raw_predicted_step_seconds": raw["step_seconds"] if raw else None,
            "raw_relative_error": raw["step_seconds"] / measured - 1 if raw else None,
            "calibration_shape": name == "base-2x8k",
            "measured_tokens_per_s_per_gpu": rec["metrics"]["tokens_per_s_per_gpu"] if rec.get("metrics") else None,
            "predicted_tokens_per_s_per_gpu": pred["tokens_per_s_per_gpu"],
            "record": os.path.relpath(records[0], out),
        })
    # base-2x8k is the calibration's own shape (its error is 0 by construction): left out of the statistics.
    errors = [abs(r["relative_error"]) for r in rows if "relative_error" in r and not r["calibration_shape"]]
    raw_errors = [abs(r["raw_relative_error"]) for r in rows if r.get("raw_relative_error") is not None]
    summary = {
        "shapes": rows,
        "mean_absolute_error": sum(errors) / len(errors) if errors else None,
        "max_absolute_error": max(errors) if errors else None,
        "raw_mean_absolute_error": sum(raw_errors) / len(raw_errors) if raw_errors else None,
        "raw_max_absolute_error": max(raw_errors) if raw_errors else None,
    }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"{'shape':<16} {'measured s':>11} {'predicted s':>12} {'error':>8} {'raw error':>10}")
    for r in rows:
        if "relative_error" in r:
            print(f"{r['shape']:<16} {r['measured_step_seconds']:>11.4f} {r['predicted_step_seconds']:>12.4f} "
                  f"{100 * r['relative_error']:>+7.1f}% "
                  f"{100 * r['raw_relative_error'] if r['raw_relative_error'] is not None else float('nan'):>+9.1f}%"
                  f"{'  (calibration shape)' if r['calibration_shape'] else ''}")
        else:
            print(f"{r['shape']:<16} {r['error']}")
    if errors:
        print(f"calibrated: mean absolute error {100 * summary['mean_absolute_error']:.1f}%, "
              f"max {100 * summary['max_absolute_error']:.1f}% (the calibration shape left out)")
    if raw_errors:
        print(f"raw profile: mean absolute error {100 * summary['raw_mean_absolute_error']:.1f}%, "
              f"max {100 * summary['raw_max_absolute_error']:.1f}%")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/out/h200-predict")
