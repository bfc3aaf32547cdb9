"""The shipped models' 80% intervals on the independent test sets: coverage, width and interval score per op and
backend — coverage alone rewards a wide interval, width alone a narrow one; the interval score charges both.

Per (op, backend), on the dataset card's ``test`` rows (what ``benchmarks/eval_independent.py`` scores):
coverage (share of measured latencies inside [low, high]); width (median and p90 of high / low); the mean interval
score of the log interval at α = 0.2 (Gneiting & Raftery 2007: width + 2/α × the distance by which the measurement
falls outside; lower is better); the point's median |log error|, which an honest 80% interval spans about 3.8 times
(a normal error); and ``off_point``: the share of rows whose interval has the point at one of its ends (a quantile
model that does not follow the point).

Usage: python benchmarks/eval_intervals.py [--ops gemm,attention] [--json-out PATH]
Prints a table; writes JSON (default benchmarks/results/eval_intervals.json).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from eval_independent import arguments  # noqa: E402

from kernelcast import predict_many  # noqa: E402
from kernelcast.features.desc import op_fields  # noqa: E402
from kernelcast.training.data import load_rows  # noqa: E402

ALPHA = 0.2


def interval_stats(measured, point, low, high) -> dict[str, float]:
    y, p, lo, hi = (np.log(np.asarray(a, dtype=np.float64)) for a in (measured, point, low, high))
    score = (hi - lo) + 2 / ALPHA * (np.maximum(lo - y, 0) + np.maximum(y - hi, 0))
    return {
        "rows": int(len(y)),
        "coverage": float(np.mean((y >= lo) & (y <= hi))),
        "width_median": float(np.exp(np.median(hi - lo))),
        "width_p90": float(np.exp(np.quantile(hi - lo, 0.9))),
        "interval_score": float(score.mean()),
        "point_log_error_median": float(np.median(np.abs(p - y))),
        "off_point": float(np.mean((lo >= p) | (hi <= p))),
    }


def evaluate(op: str) -> list[dict]:
    try:
        rows = load_rows(op, sources=("kernelcast",), roles=("test",))
    except ValueError:  # no test files for this op
        return []
    got = predict_many(rows[[c for c in op_fields(op) if c in rows]])
    out = []
    for backend in sorted(rows["backend"].unique()):
        mine = (rows["backend"] == backend).to_numpy()
        stats = interval_stats(
            rows["latency_us"][mine], got["latency_us"][mine], got["low_us"][mine], got["high_us"][mine]
        )
        out.append({"op": op, "backend": backend, "model": str(got["model"][mine].mode()[0]), **stats})
    return out


def main() -> None:
    ops, json_out = arguments(__doc__, "eval_intervals.json")
    table = [r for op in ops for r in evaluate(op)]
    head = f"{'op':<12}{'backend':<10}{'rows':>7}  {'cov80':>6}  {'width med/p90':>14}  {'score':>6}  {'|err|':>6}"
    print(head + "  off-pt")
    for r in table:
        print(
            f"{r['op']:<12}{r['backend']:<10}{r['rows']:>7}  {r['coverage'] * 100:5.1f}%  "
            f"{r['width_median']:6.2f}x/{r['width_p90']:5.2f}x  {r['interval_score']:6.3f}  "
            f"{r['point_log_error_median']:6.3f}  {r['off_point'] * 100:5.1f}%"
        )
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
