"""Does a Triton model's error on fresh configs depend on how many distinct configs it trained on? Three fits of the
op's own Triton trees (their parameters from the op's spec: GEMM depth 8, 1,200 rounds; attention depth 6, 1,200) on
the H200's Triton training rows, each on the same number of rows (all the rows of a random draw of the smallest count
of configs), from the smallest count, a middle one and all configs; each scored on the H200's independent Triton test
sets (configs no training row has; the tune sets left out).

Usage: python benchmarks/eval_config_diversity.py [--op gemm|attention] [--json-out PATH]
(GEMM: three fits of ~20 s to ~10 min each on 2 cores, with the machine's load). Prints a table; writes JSON (default
benchmarks/results/eval_config_diversity.json for GEMM, eval_config_diversity_<op>.json otherwise).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from kernelcast.features.ops import get_op
from kernelcast.features.vector import build_features
from kernelcast.training.data import load_rows, shape_hash
from kernelcast.training.xgb import LatencyRegressor

RESULTS = Path(__file__).resolve().parent / "results"
#: the configs each fit draws from, per op (the last: all of the H200's)
COUNTS = {"gemm": (300, 700), "attention": (35, 70)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--op", choices=sorted(COUNTS), default="gemm")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    out_path = args.json_out or RESULTS / (
        "eval_config_diversity.json" if args.op == "gemm" else f"eval_config_diversity_{args.op}.json"
    )
    train = load_rows(args.op, sources=("kernelcast",), roles=("train",))
    h200 = train[(train["backend"] == "triton") & (train["gpu"] == "h200_sxm")].reset_index(drop=True)
    test = load_rows(args.op, sources=("kernelcast",), roles=("test",))
    test = test[(test["backend"] == "triton") & (test["gpu"] == "h200_sxm") & ~test["file"].str.contains("tune")]
    test = test.reset_index(drop=True)
    rng = np.random.default_rng(0)
    configs = h200["config"].unique()
    counts = (*COUNTS[args.op], len(configs))
    subsets = {n: set(rng.choice(configs, n, replace=False)) for n in counts}
    rows = int(h200["config"].isin(subsets[counts[0]]).sum())
    trees = get_op(args.op).train_params["own_trees"]["triton"]
    test_features = build_features(test, args.op)
    measured = test["latency_us"].to_numpy()
    out = {"op": args.op, "rows_per_fit": rows, "test_rows": len(test), "trees": trees, "fits": []}
    print(f"{'configs':>8} {'rows':>7} {'median APE':>11} {'p90 APE':>8} {'fit s':>6}")
    for n, keep in subsets.items():
        sub = h200[h200["config"].isin(keep)].sample(rows, random_state=1)
        start = time.time()
        model = LatencyRegressor(args.op, **trees, quantile_estimators=5)
        model.fit(
            build_features(sub, args.op),
            sub["latency_us"].to_numpy(),
            shape_hash(sub, args.op, config=False),
            None,
            sub["config"].to_numpy(dtype=object),
        )
        ape = np.abs(model.predict(test_features) / measured - 1) * 100
        fit = {"configs": n, "median_ape": float(np.median(ape)), "p90_ape": float(np.percentile(ape, 90))}
        out["fits"].append({**fit, "fit_s": round(time.time() - start, 1)})
        print(f"{n:>8} {rows:>7} {fit['median_ape']:>10.1f}% {fit['p90_ape']:>7.1f}% {time.time() - start:>6.0f}")
    out_path.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
