#!/usr/bin/env python3
"""Per-kernel time of a training run from Nsight Compute's CSV (GPU machine).

bench/h200-1gpu.sh (part `kernels`) runs `recipebench run ... --steps S` under
`ncu --clock-control none --metrics gpu__time_duration.sum --print-units base --csv` (one pass per kernel, no
replay: each launch's own duration in ns, the kernels serialised). This script sums the durations by kernel name
and prints the kernels that take the most time, per step (total / S: the model build's kernels are in the total
too, under their own names), with their share, launches per step and mean duration; `--json` writes the same table.
Durations under ncu are the kernels' own; the gaps between them (launch overhead, host work) are not counted.

With --step-end REGEX (a kernel that runs once at the end of every step, e.g. the optimizer's `adamw_chunks`), only
the launches after the first step's end count, and STEPS is the number of steps after it: the steady steps alone,
without the model build and the first step's one-time work.

Usage: kernel_table.py NCU_CSV STEPS [--top N] [--json PATH] [--step-end REGEX]
"""
import argparse
import collections
import csv
import json
import os
import re
import sys


def short_name(name, width=110):
    """A readable kernel name: the argument list cut, namespaces dropped, template arguments kept (they tell which
    elementwise operation a libtorch kernel runs), at most `width` characters."""
    name = name.replace("(anonymous namespace)::", "")
    depth = 0
    for i, ch in enumerate(name):  # cut at the argument list: the first "(" outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            name = name[:i]
            break
    name = re.sub(r"^(void|auto)\s+", "", name.strip())
    name = re.sub(r"\b[A-Za-z_]\w*::", "", name)
    return name if len(name) <= width else name[: width - 3] + "..."


def read_durations(path):
    """(kernel name, duration ns) for each launch in the CSV; rows of other metrics are skipped."""
    with open(path, newline="", errors="replace") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages are not CSV rows
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        unit = row.get("Metric Unit", "ns")
        scale = {"ns": 1.0, "nsecond": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}.get(unit, 1.0)
        yield row.get("Kernel Name", "?"), value * scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("steps", type=int)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--json")
    ap.add_argument("--step-end")
    a = ap.parse_args()
    total = collections.Counter()
    launches = collections.Counter()
    launches_all = list(read_durations(a.csv))
    if a.step_end:
        ends = [i for i, (name, _) in enumerate(launches_all) if re.search(a.step_end, name)]
        if len(ends) < 2:
            sys.exit(f"{a.csv}: --step-end {a.step_end!r} matched {len(ends)} launches, need at least 2")
        launches_all = launches_all[ends[0] + 1 : ends[-1] + 1]
        a.steps = len(ends) - 1
    for name, ns in launches_all:
        key = short_name(name)
        total[key] += ns
        launches[key] += 1
    all_ns = sum(total.values())
    if not all_ns:
        sys.exit(f"{a.csv}: no gpu__time_duration.sum rows")
    rows = []
    what = "steady steps after the first" if a.step_end else "model build included"
    print(f"{len(launches)} kernels, {sum(launches.values())} launches, {all_ns / 1e6 / a.steps:.1f} ms of kernel time "
          f"per step ({a.steps} steps, {what})")
    print(f"{'ms/step':>9} {'%':>6} {'launches/step':>14} {'mean us':>9}  kernel")
    for key, ns in total.most_common(a.top):
        row = {"kernel": key, "ms_per_step": ns / 1e6 / a.steps, "share": ns / all_ns,
               "launches_per_step": launches[key] / a.steps, "mean_us": ns / 1e3 / launches[key]}
        rows.append(row)
        print(f"{row['ms_per_step']:9.2f} {100 * row['share']:5.1f}% {row['launches_per_step']:14.1f} "
              f"{row['mean_us']:9.1f}  {key}")
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump({"steps": a.steps, "steady_steps_only": bool(a.step_end), "kernel_ms_per_step": all_ns / 1e6 / a.steps,
                       "top": rows}, f, indent=1)
        os.replace(a.json + ".tmp", a.json)


if __name__ == "__main__":
    main()
