"""The shipped models on the independent test sets: what `predict_many` answers for rows nothing was trained
or tuned on (the dataset card's ``test`` files: other seeds, other distributions, fresh Triton configs,
measured in their own pass), beside the analytical model, per op and backend.

Usage: python benchmarks/eval_independent.py [--ops gemm,attention] [--json-out PATH]
Prints a table; writes JSON (default benchmarks/results/eval_independent.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast import predict_many
from kernelcast.features.desc import op_fields
from kernelcast.features.ops import op_names
from kernelcast.training.data import load_rows
from kernelcast.training.evaluate import metrics


def evaluate(op: str) -> list[dict]:
    try:
        rows = load_rows(op, sources=("kernelcast",), roles=("test",))
    except ValueError:  # no test files for this op
        return []
    descs = rows[[c for c in op_fields(op) if c in rows]]
    learned = predict_many(descs)
    analytical = predict_many(descs, predictor="analytical")
    measured = rows["latency_us"].to_numpy(dtype=np.float64)
    out = []
    sets = rows["file"].str.extract(r"_([a-z0-9]+)\.parquet$")[0].fillna("test")  # test, test2, tune, ...
    groups = [(b, None, (rows["backend"] == b).to_numpy()) for b in sorted(rows["backend"].unique())]
    for backend, _, mine in list(groups):
        if sets[mine].nunique() > 1:  # a backend with several test sets: each one too
            groups += [(backend, s, mine & (sets == s).to_numpy()) for s in sorted(sets[mine].unique())]
    for backend, test_set, mine in groups:
        got = learned[mine]
        predicted = got["latency_us"].to_numpy(dtype=np.float64)
        stats = metrics(measured[mine], predicted, got["low_us"], got["high_us"])
        low, high = median_interval(np.abs(predicted / measured[mine] - 1.0))
        out.append(
            {
                "op": op,
                "backend": backend,
                "set": test_set or "all",
                "rows": int(mine.sum()),
                "learned": stats,
                "learned_median_ape_90": [low, high],
                "analytical": metrics(measured[mine], analytical["latency_us"].to_numpy(dtype=np.float64)[mine]),
                "interval_coverage": stats["coverage"],
                "learned_share": float(got["model"].str.startswith("learned").mean()),
                "in_distribution_share": float(got["in_distribution"].mean()),
            }
        )
    return out


def median_interval(ape: np.ndarray, resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """The 5th and 95th percentiles of the median APE over bootstrap resamples of a test set's rows: how far the
    set's own size lets its median move (a 79-row set's median is far less certain than a 2,000-row set's). It
    says nothing of a retrain's own variance, which moves every set too."""
    rng = np.random.default_rng(seed)
    medians = np.concatenate(
        [np.median(ape[rng.integers(0, len(ape), (100, len(ape)))], axis=1) for _ in range(resamples // 100)]
    )
    return float(np.quantile(medians, 0.05)), float(np.quantile(medians, 0.95))


def arguments(doc: str, json_name: str) -> tuple[list[str], Path]:
    """The command line of a test-set evaluation: ``--ops`` (checked against the op families) and ``--json-out``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--json-out", type=Path, default=Path(__file__).parent / "results" / json_name)
    ap.add_argument("--ops", default=",".join(op_names()), help="comma-separated op families (default: all)")
    args = ap.parse_args()
    ops = args.ops.split(",")
    unknown = sorted(set(ops) - set(op_names()))
    if unknown:
        ap.error(f"--ops: {unknown[0]!r} is not an op family; allowed: {', '.join(op_names())}")
    return ops, args.json_out


def main() -> None:
    ops, json_out = arguments(__doc__, "eval_independent.json")
    table = [r for op in ops for r in evaluate(op)]
    head = (
        f"{'op':<10}{'backend':<9}{'set':<7}{'rows':>6}  {'learned med/p90':>16}  {'analytical med/p90':>19}  "
        f"{'cov80':>6}  {'width':>6}  {'in-dist':>7}  {'median, 90% bootstrap':>21}"
    )
    print(head)
    for r in table:
        pct = lambda s: f"{s['median_ape'] * 100:5.1f} /{s['p90_ape'] * 100:5.1f}%"
        print(
            f"{r['op']:<10}{r['backend']:<9}{r['set']:<7}{r['rows']:>6}  {pct(r['learned']):>16}  "
            f"{pct(r['analytical']):>19}  "
            f"{r['interval_coverage'] * 100:5.1f}%  {r['learned']['width']:5.2f}x  "
            f"{r['in_distribution_share'] * 100:6.1f}%  "
            f"{r['learned_median_ape_90'][0] * 100:9.1f} –{r['learned_median_ape_90'][1] * 100:5.1f}%"
        )
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(pd.json_normalize(table).to_dict("records"), indent=1))


if __name__ == "__main__":
    main()
