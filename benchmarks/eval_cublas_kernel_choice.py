"""How much of cuBLAS's error is its kernel choice (issue 13): the cuBLAS own trees' recipe (the shipped GEMM model's
``own_trees["cublas"]`` parameters) fitted on every kernelcast cuBLAS training row, scored on every cuBLAS test set
three ways — its features alone; with the kernel family each row ran (from its measured kernel names: an oracle no
prediction has); and with the family a classifier predicts from the same features (what serving could have).

A family is a kernel name without its tile: ``gemvx`` by index type, its four template flags and its block size;
cutlass, xmma and nvjet kernels by their instruction and operand types; the rest by their name.

Usage: python benchmarks/eval_cublas_kernel_choice.py [--classifier-rounds 30] [--json-out PATH]
Prints a table (median APE % per test set); writes JSON (default benchmarks/results/eval_cublas_kernel_choice.json).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import xgboost as xgb

from kernelcast.collect.dataset import atomic_path
from kernelcast.features.desc import op_fields
from kernelcast.features.ops import get_op
from kernelcast.features.vector import build_features
from kernelcast.predictors.learned import feature_matrix
from kernelcast.training import data


def family(names: str) -> str:
    """A cuBLAS launch's kernel family from its kernel names (the first kernel but a memset)."""
    name = str(names).replace("Memset (Device);", "").split(";")[0]
    if "gemvx::kernel<" in name:
        args = [a.strip() for a in name.split("gemvx::kernel<")[1].split(",")[:12]]
        return f"gemvx_{args[0]}_{''.join(a[0] for a in args[6:10])}_{args[10]}"
    name = re.sub(r"^(std::enable_if<[^>]*>::type|void) ", "", name)
    for pattern in (
        r"(cutlass_\d+_(?:wmma_)?tensorop_\w+?gemm)",
        r"^(nvjet_sm90_\w+?)_\d+x\d+",
        r"^(sm\d+_xmma_gemm_\w+?)_tilesize",
    ):
        if m := re.search(pattern, name):
            return m.group(1)
    return re.sub(r"<.*", "", name)[:40]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classifier-rounds", type=int, default=30, help="boosting rounds of the family classifier")
    ap.add_argument(
        "--json-out", type=Path, default=Path(__file__).parent / "results" / "eval_cublas_kernel_choice.json"
    )
    args = ap.parse_args()
    rows = data.load_rows(
        "gemm", sources=("kernelcast",), roles=("train", "test"), report=None, extra=("kernel_names",)
    )
    rows = rows[rows["backend"].eq("cublas") & rows["kernel_names"].notna()].reset_index(drop=True)
    features = build_features(rows[[c for c in op_fields("gemm") if c in rows]], "gemm")
    x = feature_matrix(features, "gemm")
    y = np.log(rows["latency_us"].to_numpy() / features["scale_us"].to_numpy())
    test = rows["role"].eq("test").to_numpy()
    train = ~test
    families = pd.Categorical(rows["kernel_names"].map(family))
    codes, k = families.codes, len(families.categories)
    own = get_op("gemm").train_params["own_trees"]["cublas"]
    params = {
        "tree_method": "hist", "max_depth": own["max_depth"], "eta": own["learning_rate"], "subsample": 0.8,
        "colsample_bytree": 0.8, "nthread": 2, "seed": 0, "objective": "reg:squarederror",
    }  # fmt: skip

    def onehot(c: np.ndarray) -> np.ndarray:
        out = np.zeros((len(c), k), np.float32)
        out[np.arange(len(c)), c] = 1
        return out

    def fit(m: np.ndarray):
        return xgb.train(params, xgb.DMatrix(m[train], y[train]), own["n_estimators"])

    print(f"{train.sum()} training rows, {test.sum()} test rows, {k} kernel families", file=sys.stderr)
    plain, with_family = fit(x), fit(np.hstack([x, onehot(codes)]))
    classifier = xgb.train(
        {"max_depth": 6, "eta": 0.2, "objective": "multi:softprob", "num_class": k, "tree_method": "hist",
         "subsample": 0.8, "nthread": 2, "seed": 0},
        xgb.DMatrix(x[train], codes[train]),
        args.classifier_rounds,
    )  # fmt: skip
    guessed = classifier.predict(xgb.DMatrix(x[test])).argmax(1)
    answers = {
        "features": plain.predict(xgb.DMatrix(x[test])),
        "measured_family": with_family.predict(xgb.DMatrix(np.hstack([x[test], onehot(codes[test])]))),
        "predicted_family": with_family.predict(xgb.DMatrix(np.hstack([x[test], onehot(guessed)]))),
    }
    sets = rows.loc[test, "file"].str.extract(r"_([a-z0-9]+)\.parquet$")[0].to_numpy()
    table = []
    for name in ["all", *sorted(set(sets))]:
        mine = np.ones(len(sets), bool) if name == "all" else sets == name
        row = {
            "set": name,
            "rows": int(mine.sum()),
            "classifier_accuracy": float((guessed == codes[test])[mine].mean()),
        }
        for how, log_answer in answers.items():
            row[how] = float(np.median(np.abs(np.exp(log_answer[mine] - y[test][mine]) - 1)) * 100)
        table.append(row)
    print(f"{'set':<12}{'rows':>6}{'features':>10}{'+measured':>11}{'+predicted':>12}{'classifier':>12}")
    for r in table:
        print(
            f"{r['set']:<12}{r['rows']:>6}{r['features']:>10.2f}{r['measured_family']:>11.2f}"
            f"{r['predicted_family']:>12.2f}{r['classifier_accuracy']:>12.3f}"
        )
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.json_out) as tmp:
        tmp.write_text(json.dumps({"families": list(families.categories), "table": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
