"""Dispatch: a learned model where one covers the op/backend/GPU, the analytical model otherwise."""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from kernelcast.features.desc import parse_desc
from kernelcast.features.frame import validate_frame
from kernelcast.features.vector import feature_columns
from kernelcast.predictors import analytical

MODEL_CHOICES = ("auto", "analytical")
RESULT_COLUMNS = ("latency_us", "low_us", "high_us", "floor_us", "bound", "model", "in_distribution")


@dataclass(frozen=True)
class Prediction:
    """One answer: the latency, its interval, the roofline floor, and where it came from."""

    latency_us: float
    low_us: float
    high_us: float
    floor_us: float
    bound: str              # compute | memory | latency | link
    model: str              # "learned:<op>@<version>" or "analytical"
    in_distribution: bool   # the learned model saw this backend and GPU (and size range)
    assumptions: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@functools.cache
def _learned(op: str):
    """The shipped learned model for ``op``, or None (no model shipped, or xgboost not installed)."""
    try:
        from kernelcast.predictors import learned
    except ImportError:
        return None
    return learned.load_model(op)


def _check_model(model: str) -> None:
    if model not in MODEL_CHOICES:
        raise ValueError(f"model must be one of {', '.join(MODEL_CHOICES)}; got {model!r}")


def _predict_op(cols: Mapping[str, np.ndarray], op: str, model_choice: str = "auto") -> dict[str, np.ndarray]:
    model = _learned(op) if model_choice == "auto" else None
    covered = model.covers(cols) if model is not None else np.zeros(1, dtype=bool)
    feats = feature_columns(cols, op, learned=bool(covered.any()))
    out = analytical.predict_columns(cols, op, feats)
    n = len(out["latency_us"])
    out["model"] = np.full(n, "analytical", dtype=object)
    out["in_distribution"] = np.zeros(n, dtype=bool)
    if covered.any():
        idx = np.flatnonzero(covered)
        # description columns give the categorical inputs, the features the numeric ones
        p50, low, high = model.predict({k: np.asarray(v)[idx] for k, v in {**cols, **feats}.items()})
        for key, value in (("latency_us", p50), ("low_us", low), ("high_us", high)):
            out[key] = np.asarray(out[key], dtype=np.float64).copy()
            out[key][idx] = value
        out["model"][idx] = model.name
        out["in_distribution"][idx] = True
    return out


def predict_latency(desc: Mapping[str, Any], model: str = "auto") -> Prediction:
    """Predict one kernel's device time (µs) from its description (a mapping or a parsed desc).

    ``model="auto"`` answers with a learned model where one covers the op/backend/GPU/sizes and
    analytically otherwise; ``"analytical"`` always gives the roofline + waves (or NCCL) answer.
    """
    _check_model(model)
    d = parse_desc(desc)
    cols = {k: np.asarray([v], dtype=object if isinstance(v, (str, type(None))) else None)
            for k, v in d.to_row().items()}
    out = _predict_op(cols, d.op, model)
    model = str(out["model"][0])
    return Prediction(float(out["latency_us"][0]), float(out["low_us"][0]), float(out["high_us"][0]),
                      float(out["floor_us"][0]), str(out["bound"][0]), model, bool(out["in_distribution"][0]),
                      analytical.assumptions(d.op) if model == "analytical" else _learned(d.op).assumptions)


def predict_many(descs: pd.DataFrame | Iterable[Mapping[str, Any]], model: str = "auto") -> pd.DataFrame:
    """Predict many descriptions at once (any mix of ops); one result row per input row, same index."""
    _check_model(model)
    frame = descs if isinstance(descs, pd.DataFrame) else pd.DataFrame(list(descs))
    result = pd.DataFrame(index=frame.index, columns=list(RESULT_COLUMNS))
    parts = []
    for op, (pos, cols) in validate_frame(frame).items():
        out = _predict_op(cols, op, model)
        parts.append(pd.DataFrame({c: out[c] for c in RESULT_COLUMNS}, index=frame.index[pos]))
    if parts:
        result = pd.concat(parts).reindex(frame.index)
    return result
