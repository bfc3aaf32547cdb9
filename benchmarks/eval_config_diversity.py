"""Does the Triton GEMM model's error on fresh configs depend on how many distinct configs it trained on? Three fits
of the Triton trees' own parameters (depth 8, 1,200 rounds, learning rate 0.04) on the H200's Triton training rows,
each on the same number of rows (all the rows of 300 randomly drawn configs), from 300, 700 and all configs; each
scored on the H200's independent Triton test sets (configs no training row has; the tune sets left out).

Usage: python benchmarks/eval_config_diversity.py [--json-out PATH]   (three fits: ~10 min each on 2 busy cores)
Prints a table; writes JSON (default benchmarks/results/eval_config_diversity.json).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from kernelcast.features.vector import build_features
from kernelcast.training.data import load_rows, shape_hash
from kernelcast.training.xgb import LatencyRegressor

OUT = Path(__file__).resolve().parent / "results" / "eval_config_diversity.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json-out", type=Path, default=OUT)
    args = parser.parse_args()
    train = load_rows("gemm", sources=("kernelcast",), roles=("train",))
    h200 = train[(train["backend"] == "triton") & (train["gpu"] == "h200_sxm")].reset_index(drop=True)
    test = load_rows("gemm", sources=("kernelcast",), roles=("test",))
    test = test[(test["backend"] == "triton") & (test["gpu"] == "h200_sxm") & ~test["file"].str.contains("tune")]
    test = test.reset_index(drop=True)
    rng = np.random.default_rng(0)
    configs = h200["config"].unique()
    subsets = {n: set(rng.choice(configs, n, replace=False)) for n in (300, 700, len(configs))}
    rows = int(h200["config"].isin(subsets[300]).sum())
    test_features = build_features(test, "gemm")
    measured = test["latency_us"].to_numpy()
    out = {"rows_per_fit": rows, "test_rows": len(test), "fits": []}
    print(f"{'configs':>8} {'rows':>7} {'median APE':>11} {'p90 APE':>8} {'fit s':>6}")
    for n, keep in subsets.items():
        sub = h200[h200["config"].isin(keep)].sample(rows, random_state=1)
        start = time.time()
        model = LatencyRegressor("gemm", max_depth=8, n_estimators=1200, learning_rate=0.04, quantile_estimators=5)
        model.fit(
            build_features(sub, "gemm"),
            sub["latency_us"].to_numpy(),
            shape_hash(sub, "gemm", config=False),
            None,
            sub["config"].to_numpy(dtype=object),
        )
        ape = np.abs(model.predict(test_features) / measured - 1) * 100
        fit = {"configs": n, "median_ape": float(np.median(ape)), "p90_ape": float(np.percentile(ape, 90))}
        out["fits"].append({**fit, "fit_s": round(time.time() - start, 1)})
        print(f"{n:>8} {rows:>7} {fit['median_ape']:>10.1f}% {fit['p90_ape']:>7.1f}% {time.time() - start:>6.0f}")
    args.json_out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
