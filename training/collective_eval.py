"""Collective evaluation: measured rows (ours + aiconfigurator's NCCL tables), NCCL's model vs the learned correction.

The learned model is the shipped one, trained the way ``kernelcast train --op collective`` trains it
(``training.run.fit_fold``: the same features, target log(measured / NCCL-model time), hyperparameters,
source weights and calibration), on every fold of leave-one-GPU-out and leave-one-rank-count-out,
reported over all collectives and per collective.
``python -m kernelcast.training.collective_eval [--json PATH] [--mlflow]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.features.ops import get_op
from kernelcast.features.vector import build_features
from kernelcast.training import data, run
from kernelcast.training.splits import Split

REPO = Path(__file__).resolve().parent.parent
DESC_COLUMNS = ["op", "gpu", "dtype", "backend", "collective", "bytes", "ranks", "ranks_per_node", "in_place"]
LARGE_BYTES = 1 << 20
MODELS = ("nccl_model", "learned", "served")


def load_rows(ours: Path = REPO / "datasets" / "collective") -> pd.DataFrame:
    """Our measured rows (ok, first measurement only) + aiconfigurator-core's NCCL tables (training's loader)."""
    frame = data.load_rows("collective", datasets=ours.parent)
    keep = DESC_COLUMNS + ["config", "latency_us", "source", "nccl"]
    return frame[keep].astype({"bytes": "int64", "ranks": "int64", "ranks_per_node": "int64", "in_place": bool})


def with_features(frame: pd.DataFrame) -> pd.DataFrame:
    """Model input (numeric features incl. ``nccl_time_us``, NCCL's model time; categoricals; floor and scale)."""
    return build_features(frame.reset_index(drop=True), "collective")


def ape(pred: np.ndarray, measured: np.ndarray) -> np.ndarray:
    return np.abs(np.asarray(pred, dtype=float) / np.asarray(measured, dtype=float) - 1.0)


def ape_stats(err: np.ndarray, nbytes: np.ndarray) -> dict[str, float]:
    """Median and p90 APE (%) over all rows and over messages >= 1 MiB."""
    big = np.asarray(nbytes) >= LARGE_BYTES
    stat = lambda e, q: float(np.quantile(e, q) * 100) if len(e) else float("nan")
    return {
        "n": int(len(err)),
        "median": stat(err, 0.5),
        "p90": stat(err, 0.9),
        "n_1mib": int(big.sum()),
        "median_1mib": stat(err[big], 0.5),
        "p90_1mib": stat(err[big], 0.9),
    }


def fit_predict(frame: pd.DataFrame, test: np.ndarray, name: str) -> np.ndarray:
    """The shipped model's training path on the rows outside ``test``; its prediction (µs) for the ``test`` rows."""
    cfg = run.RunConfig("collective", log_mlflow=False, max_test_rows=len(frame))
    _, rows, _, _ = run.fit_fold(cfg, frame, Split(name, name, ~test, test))
    return rows["learned"].to_numpy()


def covered(frame: pd.DataFrame, test: np.ndarray) -> np.ndarray:
    """Per held-out row: does a training GPU share its interconnect kind (nvlink3/4/5, pcie4/5, ...)?"""
    from kernelcast.features.gpu import get_gpu

    kind = frame["gpu"].map(lambda g: get_gpu(g).interconnect["kind"]).to_numpy()
    return np.isin(kind[test], np.unique(kind[~test]))


def holdout_table(frame: pd.DataFrame, feats: pd.DataFrame, by: str) -> list[dict]:
    """Hold out each value of ``by`` in turn; per (held-out value, source), over all collectives
    (``collective="all"``) and per collective: NCCL's model, the learned correction, and ``served`` =
    learned where a training GPU shares the interconnect kind, else NCCL."""
    frame = frame.reset_index(drop=True)
    out = []
    for value in sorted(frame[by].unique()):
        test = (frame[by] == value).to_numpy()
        pred = fit_predict(frame, test, f"leave_one_{by}_out")
        nccl = feats["nccl_time_us"].to_numpy()[test]
        served = np.where(covered(frame, test), pred, nccl)
        part = frame[test]
        for source in sorted(part["source"].unique()):
            mine = (part["source"] == source).to_numpy()
            for collective in ["all", *sorted(part.loc[mine, "collective"].unique())]:
                s = mine if collective == "all" else mine & (part["collective"] == collective).to_numpy()
                measured, nbytes = part["latency_us"].to_numpy()[s], part["bytes"].to_numpy()[s]
                out.append(
                    {
                        "split": f"leave_one_{by}_out",
                        "held_out": str(value),
                        "source": source,
                        "collective": collective,
                        "nccl_model": ape_stats(ape(nccl[s], measured), nbytes),
                        "learned": ape_stats(ape(pred[s], measured), nbytes),
                        "served": ape_stats(ape(served[s], measured), nbytes),
                    }
                )
    return out


def flat_table(rows: list[dict]) -> pd.DataFrame:
    """One line per (split, held out, source, collective, model) with n and the four APE statistics."""
    return pd.DataFrame(
        [
            {k: r[k] for k in ("split", "held_out", "source", "collective")} | {"model": model, **r[model]}
            for r in rows
            for model in MODELS
        ]
    )


def comparison_figure(rows: list[dict], split: str):
    """Median and p90 APE per held-out value: NCCL's model beside the learned correction (all collectives)."""
    from kernelcast.training.plots import paired_bars

    part = [r for r in rows if r["split"] == split and r["collective"] == "all"]
    return paired_bars(
        [f"{r['held_out']}\n{r['source']}" for r in part],
        {
            model: {stat: [r[model][stat] for r in part] for stat in ("median", "p90")}
            for model in ("nccl_model", "learned")
        },
        f"{split}: APE (%)",
    )


def log_mlflow(rows: list[dict], n_rows: int) -> str:
    """Log the comparison as one run of the collective experiment: a metric per table cell, the table, figures."""
    from kernelcast.training import tracking

    metrics = {}
    for r in rows:
        head = f"{r['split']}.{r['held_out']}.{r['source']}.{r['collective']}"
        for model in MODELS:
            for stat in ("median", "p90", "median_1mib", "p90_1mib"):
                if np.isfinite(r[model][stat]):
                    metrics[f"{head}.{model}.{stat}_ape"] = r[model][stat]
    splits = sorted({r["split"] for r in rows})
    run_id, _ = tracking.log_run(
        "collective",
        "nccl-comparison",
        {"rows": n_rows, "xgb_params": json.dumps(dict(get_op("collective").train_params)), "large_bytes": LARGE_BYTES},
        {"kind": "nccl-comparison", "splits": ",".join(splits)},
        metrics,
        {f"{split}.png": comparison_figure(rows, split) for split in splits},
        {"nccl_comparison.json": flat_table(rows)},
    )
    return run_id


def format_rows(rows: list[dict]) -> str:
    """One line per (held-out value, source): median / p90 APE %, overall and (>= 1 MiB)."""
    cell = lambda m: f"{m['median']:5.1f}/{m['p90']:6.1f} ({m['median_1mib']:5.1f}/{m['p90_1mib']:6.1f})"
    lines = [
        f"{'split':<21}{'held out':<21}{'source':<15}{'n':>5}  {'NCCL model':^26}  {'learned':^26}  {'served':^26}",
        f"{'':<62}" + "  ".join([f"{'med/p90 (>=1MiB med/p90)':^26}"] * 3),
    ]
    for r in (r for r in rows if r.get("collective", "all") == "all"):
        lines.append(
            f"{r['split']:<21}{r['held_out']:<21}{r['source']:<15}{r['nccl_model']['n']:>5}  "
            f"{cell(r['nccl_model'])}  {cell(r['learned'])}  {cell(r['served'])}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="NCCL's model vs the learned correction, leave-one-GPU/rank-count-out.")
    ap.add_argument("--json", type=Path, help="also write the table as JSON here")
    ap.add_argument("--mlflow", action="store_true", help="log the table, one metric per cell and figures to MLflow")
    args = ap.parse_args(argv)
    frame = load_rows()
    feats = with_features(frame)
    rows = []
    for by in ("gpu", "ranks"):
        rows += holdout_table(frame, feats, by)
        print(format_rows([r for r in rows if r["split"] == f"leave_one_{by}_out"]), file=sys.stdout, flush=True)
    if args.json:
        args.json.write_text(json.dumps({"rows": len(frame), "table": rows}, indent=1))
    if args.mlflow:
        print(f"logged to MLflow run {log_mlflow(rows, len(frame))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
