#!/usr/bin/env python3
"""Reads a run's TensorBoard event files with TensorBoard's own reader and checks them against
the run's metrics.jsonl and summary.json: every training step's scalars and every generation's
counts must be there, equal to float32 precision. Prints one line and exits 0 when they agree.

usage: tensorboard-readback.py RUN_DIR   (needs `pip install tensorboard`; .ci/run installs it
into the project-local .venv)"""
import json
import math
import os
import sys

import numpy
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main(run_dir):
    acc = EventAccumulator(os.path.join(run_dir, "tensorboard"), size_guidance={"scalars": 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])

    def series(tag):
        if tag not in tags:
            sys.exit(f"no scalar {tag!r} in the event files (tags: {sorted(tags)})")
        return {e.step: e.value for e in acc.Scalars(tag)}

    def close(a, b):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)

    # metrics.jsonl: the last record of each step (as yari's own reader keeps).
    metrics = {}
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            line = line.strip()
            if line:
                m = json.loads(line)
                metrics[m["step"]] = m
    if not metrics:
        sys.exit("metrics.jsonl is empty")
    for tag, key in [("train/loss", "loss"), ("train/lr", "lr"), ("train/grad_norm", "grad_norm"),
                     ("train/policy_loss", "policy_loss"), ("train/value_loss", "value_loss")]:
        got = series(tag)
        for step, m in metrics.items():
            if step not in got:
                sys.exit(f"{tag}: step {step} of metrics.jsonl is missing")
            if not close(got[step], float(numpy.float32(m[key]))):
                sys.exit(f"{tag} at step {step}: {got[step]} in TensorBoard, {m[key]} in metrics.jsonl")

    with open(os.path.join(run_dir, "summary.json")) as f:
        summaries = json.load(f)
    games = series("generation/games")
    positions = series("generation/positions")
    for s in summaries:
        g = s["generation"]
        if games.get(g) != s["games"] or positions.get(g) != s["positions"]:
            sys.exit(f"generation {g}: games/positions {games.get(g)}/{positions.get(g)} in "
                     f"TensorBoard, {s['games']}/{s['positions']} in summary.json")
        for r in s.get("ratings", []):
            rung = "".join(c if c.isalnum() or c == ":" else "_" for c in r["opponent"])
            got = series(f"rating/{rung}/score").get(g)
            if got is None or not close(got, float(numpy.float32(r["score"]))):
                sys.exit(f"generation {g}: rating against {r['opponent']}: {got} in TensorBoard, "
                         f"{r['score']} in summary.json")
    print(f"ok: {len(metrics)} training steps and {len(summaries)} generations read back by "
          f"TensorBoard's EventAccumulator ({len(tags)} scalar tags)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
