"""Folds of the training rows, for choices made before any test set is read: one op's model trained on a fold's
train side (``training.run.fit_fold``, the shipped recipe) and scored on its held-out side, kernelcast rows only,
per backend. ``random`` holds out shapes (the frozen split), ``config`` Triton configs (five fixed folds).

Usage: python benchmarks/eval_folds.py --op attention [--backend triton] [--source kernelcast] [--split config]
       [--folds 0,1]
       [--params '{"n_estimators": 600}'] [--seeds 0,1,2] [--json-out PATH]
Prints a table; writes JSON (default benchmarks/results/eval_folds_<op>.json). With ``--seeds`` each fold is fitted
once per XGBoost seed and also scored as the geometric mean of those seeds' answers (``seed`` "bag" in the JSON).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
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
    ap.add_argument("--seeds", help="comma-separated XGBoost seeds (random_state): each scored, and their mean")
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
    seeds = [None] if args.seeds is None else [int(s) for s in args.seeds.split(",")]
    results = []

    def report(rows: pd.DataFrame, fold: str, seed, seconds: int) -> None:
        for r in score(rows):
            results.append({"split": args.split, "fold": fold, "seed": seed, **r, "seconds": seconds})
            print(
                f"{args.op} {args.split} {fold:8s} seed {str(seed):4s} {r['backend']:10s} n={r['rows']:6d}  "
                f"median {r['median_ape']:.2%}  p90 {r['p90_ape']:.1%}  coverage {r['coverage']:.0%}",
                flush=True,
            )

    for k in wanted:
        answers = []
        for seed in seeds:
            start = time.time()
            params = {**cfg.params, **({} if seed is None else {"random_state": seed})}
            _, rows, _, _ = fit_fold(replace(cfg, params=params), frame, splits[k])
            answers.append(rows)
            report(rows, splits[k].fold, seed, round(time.time() - start))
        if len(answers) > 1:  # the same held-out rows in the same order for every seed (fit_fold samples them seeded)
            if any(not a["measured"].equals(answers[0]["measured"]) for a in answers[1:]):
                raise SystemExit(f"fold {splits[k].fold}: the seeds' held-out rows differ; no mean of their answers")
            bag = answers[0].copy()
            for col in ("learned", "low", "high"):
                bag[col] = np.exp(np.mean([np.log(a[col].to_numpy()) for a in answers], axis=0))
            report(bag, splits[k].fold, "bag", 0)
    for seed in dict.fromkeys(r["seed"] for r in results):
        for backend in sorted({r["backend"] for r in results}):
            mine = [r for r in results if r["backend"] == backend and r["seed"] == seed]
            print(
                f"{args.op} {args.split} seed {seed} mean over {len(mine)} folds, {backend}: median "
                f"{np.mean([r['median_ape'] for r in mine]):.2%}, p90 {np.mean([r['p90_ape'] for r in mine]):.1%}"
            )
    out = args.json_out or Path(__file__).parent / "results" / f"eval_folds_{args.op}.json"
    record = {
        "op": args.op,
        "backend": args.backend,
        "feature_version": feature_version(args.op),
        "params": json.loads(args.params),
        "seeds": seeds,
        "folds": results,
    }
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
