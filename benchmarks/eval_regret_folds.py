"""Config search's regret on the training rows' own many-config shapes (issue 16), for choices made before a sealed
tune set is read: the training rows of one Triton op whose shape (every description field but ``config``, per GPU)
was measured at ``--min-configs`` configs or more are split into five folds by shape; each fold's model is the shipped
recipe (``training.run.fit_fold``) trained on every other row of the op — its held-out shapes' rows at no config — and
its pick on a held-out shape is the measured config it predicts fastest. ``--seeds 0,1,2`` averages the log answers of
one model per XGBoost seed. Figures per GPU, as ``training.regret.summary`` gives them for the tune sets.

Usage: python benchmarks/eval_regret_folds.py [--op gemm|attention|moe] [--min-configs 10] [--folds 0,1,2,3,4]
       [--seeds 0] [--json-out PATH]
Prints a table; writes JSON (default benchmarks/results/eval_regret_folds_<op>.json).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.collect.dataset import atomic_path
from kernelcast.features.desc import op_fields
from kernelcast.training import regret
from kernelcast.training.run import RunConfig, fit_fold, load
from kernelcast.training.splits import Split

FOLDS = 5
#: the configs a shape needs to be held out and judged (the --min-configs default)
MIN_CONFIGS = 10


def shape_keys(frame: pd.DataFrame, op: str) -> pd.Series:
    """Each row's shape: GPU and every description field but ``config``."""
    fields = [c for c in op_fields(op) if c in frame and c not in ("config", "op", "backend")]
    return frame[fields].astype(str).agg("|".join, axis=1)


def shape_folds(keys: pd.Series, min_configs: int) -> np.ndarray:
    """Fold (0..FOLDS-1, by a hash of the shape) of each row whose shape has ``min_configs`` rows or more; -1 else."""
    counts = keys.map(keys.value_counts())
    fold = keys.map(lambda k: int(hashlib.md5(k.encode()).hexdigest(), 16) % FOLDS).to_numpy()
    return np.where(counts.to_numpy() >= min_configs, fold, -1)


def picks(frame: pd.DataFrame, keys: pd.Series, test: np.ndarray, log_answer: np.ndarray) -> pd.DataFrame:
    """One row per held-out shape: its measured best and the regret of the top-1 pick and of the best of the top 5."""
    rows = pd.DataFrame(
        {
            "gpu": frame["gpu"].to_numpy()[test],
            "shape": keys.to_numpy()[test],
            "measured": frame["latency_us"].to_numpy(dtype=np.float64)[test],
            "answer": log_answer,
        }
    )
    out = []
    for (gpu, shape), mine in rows.groupby(["gpu", "shape"], sort=False):
        ranked = mine.sort_values("answer", kind="stable")["measured"].to_numpy()
        best = ranked.min()
        out.append(
            {
                "gpu": gpu,
                "shape": shape,
                "configs": len(ranked),
                "best_us": best,
                "best_rank": int(np.argmax(ranked == best)) + 1,
                "kernelcast_top1_regret": ranked[0] / best,
                f"kernelcast_top{regret.TOP_K}_autotune_regret": ranked[: regret.TOP_K].min() / best,
            }
        )
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--op", default="gemm", choices=sorted(regret.TUNE_SWEEPS))
    ap.add_argument(
        "--min-configs",
        type=int,
        default=MIN_CONFIGS,
        help=f"configs a shape needs to be judged (default {MIN_CONFIGS})",
    )
    ap.add_argument("--folds", default=",".join(str(f) for f in range(FOLDS)))
    ap.add_argument("--seeds", default="0", help="XGBoost seeds whose models' log answers are averaged")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    folds = [int(f) for f in args.folds.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    if any(not 0 <= f < FOLDS for f in folds):
        ap.error(f"--folds: indices 0..{FOLDS - 1}; got {args.folds!r}")
    base = RunConfig(op=args.op, sources=("kernelcast",), backend="triton", log_mlflow=False)
    frame = load(base)
    keys = shape_keys(frame, args.op)
    fold = shape_folds(keys, args.min_configs)
    print(
        f"{args.op}: {len(frame):,} Triton training rows; {int((fold >= 0).sum()):,} rows of "
        f"{keys[fold >= 0].nunique()} shapes with >= {args.min_configs} configs, in {FOLDS} folds"
    )
    if not (fold >= 0).any():
        raise SystemExit(
            f"{args.op}: no Triton training shape has >= {args.min_configs} measured configs (--min-configs); "
            "nothing to judge a pick on"
        )
    judged = []
    for f in folds:
        start = time.time()
        test = fold == f
        answers = []
        for seed in seeds:
            cfg = dataclasses.replace(base, params={"random_state": seed})
            _, rows, _, _ = fit_fold(cfg, frame, Split("shapes", str(f), ~test, test))
            answers.append(np.log(rows["learned"].to_numpy(dtype=np.float64)))
        judged.append(picks(frame, keys, np.flatnonzero(test), np.mean(answers, axis=0)).assign(fold=f))
        print(f"  fold {f}: {len(judged[-1])} shapes, {time.time() - start:.0f} s", flush=True)
    summary = regret.summary(pd.concat(judged, ignore_index=True))
    print(
        f"{'gpu':<12}{'method':<28}{'shapes':>7}{'mean':>8}{'median':>8}{'worst':>8}{'within 5%':>11}"
        f"{'best in top 5':>15}"
    )
    for r in summary:
        top = r.get(f"best_in_top{regret.TOP_K}")
        print(
            f"{r['gpu']:<12}{r['method']:<28}{r['shapes']:>7}{r['mean_regret']:>8.4f}{r['median_regret']:>8.4f}"
            f"{r['worst_regret']:>8.3f}{r['within_5pct']:>11.1%}{'' if top is None else f'{top:>15.1%}'}"
        )
    out = args.json_out or Path(__file__).parent / "results" / f"eval_regret_folds_{args.op}.json"
    record = {"op": args.op, "min_configs": args.min_configs, "folds": folds, "seeds": seeds, "summary": summary}
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps(record, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
