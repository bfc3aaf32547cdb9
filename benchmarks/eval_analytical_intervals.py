"""The analytical answer's 80% interval on the independent test sets: the measured band per (op, backend)
(``python -m kernelcast.training.bands``, from the training rows) beside the ×/÷2 it replaced, in one run.

The analytical model is what every GPU without a learned model gets (AMD parts) and what answers outside a learned
model's range; its interval should say how far off it is. Per (op, backend), on the dataset card's ``test`` rows:
coverage, median width and interval score (``eval_intervals.interval_stats``) of both intervals around the same point.

Usage: python benchmarks/eval_analytical_intervals.py [--ops gemm,attention] [--json-out PATH]
Prints a table; writes JSON (default benchmarks/results/eval_analytical_intervals.json).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from eval_independent import arguments  # noqa: E402
from eval_intervals import interval_stats  # noqa: E402

from kernelcast import predict_many  # noqa: E402
from kernelcast.features.desc import op_fields  # noqa: E402
from kernelcast.predictors.analytical import INTERVAL_FACTOR  # noqa: E402
from kernelcast.training.data import load_rows  # noqa: E402


def evaluate(op: str) -> list[dict]:
    try:
        rows = load_rows(op, sources=("kernelcast",), roles=("test",))
    except ValueError:  # no test files for this op
        return []
    got = predict_many(rows[[c for c in op_fields(op) if c in rows]], predictor="analytical")
    point, floor = got["latency_us"].to_numpy(), got["floor_us"].to_numpy()
    flat_low = np.minimum(np.maximum(floor, point / INTERVAL_FACTOR), point)  # the uncalibrated ×/÷2
    out = []
    for backend in sorted(rows["backend"].unique()):
        m = (rows["backend"] == backend).to_numpy()
        y = rows["latency_us"].to_numpy()[m]
        out.append(
            {
                "op": op,
                "backend": backend,
                "flat": interval_stats(y, point[m], flat_low[m], point[m] * INTERVAL_FACTOR),
                "band": interval_stats(y, point[m], got["low_us"].to_numpy()[m], got["high_us"].to_numpy()[m]),
            }
        )
    return out


def main() -> None:
    ops, json_out = arguments(__doc__, "eval_analytical_intervals.json")
    table = [r for op in ops for r in evaluate(op)]
    print(f"{'op':<12}{'backend':<10}{'rows':>7}  {'x/÷2: cov80, width, score':>27}  {'band: cov80, width, score':>27}")
    for r in table:
        f, b = r["flat"], r["band"]
        print(
            f"{r['op']:<12}{r['backend']:<10}{f['rows']:>7}  {f['coverage'] * 100:9.1f}% {f['width_median']:6.2f}x "
            f"{f['interval_score']:7.3f}  {b['coverage'] * 100:9.1f}% {b['width_median']:6.2f}x "
            f"{b['interval_score']:7.3f}"
        )
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
