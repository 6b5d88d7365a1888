#!/usr/bin/env python3
"""Runs an ONNX export of a yari network in ONNX Runtime on input planes written by the test
(crates/model/tests/onnx.rs) and compares its logits with the ones yari's own CPU forward pass
computed. Exits 0 when every policy and WDL logit agrees within TOLERANCE.

usage: onnx-check.py MODEL.onnx DIR N   (DIR holds planes.f32, policy.f32, wdl.f32: little-endian
float32 arrays of N positions; needs `pip install onnxruntime numpy`)"""
import sys

import numpy as np
import onnxruntime as ort

# Largest |difference| of any logit allowed: both sides compute in float32 and differ only in
# the order of their sums (measured: see the test's output and docs/network.md).
TOLERANCE = 1e-3


def main(model, folder, n):
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    if [i.name for i in inputs] != ["planes"]:
        sys.exit(f"inputs {[i.name for i in inputs]}, expected ['planes']")
    outputs = [o.name for o in session.get_outputs()]
    if outputs != ["policy_logits", "wdl_logits"]:
        sys.exit(f"outputs {outputs}, expected ['policy_logits', 'wdl_logits']")
    planes_per_position = inputs[0].shape[1]
    planes = np.fromfile(f"{folder}/planes.f32", dtype="<f4").reshape(n, planes_per_position, 9, 7)
    want_policy = np.fromfile(f"{folder}/policy.f32", dtype="<f4").reshape(n, -1)
    want_wdl = np.fromfile(f"{folder}/wdl.f32", dtype="<f4").reshape(n, 3)
    policy, wdl = session.run(None, {"planes": planes})
    if policy.shape != want_policy.shape or wdl.shape != want_wdl.shape:
        sys.exit(f"shapes {policy.shape} {wdl.shape}, expected {want_policy.shape} {want_wdl.shape}")
    dp = float(np.max(np.abs(policy - want_policy)))
    dv = float(np.max(np.abs(wdl - want_wdl)))
    line = (f"{n} positions: max |delta policy logit| {dp:.2e}, max |delta wdl logit| {dv:.2e} "
            f"(tolerance {TOLERANCE:g}; onnxruntime {ort.__version__})")
    if dp > TOLERANCE or dv > TOLERANCE:
        sys.exit("DISAGREE: " + line)
    print("agree: " + line)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
