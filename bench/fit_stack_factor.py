#!/usr/bin/env python3
"""The seed's three B200 rows predicted by `recipebench predict` from the given profiles: the raw error of each, then
the stack factor fitted on the mt16k row (bisection on --stack-factor until the prediction meets its measured
tokens/s/GPU) and the other two rows' errors with it, and whether the predicted order is the seed's.

    RB=build/recipebench python3 bench/fit_stack_factor.py --profile A.json --profile B.json ...
"""
import json
import os
import re
import subprocess
import sys

SEED = "recipes/qwen3.5-397b-a17b/b200/"
ROWS = ["attune-tp2-pp8-ep8-vpp2-mt16k", "attune-tp2-pp8-ep8-vpp2-mt8k", "attune-48gpu-tp2-pp6-ep8"]
FIT_ON = ROWS[0]


def measured(row):
    text = open(SEED + row + ".yaml").read()
    return float(re.search(r"\n  tokens_per_s_per_gpu: ([0-9.]+)", text).group(1))


def predict(row, profiles, factor):
    rb = os.environ.get("RB", "build/recipebench")
    out = subprocess.run([rb, "predict", SEED + row + ".yaml", *profiles, "--stack-factor", repr(factor),
                          "--format", "json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main(profiles):
    rows = {r: {"measured_tokens_per_s_per_gpu": measured(r)} for r in ROWS}
    for r in ROWS:
        p = predict(r, profiles, 1.0)
        rows[r]["raw_tokens_per_s_per_gpu"] = p["tokens_per_s_per_gpu"]
        rows[r]["raw_error"] = p["tokens_per_s_per_gpu"] / rows[r]["measured_tokens_per_s_per_gpu"] - 1
    lo, hi = 0.2, 10.0
    target = rows[FIT_ON]["measured_tokens_per_s_per_gpu"]
    for _ in range(40):
        mid = (lo + hi) / 2
        if predict(FIT_ON, profiles, mid)["tokens_per_s_per_gpu"] > target:
            lo = mid
        else:
            hi = mid
    factor = (lo + hi) / 2
    for r in ROWS:
        p = predict(r, profiles, factor)
        rows[r]["fitted_tokens_per_s_per_gpu"] = p["tokens_per_s_per_gpu"]
        rows[r]["fitted_error"] = p["tokens_per_s_per_gpu"] / rows[r]["measured_tokens_per_s_per_gpu"] - 1
        rows[r]["fitted_step_seconds"] = p["step_seconds"]
        rows[r]["fitted_breakdown"] = p["breakdown"]
    seed_order = sorted(ROWS, key=lambda r: -rows[r]["measured_tokens_per_s_per_gpu"])
    predicted_order = sorted(ROWS, key=lambda r: -rows[r]["fitted_tokens_per_s_per_gpu"])
    print(f"stack factor fitted on {FIT_ON}: {factor:.4f}")
    print(f"{'row':<32} {'measured':>9} {'raw':>9} {'raw err':>8} {'fitted':>9} {'error':>7}")
    for r in ROWS:
        x = rows[r]
        print(f"{r:<32} {x['measured_tokens_per_s_per_gpu']:>9.1f} {x['raw_tokens_per_s_per_gpu']:>9.1f} "
              f"{100 * x['raw_error']:>+7.1f}% {x['fitted_tokens_per_s_per_gpu']:>9.1f} {100 * x['fitted_error']:>+6.1f}%")
    print("seed's order:     ", " > ".join(seed_order))
    print("predicted order:  ", " > ".join(predicted_order), "(same)" if seed_order == predicted_order else "(differs)")
    summary = {"profiles": [p for p in profiles if p != "--profile"], "stack_factor": factor, "fitted_on": FIT_ON,
               "rows": rows, "seed_order": seed_order, "predicted_order": predicted_order}
    with open("reports/bench/h200-2026-12-03-predict/seed.json", "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
