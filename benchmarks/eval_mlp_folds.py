"""A backend's own trees, a network on the same rows, and their blends, on held-out folds of its training rows
(choices made here, before any test set is read): median / p90 APE per number of member networks averaged and per
network weight (0: the trees alone, 1: the network alone), each fold fitted on the other folds' rows.

``--split config`` (default) holds configs out (a hash of the config's text); ``--split descs`` holds out
descriptions (a hash of every description field but the config: for a library backend, its shapes). ``--split
shapes`` holds out the shapes measured at 10 configs or more (``eval_regret_folds.shape_folds``: five folds by a hash
of the shape) and also scores config search on them: the regret of the config each blend ranks first among a held-out
shape's measured configs, the share within 5% of the best, and the share with the best in the top 5 (issue 16).

The trees are the op's own-tree parameters for the backend (its ``OpSpec.train_params``), fitted with XGBoost as
``training.xgb`` fits them; the network is ``training.mlp.fit_mlp`` with its defaults and ``--members`` members (seeds
0, 1, ...; the table reads the mean of the first 1, 2, ... of them). Kernelcast rows only, every GPU.

Usage: python benchmarks/eval_mlp_folds.py --op gemm [--backend triton] [--split config|descs|shapes] [--folds 0,1,2]
       [--members 4] [--score-where "batch > 1"] [--json-out PATH]
``--score-where``: score only the held-out rows this pandas query keeps (every row still trains).
Prints a table; writes JSON (default benchmarks/results/eval_mlp_folds_<op>.json, or eval_mlp_folds_<op>_shapes.json
with --split shapes, eval_mlp_folds_<op>_<backend>_descs.json with --split descs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.features.ops import get_op, op_names
from kernelcast.features.vector import build_features
from kernelcast.predictors.learned import feature_matrix
from kernelcast.predictors.mlp import Mlp, blend
from kernelcast.training import regret
from kernelcast.training.data import load_rows
from kernelcast.training.mlp import fit_mlp
from kernelcast.training.xgb import LatencyRegressor

sys.path.insert(0, str(Path(__file__).parent))
from eval_regret_folds import MIN_CONFIGS, picks, shape_folds, shape_keys  # noqa: E402

WEIGHTS = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 1.0)
FOLDS = 5


def text_folds(keys: np.ndarray) -> np.ndarray:
    """Each row's fold: a hash of its key's text (a config, a description), so rows of one key share a fold."""
    return np.asarray([zlib.crc32(str(c).encode()) % FOLDS for c in keys])


def pick_figures(rows: pd.DataFrame, keys: pd.Series, test: np.ndarray, log_answer: np.ndarray) -> dict:
    """Config search on the held-out shapes (rows ``test``), every GPU's together: mean regret of the top-1 pick,
    share within 5% of the best, share with the best in the top 5 (``eval_regret_folds.picks`` per shape)."""
    shapes = picks(rows, keys, np.flatnonzero(test), log_answer)
    top1 = shapes["kernelcast_top1_regret"]
    return {
        "shapes": len(shapes),
        "regret": float(top1.mean()),
        "within_5pct": float((top1 <= regret.NEAR).mean()),
        "top5": float((shapes["best_rank"] <= regret.TOP_K).mean()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--op", required=True, choices=op_names())
    ap.add_argument("--backend", default="triton")
    ap.add_argument("--split", default="config", choices=("config", "descs", "shapes"), help="what a fold holds out")
    ap.add_argument("--score-where", default="", help="a pandas query: score only the held-out rows it keeps")
    ap.add_argument("--folds", default="0,1,2", help=f"comma-separated folds of {FOLDS}")
    ap.add_argument("--members", type=int, default=1, help="networks fitted per fold (seeds 0, 1, ...)")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    if args.members < 1:
        ap.error(f"--members: must be >= 1; got {args.members}")
    folds = [int(f) for f in args.folds.split(",")]
    if any(not 0 <= f < FOLDS for f in folds):
        ap.error(f"--folds: each must be in 0..{FOLDS - 1}; got {args.folds!r}")
    own = get_op(args.op).train_params.get("own_trees", {}).get(args.backend)
    if own is None:
        ap.error(f"--backend: {args.op} has no own trees for {args.backend!r}")
    rows = load_rows(args.op, sources=("kernelcast",), roles=("train",))
    rows = rows[rows["backend"] == args.backend].reset_index(drop=True)
    feats = build_features(rows, args.op)
    x = feature_matrix(feats, args.op)
    y = np.log(rows["latency_us"].to_numpy(dtype=np.float64) / feats["scale_us"].to_numpy(dtype=np.float64))
    keys = None  # --split shapes: each row's shape
    if args.split == "config":
        fold_of = text_folds(rows["config"].to_numpy(dtype=object))
    elif args.split == "descs":
        fold_of = text_folds(shape_keys(rows, args.op).to_numpy(dtype=object))
    else:
        keys = shape_keys(rows, args.op)
        fold_of = shape_folds(keys, MIN_CONFIGS)
    trees = LatencyRegressor(args.op, max_depth=own["max_depth"], learning_rate=own["learning_rate"])
    params = trees._params(objective="reg:squarederror", **{k: own[k] for k in ("colsample_bytree",) if k in own})
    import xgboost as xgb

    scored = rows.eval(args.score_where).to_numpy(dtype=bool) if args.score_where else np.ones(len(rows), dtype=bool)
    table = []
    for f in folds:
        t0 = time.perf_counter()
        train, test = fold_of != f, (fold_of == f) & scored
        booster = xgb.train(params, xgb.DMatrix(x[train], label=y[train], nthread=2), own["n_estimators"])
        by_trees = np.asarray(booster.inplace_predict(x[test]), dtype=np.float64)
        net = fit_mlp(x[train], y[train], params={"members": args.members})
        for k in range(1, args.members + 1):
            by_net = Mlp(net.inputs, net.members[:k]).predict(x[test])
            for w in WEIGHTS:
                answer = blend(by_trees, by_net, w)
                ape = np.abs(np.exp(answer - y[test]) - 1)
                row = {
                    "fold": f,
                    "members": k,
                    "weight": w,
                    "rows": int(test.sum()),
                    "configs": int(len(set(rows["config"][test]))),
                    "median_ape": float(np.median(ape)),
                    "p90_ape": float(np.quantile(ape, 0.9)),
                }
                if keys is not None:
                    log_us = answer + np.log(feats["scale_us"].to_numpy()[test])
                    row.update(pick_figures(rows, keys, test, log_us))
                table.append(row)
        took = time.perf_counter() - t0
        print(f"fold {f}: {int(train.sum()):,} training rows, {int(test.sum()):,} held out, {took:.0f} s")
    print(
        f"{args.op} {args.backend}, {args.split}-held-out folds {args.folds}: median / p90 APE by members averaged and "
        "the network's weight (weight 0: the trees alone)"
        + ("; config search on the held-out shapes: mean regret, within 5%, best in top 5" if keys is not None else "")
    )
    search = f"  {'regret':>7} {'5%':>6} {'top5':>6}" if keys is not None else ""
    head = "  ".join(f"{'fold ' + str(f):>13}" for f in folds)
    print(f"{'members':>7} {'weight':>7}  {head}  {'mean':>13}{search}")
    for k in range(1, args.members + 1):
        for w in WEIGHTS if k == 1 else WEIGHTS[1:]:
            mine = [r for r in table if r["weight"] == w and r["members"] == k]
            cells = [f"{100 * r['median_ape']:5.2f} / {100 * r['p90_ape']:5.1f}" for r in mine]
            med, p90 = (100 * np.mean([r[c] for r in mine]) for c in ("median_ape", "p90_ape"))
            mean = f"{med:5.2f} / {p90:5.1f}"
            if keys is not None:  # over every held-out shape, each fold weighted by its shapes
                n = np.asarray([r["shapes"] for r in mine], dtype=np.float64)
                agg = {c: float(np.dot(n, [r[c] for r in mine]) / n.sum()) for c in ("regret", "within_5pct", "top5")}
                mean += f"  {agg['regret']:7.4f} {100 * agg['within_5pct']:5.1f}% {100 * agg['top5']:5.1f}%"
            print(f"{k:>7} {w:>7}  " + "  ".join(f"{c:>13}" for c in cells) + f"  {mean:>13}")
    suffix = {"config": "", "shapes": "_shapes", "descs": f"_{args.backend}_descs"}[args.split]
    name = f"eval_mlp_folds_{args.op}{suffix}"
    out = args.json_out or Path(__file__).parent / "results" / f"{name}.json"
    payload = {
        "op": args.op,
        "backend": args.backend,
        "split": args.split,
        "score_where": args.score_where,
        "rows": len(rows),
        "members": args.members,
        "table": table,
    }
    out.write_text(json.dumps(payload, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
