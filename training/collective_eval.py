"""Collective evaluation: measured rows (ours + aiconfigurator's NCCL tables), NCCL's model vs a learned correction.

The learned model is XGBoost on ``log(measured / NCCL-model time)`` over ``features.vector`` columns
of op ``collective`` (NCCL's model time is the floor); splits are leave-one-GPU-out and
leave-one-rank-count-out. ``python -m kernelcast.training.collective_eval [--json PATH]``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.features.vector import build_features
from kernelcast.training import data

REPO = Path(__file__).resolve().parent.parent
DESC_COLUMNS = ["op", "gpu", "dtype", "backend", "collective", "bytes", "ranks", "ranks_per_node", "in_place"]
LARGE_BYTES = 1 << 20
#: XGBoost settings of the correction model (small data: shallow trees, many rounds)
XGB_PARAMS = {"n_estimators": 600, "max_depth": 5, "learning_rate": 0.05, "subsample": 0.8,
              "colsample_bytree": 0.8, "min_child_weight": 2, "tree_method": "hist", "enable_categorical": True}


def load_rows(ours: Path = REPO / "datasets" / "collective") -> pd.DataFrame:
    """Our measured rows (ok, first measurement only) + aiconfigurator-core's NCCL tables (training's loader)."""
    frame = data.load_rows("collective", datasets=ours.parent)
    keep = DESC_COLUMNS + ["latency_us", "source", "nccl"]
    return frame[keep].astype({"bytes": "int64", "ranks": "int64", "ranks_per_node": "int64", "in_place": bool})


def with_features(frame: pd.DataFrame) -> pd.DataFrame:
    """Model input (numeric features, categoricals, floor_us = NCCL's model time) for ``frame``'s rows."""
    return build_features(frame.reset_index(drop=True), "collective")


def ape(pred: np.ndarray, measured: np.ndarray) -> np.ndarray:
    return np.abs(np.asarray(pred, dtype=float) / np.asarray(measured, dtype=float) - 1.0)


def ape_stats(err: np.ndarray, nbytes: np.ndarray) -> dict[str, float]:
    """Median and p90 APE (%) over all rows and over messages >= 1 MiB."""
    big = np.asarray(nbytes) >= LARGE_BYTES
    stat = lambda e, q: float(np.quantile(e, q) * 100) if len(e) else float("nan")
    return {"n": int(len(err)), "median": stat(err, 0.5), "p90": stat(err, 0.9),
            "n_1mib": int(big.sum()), "median_1mib": stat(err[big], 0.5), "p90_1mib": stat(err[big], 0.9)}


def fit_predict(train: pd.DataFrame, test: pd.DataFrame) -> np.ndarray:
    """Train XGBoost on log(measured / floor) of ``train`` (feature frames), predict µs for ``test``."""
    import xgboost as xgb

    cols = [c for c in train.columns if c not in ("floor_us", "latency_us")]
    model = xgb.XGBRegressor(**XGB_PARAMS)
    model.fit(train[cols], np.log(train["latency_us"] / train["floor_us"]))
    return np.exp(model.predict(test[cols])) * test["floor_us"].to_numpy()


def covered(frame: pd.DataFrame, test: np.ndarray) -> np.ndarray:
    """Per held-out row: does a training GPU share its interconnect kind (nvlink3/4/5, pcie4/5, ...)?"""
    from kernelcast.features.gpu import get_gpu

    kind = frame["gpu"].map(lambda g: get_gpu(g).interconnect["kind"]).to_numpy()
    return np.isin(kind[test], np.unique(kind[~test]))


def holdout_table(frame: pd.DataFrame, feats: pd.DataFrame, by: str) -> list[dict]:
    """Hold out each value of ``by`` in turn; per (held-out value, source): NCCL's model, the learned
    correction, and ``served`` = learned where a training GPU shares the interconnect kind, else NCCL."""
    data = feats.assign(latency_us=frame["latency_us"].to_numpy())
    out = []
    for value in sorted(frame[by].unique()):
        test = (frame[by] == value).to_numpy()
        pred = fit_predict(data[~test], data[test])
        floor = data["floor_us"].to_numpy()[test]
        served = np.where(covered(frame, test), pred, floor)
        part = frame[test]
        for source in sorted(part["source"].unique()):
            s = (part["source"] == source).to_numpy()
            measured, nbytes = part["latency_us"].to_numpy()[s], part["bytes"].to_numpy()[s]
            out.append({"split": f"leave_one_{by}_out", "held_out": str(value), "source": source,
                        "nccl_model": ape_stats(ape(floor[s], measured), nbytes),
                        "learned": ape_stats(ape(pred[s], measured), nbytes),
                        "served": ape_stats(ape(served[s], measured), nbytes)})
    return out


def format_rows(rows: list[dict]) -> str:
    """One line per (held-out value, source): median / p90 APE %, overall and (>= 1 MiB)."""
    cell = lambda m: f"{m['median']:5.1f}/{m['p90']:6.1f} ({m['median_1mib']:5.1f}/{m['p90_1mib']:6.1f})"
    lines = [f"{'split':<21}{'held out':<21}{'source':<15}{'n':>5}  {'NCCL model':^26}  {'learned':^26}  {'served':^26}",
             f"{'':<62}" + "  ".join([f"{'med/p90 (>=1MiB med/p90)':^26}"] * 3)]
    for r in rows:
        lines.append(f"{r['split']:<21}{r['held_out']:<21}{r['source']:<15}{r['nccl_model']['n']:>5}  "
                     f"{cell(r['nccl_model'])}  {cell(r['learned'])}  {cell(r['served'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="NCCL's model vs the learned correction, leave-one-GPU/rank-count-out.")
    ap.add_argument("--json", type=Path, help="also write the table as JSON here")
    args = ap.parse_args(argv)
    frame = load_rows()
    feats = with_features(frame)
    rows = []
    for by in ("gpu", "ranks"):
        rows += holdout_table(frame, feats, by)
        print(format_rows([r for r in rows if r["split"] == f"leave_one_{by}_out"]), file=sys.stdout, flush=True)
    if args.json:
        args.json.write_text(json.dumps({"rows": len(frame), "table": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
