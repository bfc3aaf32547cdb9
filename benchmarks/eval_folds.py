"""Folds of the training rows, for choices made before any test set is read: one op's model trained on a fold's
train side (``training.run.fit_fold``, the shipped recipe) and scored on its held-out side, kernelcast rows only,
per backend. ``random`` holds out shapes (the frozen split), ``config`` Triton configs (five fixed folds).

Usage: python benchmarks/eval_folds.py --op attention [--backend triton] [--source kernelcast] [--split config]
       [--folds 0,1]
       [--params '{"n_estimators": 600}'] [--json-out PATH]
Prints a table; writes JSON (default benchmarks/results/eval_folds_<op>.json).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.features.vector import feature_version
from kernelcast.training import data
from kernelcast.training.run import RunConfig, fit_fold, load
from kernelcast.training.splits import make_splits


def score(rows: pd.DataFrame) -> list[dict]:
    """Median / p90 APE and 80% interval coverage per backend of a fold's scored kernelcast rows."""
    rows = rows[rows["source"] == "kernelcast"]
    ape = (rows["learned"] / rows["measured"] - 1).abs()
    inside = (rows["measured"] >= rows["low"]) & (rows["measured"] <= rows["high"])
    out = []
    for backend, mine in rows.groupby("backend").groups.items():
        out.append(
            {
                "backend": backend,
                "rows": len(mine),
                "median_ape": float(ape[mine].median()),
                "p90_ape": float(ape[mine].quantile(0.9)),
                "coverage": float(inside[mine].mean()),
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--op", required=True)
    ap.add_argument("--backend", help="train and score only this backend's rows (own-tree backends: the same trees)")
    ap.add_argument("--source", choices=data.SOURCES, help="train on this source's rows only (default: all)")
    ap.add_argument("--split", default="random", choices=("random", "config"))
    ap.add_argument("--folds", default="0", help="comma-separated fold indices of the split (random has one: 0)")
    ap.add_argument("--params", default="{}", help="LatencyRegressor overrides as JSON")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    sources = (args.source,) if args.source else data.SOURCES
    cfg = RunConfig(op=args.op, sources=sources, backend=args.backend, params=json.loads(args.params), log_mlflow=False)
    frame = load(cfg)
    hashes = data.shape_hash(frame, cfg.op)
    splits = make_splits(args.split, frame, hashes, None)
    wanted = [int(f) for f in args.folds.split(",")]
    bad = [f for f in wanted if not 0 <= f < len(splits)]
    if bad:
        raise SystemExit(f"--folds: {args.split} has folds 0..{len(splits) - 1}; got {bad}")
    results = []
    for k in wanted:
        start = time.time()
        _, rows, _, _ = fit_fold(cfg, frame, splits[k])
        for r in score(rows):
            results.append({"split": args.split, "fold": splits[k].fold, **r, "seconds": round(time.time() - start)})
            print(
                f"{args.op} {args.split} {splits[k].fold:8s} {r['backend']:10s} n={r['rows']:6d}  "
                f"median {r['median_ape']:.2%}  p90 {r['p90_ape']:.1%}  coverage {r['coverage']:.0%}",
                flush=True,
            )
    for backend in sorted({r["backend"] for r in results}):
        mine = [r for r in results if r["backend"] == backend]
        print(
            f"{args.op} {args.split} mean over {len(mine)} folds, {backend}: median "
            f"{np.mean([r['median_ape'] for r in mine]):.2%}, p90 {np.mean([r['p90_ape'] for r in mine]):.1%}"
        )
    out = args.json_out or Path(__file__).parent / "results" / f"eval_folds_{args.op}.json"
    record = {
        "op": args.op,
        "backend": args.backend,
        "feature_version": feature_version(args.op),
        "params": json.loads(args.params),
        "folds": results,
    }
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
