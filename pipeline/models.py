"""Retrain, evaluate and choose: a candidate per op from the farm's published rows, scored beside the MLflow
champion on the frozen split and on the independent test set, overall and per GPU architecture.

The candidate is promoted only when it beats the champion on both sets (or there is no usable champion).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kernelcast.features.gpu import get_gpu
from kernelcast.features.vector import build_features
from kernelcast.pipeline.farm import FarmConfig
from kernelcast.predictors.learned import load_model
from kernelcast.training import data, evaluate, tracking
from kernelcast.training.run import RunConfig, load, train
from kernelcast.training.splits import make_splits

SETS = ("frozen", "independent")


def run_config(cfg: FarmConfig, op: str, model_dir: Path | None = None) -> RunConfig:
    """Training on the farm's published rows only (never the committed datasets), no MLflow logging of its own; the
    candidate is the fold's model (no refit): the night scores it on the frozen split's test side."""
    return RunConfig(
        op,
        sources=("kernelcast",),
        datasets=cfg.datasets,
        params=dict(cfg.train.params),
        log_mlflow=False,
        model_dir=model_dir,
        refit=False,
    )


def retrain(cfg: FarmConfig, night: str) -> dict[str, Any]:
    """Train a candidate per op on the published rows of the frozen split's train side into ``candidate/``."""
    out = {}
    for op in cfg.train.ops:
        result = train(run_config(cfg, op, candidate_dir(cfg, night)))
        out[op] = {k: result[k] for k in ("rows", "n_train", "data_fingerprint", "seconds", "exported")}
    return out


def candidate_dir(cfg: FarmConfig, night: str) -> Path:
    return cfg.night_dir(night) / "candidate"


def _test_sets(cfg: FarmConfig, op: str) -> dict[str, pd.DataFrame]:
    """The frozen split's test side of the published rows, and the independent test set."""
    frame = load(run_config(cfg, op))
    [split] = make_splits("random", frame, data.shape_hash(frame, op), None)
    out = {"frozen": frame[split.test].reset_index(drop=True)}
    if (cfg.testset / "files.toml").exists():
        out["independent"] = data.load_rows(op, ("kernelcast",), cfg.testset, roles=("test",), report=None)
    return out


def _scores(model, rows: pd.DataFrame, op: str) -> dict[str, float]:
    """MAPE and median APE overall and per architecture (``arch.<name>.mape``)."""
    p50, _, _ = model.predict(build_features(rows, op))
    measured = rows["latency_us"].to_numpy(dtype=np.float64)
    m = evaluate.metrics(measured, p50)
    out = {"n": m["n"], "mape": m["mape"], "median_ape": m["median_ape"]}
    arch = rows["gpu"].map(lambda g: get_gpu(g).architecture).to_numpy()
    for name in sorted(set(arch)):
        out[f"arch.{name}.mape"] = evaluate.metrics(measured[arch == name], p50[arch == name])["mape"]
    return out


def _champion(op: str, dest: Path):
    """The champion's fold model where its run refitted the shipped one (which saw the frozen split's rows), else the
    shipped model."""
    folder = tracking.champion_files(op, dest, artifacts=tracking.SCORED)
    try:
        return load_model(op, folder) if folder is not None else None
    except ValueError:  # features changed since: the champion cannot score these rows
        return None


def evaluate_night(cfg: FarmConfig, night: str) -> dict[str, Any]:
    """Per op: candidate and champion scores on both sets, and whether the candidate is promoted."""
    out = {}
    for op in cfg.train.ops:
        sets = _test_sets(cfg, op)
        candidate = load_model(op, candidate_dir(cfg, night))
        with tempfile.TemporaryDirectory() as tmp:
            champion = _champion(op, Path(tmp))
            scores = {
                name: {
                    "candidate": _scores(candidate, rows, op),
                    "champion": _scores(champion, rows, op) if champion is not None else None,
                }
                for name, rows in sets.items()
                if len(rows)
            }
        better = {
            name: s["champion"] is None or s["candidate"]["mape"] < s["champion"]["mape"] for name, s in scores.items()
        }
        out[op] = {
            "scores": scores,
            "better": better,
            "promote": champion is None or (set(better) == set(SETS) and all(better.values())),
            "reason": _reason(champion is not None, better),
        }
    return out


def _reason(has_champion: bool, better: dict[str, bool]) -> str:
    if not has_champion:
        return "no usable champion"
    missing = [s for s in SETS if s not in better]
    if missing:
        return f"no {missing[0]} test rows: the champion stays"
    worse = [s for s in SETS if not better[s]]
    return "better on " + " and ".join(SETS) if not worse else "not better on " + " and ".join(worse)
