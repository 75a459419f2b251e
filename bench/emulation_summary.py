#!/usr/bin/env python3
"""Summarises the emulated ranks of bench/h200-emulate.sh (docs/emulation.md).

Usage: emulation_summary.py OUT_DIR [--table]

Reads every run record under OUT_DIR/<name>/ and prints, per run, JSON (default) or a table (--table): the rank it
stood for, its place, the layers it ran, the window's mean step (s), the peak memory against the memory plan of its
pipeline rank (GB, measured / planned), and, for a --profile run, the seconds per microbatch of each phase and model
component (the window's mean step's, divided by the step's microbatches), and each group's bytes per step.
"""
import json
import pathlib
import sys

PHASES = ["forward_seconds", "backward_seconds", "optimizer_seconds", "gdn_seconds", "attention_seconds",
          "moe_seconds", "lm_head_loss_seconds"]


def summarise(name, record):
    e = record.get("emulation") or {}
    w = record["settings"]["window"]
    steps = [s for s in record["steps"] if w[0] <= s["step"] <= w[1]]
    out = {
        "name": name,
        "status": record["status"],
        "recipe": record["recipe"]["path"],
        "device": record["environment"].get("device", {}).get("name"),
        "rank": e.get("rank"), "world": e.get("world"), "stage_kind": e.get("stage_kind"),
        "coordinates": e.get("coordinates"), "layers_run": e.get("layers_run"), "stage_layers": e.get("stage_layers"),
        "microbatches": e.get("microbatches"),
        "mean_step_seconds": e.get("window", {}).get("mean_step_seconds"),
        "stand_in_seconds_per_step": e.get("window", {}).get("stand_in_seconds"),
        "peak_memory_gb": (e.get("peak_memory_bytes") or 0) / 1e9,
        "planned_peak_gb": (e.get("planned_peak_bytes") or 0) / 1e9,
        "peak_over_plan": e.get("peak_over_plan"),
        "profile": record["settings"].get("profile", False),
        "traffic_bytes_per_step": {"+".join(g["kinds"]): sum(o["bytes_per_step"] for o in g["ops"].values())
                                   for g in e.get("traffic_per_step", [])},
    }
    if out["profile"] and steps:
        mb = max(1, steps[0].get("microbatches") or 1)
        out["per_microbatch_seconds"] = {
            k: sum(s["phases"][k] for s in steps) / len(steps) / mb for k in PHASES}
    if record["status"] == "failed":
        out["error"] = (record.get("error") or {}).get("message")
    return out


def main():
    root = pathlib.Path(sys.argv[1])
    rows = []
    for rec in sorted(root.glob("*/*.json")):
        try:
            rows.append(summarise(rec.parent.name, json.loads(rec.read_text())))
        except (KeyError, ValueError) as err:
            rows.append({"name": rec.parent.name, "error": f"unreadable record: {err}"})
    if "--table" not in sys.argv:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'run':44} {'rank':>9} {'stage':13} {'layers':>7} {'step s':>8} {'stand-in':>8} {'peak GB':>8} "
          f"{'plan GB':>8} {'/plan':>6}")
    for r in rows:
        if "error" in r and r.get("status") != "emulated":
            print(f"{r['name']:44} {r.get('error')}")
            continue
        print(f"{r['name']:44} {r['rank']:>4}/{r['world']:<4} {r['stage_kind']:13} "
              f"{r['layers_run']:>3}/{r['stage_layers']:<3} {r['mean_step_seconds'] or 0:8.3f} "
              f"{r['stand_in_seconds_per_step'] or 0:8.3f} "
              f"{r['peak_memory_gb']:8.2f} {r['planned_peak_gb']:8.2f} {r['peak_over_plan'] or 0:6.2f}")
        if "per_microbatch_seconds" in r:
            p = r["per_microbatch_seconds"]
            print("    per microbatch (s): " + ", ".join(f"{k.replace('_seconds', '')} {v:.4f}" for k, v in p.items()))


if __name__ == "__main__":
    main()
