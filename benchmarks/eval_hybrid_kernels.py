"""The hybrid layers' triangular solves and depthwise convolutions: the ``trsm`` and ``conv`` families' analytical
answers against every such kernel measured inside the eager hybrid layers on the H200 (Qwen3.5-27B/35B-A3B's gated
delta rule and Nemotron-3-Nano's Mamba on torch's reference paths; ``datasets/layers/*_arch*_layers.jsonl``).

Each layer is rebuilt on meta tensors as the collector built it (``features/layers.py``), its ``convolution`` and
``linalg_solve_triangular`` ops lowered as ``predict_module`` lowers them (``graphs/lower.py``), predicted, and
paired in launch order with the kernels the layer's profile names (``conv_depthwise2d_forward_kernel_generic``,
``batch_trsm_left_kernel``). The first two layer sets fit each family's one constant (``--fit`` prints it: the median
over their kernels of what the measured time says, the fixed per-kernel time taken off); the third and fourth are the
check. Beside the analytical answer (the kernel alone), the served one (the learned model where it covers the
description, trained on standalone rows since the nineteenth session) against the op's kernels as those rows label it:
a solve is torch's column-major copy of B, two index kernels and the solve. Prints a table and writes
benchmarks/results/eval_hybrid_kernels.json.

    python benchmarks/eval_hybrid_kernels.py [--fit]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.features.common import kernel_floor_us
from kernelcast.features.gpu import get_gpu
from kernelcast.features.ops import conv, trsm
from kernelcast.graphs.capture import capture
from kernelcast.graphs.lower import lower
from kernelcast.predictors.dispatch import predict_many

ROOT = Path(__file__).resolve().parent.parent
SETS = {"arch": "fit", "arch2": "fit", "arch3": "check", "arch4": "check"}
FILE = "datasets/layers/kernelcast_h200_sxm_20261204_{}_layers.jsonl"
OUT = ROOT / "benchmarks/results/eval_hybrid_kernels.json"
#: aten op -> (family, the profiled kernel's name holds this, how many kernels the op launches before it)
KERNELS = {
    "convolution": ("conv", "conv_depthwise", 0),
    "linalg_solve_triangular": ("trsm", "batch_trsm_left_kernel", 3),
}


def measured_kernels() -> pd.DataFrame:
    """One row per measured kernel of the two families: its layer, set, role, description and time."""
    from kernelcast.features import layers

    rows, models = [], {}
    for name, role in SETS.items():
        for line in (ROOT / FILE.format(name)).read_text().splitlines():
            r = json.loads(line)
            listed = (r.get("eager") or {}).get("kernel_list") or []
            if not any(mark in k for k, _ in listed for _, mark, _ in KERNELS.values()):
                continue
            key = (r["model"], r["tp"])
            if key not in models:
                models[key] = layers.build_model(layers.shard(layers.load_config(r["model"]), r["tp"]))
            how = layers.replay_inputs(r.get("layer_inputs"))
            call = layers.layer_call(models[key], r["phase"], r["batch"], r["seq"], r["context"], how)
            ops = [op for op in capture(call.fn, call.args, call.kwargs).ops if op.name.split(".")[1] in KERNELS]
            for family, mark, before in KERNELS.values():
                at = [i for i, (k, _) in enumerate(listed) if mark in k]
                times = [listed[i][1] for i in at]
                op_times = [sum(us for _, us in listed[i - before : i + 1]) for i in at]
                descs = [d for op in ops for d in lower(op, "H200").descs if d["op"] == family]
                if len(times) != len(descs):
                    raise RuntimeError(f"{name} {r['model']} {r['phase']}: {len(times)} {family} kernels measured, "
                                       f"{len(descs)} lowered")  # fmt: skip
                for desc, us, op_us in zip(descs, times, op_times):
                    rows.append({"set": name, "role": role, "model": r["model"], "phase": r["phase"],
                                 "batch": r["batch"], "seq": r["seq"], "family": family, "desc": desc,
                                 "measured_us": us, "measured_op_us": op_us})  # fmt: skip
    return pd.DataFrame(rows)


def predict(frame: pd.DataFrame, predictor: str) -> np.ndarray:
    return predict_many([{**d, "gpu": "H200"} for d in frame["desc"]], predictor=predictor)["latency_us"].to_numpy()


def fitted_constants(frame: pd.DataFrame) -> dict[str, float]:
    """Each family's constant from the fit sets: the shipped one scaled by the median of measured over predicted
    time, the fixed per-kernel time taken off both (the constant scales only the rest)."""
    fixed = float(kernel_floor_us(get_gpu("H200").boost_clock_hz))
    fit = frame[frame["role"] == "fit"]
    out = {}
    for family, name, now in (("trsm", "STEP_CYCLES", trsm.STEP_CYCLES), ("conv", "TAP_CYCLES", conv.TAP_CYCLES)):
        part = fit[fit["family"] == family]
        ratio = (part["measured_us"] - fixed) / (part["predicted_us"] - fixed)
        out[f"{family}.{name}"] = float(now * np.median(ratio))
    return out


def summary(frame: pd.DataFrame) -> list[dict]:
    """Per family and role: the analytical answer against the kernel, the served one against the op's kernels."""
    out = []
    for (family, role), part in frame.groupby(["family", "role"], sort=False):
        for answer, predicted, measured in (("analytical", "predicted_us", "measured_us"),
                                            ("served", "served_us", "measured_op_us")):  # fmt: skip
            ratio = part[predicted] / part[measured]
            ape = np.abs(ratio - 1)
            out.append({"family": family, "role": role, "answer": answer, "kernels": len(part),
                        "median_ape": float(np.median(ape)), "p90_ape": float(np.quantile(ape, 0.9)),
                        "median_ratio": float(np.median(ratio)),
                        "measured_us": f"{part[measured].min():.1f}-{part[measured].max():.1f}"})  # fmt: skip
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="print the constants the fit sets give")
    args = ap.parse_args(argv)
    frame = measured_kernels()
    frame["predicted_us"] = predict(frame, "analytical")
    frame["served_us"] = predict(frame, "auto")
    table = summary(frame)
    shown = pd.DataFrame(table)
    for c in ("median_ape", "p90_ape"):
        shown[c] = (100 * shown[c]).map("{:.1f}%".format)
    print(shown.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    result = {"constants": {"trsm.STEP_CYCLES": trsm.STEP_CYCLES, "conv.TAP_CYCLES": conv.TAP_CYCLES},
              "table": table, "sets": SETS}  # fmt: skip
    if args.fit:
        result["fitted"] = fitted_constants(frame)
        print("fitted on", ", ".join(s for s, r in SETS.items() if r == "fit"), result["fitted"])
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
