#!/usr/bin/env python3
"""compare.py A B: two run folders of the parity tests (runs/*.json, params.bin and, with RECIPEBENCH_DUMP_STEP_PARAMS=1,
params.bin.step<S>), per step: the loss's and the gradient norm's relative difference, and the parameters' relative L2
difference after the step (the test's formulas, tests/test_distributed.cpp check_runs_agree). Standard library only."""
import array, glob, json, math, os, sys


def record(folder):
    files = sorted(glob.glob(os.path.join(folder, "runs", "*.json")))
    return json.load(open(files[-1])) if files else None


def params(path):
    if not os.path.exists(path):
        return None
    a = array.array("d")
    a.frombytes(open(path, "rb").read())
    return a


def relative_l2(a, b):
    if a is None or b is None or len(a) != len(b):
        return float("nan")
    diff = sum((x - y) ** 2 for x, y in zip(a, b))
    return math.sqrt(diff / sum(x * x for x in a))


def main(one, many):
    ra, rb = record(one), record(many)
    print("step | loss (A) | loss | gradient norm (A) | gradient norm | parameters after the step")
    for s in range(len(ra["steps"])):
        la, ga = ra["steps"][s]["loss"], ra["steps"][s]["grad_norm"]
        if rb is None or s >= len(rb["steps"]):
            print(f"{s} | {la!r} | (no step) | {ga!r} | (no step) |")
            continue
        lb, gb = rb["steps"][s]["loss"], rb["steps"][s]["grad_norm"]
        name = f"params.bin.step{s}"
        p = relative_l2(params(os.path.join(one, name)), params(os.path.join(many, name)))
        print(f"{s} | {la!r} | {abs(la - lb) / abs(la):.3g} | {ga!r} | {abs(ga - gb) / ga:.3g} | {p:.3g}")
    p = relative_l2(params(os.path.join(one, "params.bin")), params(os.path.join(many, "params.bin")))
    print(f"final parameters: relative L2 {p:.3g}; B's status: {rb['status'] if rb else 'no record'}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
