"""Analytical predictor: each op family's own model (roofline with wave quantization; NCCL's cost model).

Works for every GPU in the spec database. The efficiency assumptions live in the op's module
(``features/ops/``) and are reported with every answer; the learned models correct what they miss.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.features.ops import get_op
from kernelcast.features.vector import feature_columns

#: where no band was measured (an op or backend without training rows): the answer divided / multiplied by this
#: factor, uncalibrated
INTERVAL_FACTOR = 2.0
#: the analytical model's own error per (op, backend), written by ``python -m kernelcast.training.bands``: the 10th and
#: 90th percentiles of log(measured / analytical) over the training rows
BANDS_FILE = Path(__file__).with_name("models") / "analytical.bands.json"


@functools.cache
def bands() -> dict:
    """{op: {backend: {"q10", "q90", "rows"}}} from ``BANDS_FILE``; empty where it is absent."""
    if not BANDS_FILE.is_file():
        return {}
    return json.loads(BANDS_FILE.read_text())["bands"]


def band_logs(op: str, backend) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the log band the analytical answer's interval spans: its (op, backend)'s measured one, else ±log 2."""
    backend = np.atleast_1d(np.asarray(backend, dtype=object))
    lo = np.full(len(backend), -np.log(INTERVAL_FACTOR))
    hi = np.full(len(backend), np.log(INTERVAL_FACTOR))
    for name, b in bands().get(op, {}).items():
        mine = backend == name
        lo[mine], hi[mine] = b["q10"], b["q90"]
    return lo, hi


class AnalyticalPredictor:
    """Answers every row of every op family."""

    name = "analytical"
    needs_learned_features = False

    def covers(self, op: str, cols) -> np.ndarray:
        return np.ones(len(np.atleast_1d(cols["gpu"])), dtype=bool)

    def predict_columns(self, op: str, cols, features) -> dict[str, np.ndarray]:
        latency, _ = get_op(op).analytical(cols, features)
        return self.answer(op, cols["backend"], latency, features["floor_us"])

    @staticmethod
    def answer(op: str, backend, latency, floor) -> dict[str, np.ndarray]:
        """The answer for latencies the op's analytical model gave (dispatch computes them once, with the bound)."""
        return _interval(op, backend, latency, floor)

    def assumptions(self, op: str, backend: str | None = None) -> str:
        band = bands().get(op, {}).get(backend) if backend is not None else None
        if band is None:
            measured = ", ".join(sorted(bands().get(op, {}))) or "none"
            how = f"interval x/÷{INTERVAL_FACTOR:g} (uncalibrated; backends with a measured band: {measured})"
        else:
            how = (
                f"interval: 80% of {band['rows']:,} training rows of {op}/{backend} measured within "
                f"x{np.exp(band['q10']):.2f}-x{np.exp(band['q90']):.2f} of this model's answer"
            )
        return f"{get_op(op).analytical_assumptions}; {how}"


def _interval(op: str, backend, latency: np.ndarray, floor: np.ndarray) -> dict[str, np.ndarray]:
    """The point is the analytical answer; the interval is the band its (op, backend) errors fell in on the training
    rows (``bands``), widened to hold the point, its low end never below the floor."""
    latency = np.asarray(latency, dtype=np.float64)
    lo, hi = band_logs(op, backend)
    low = np.minimum(np.maximum(floor, latency * np.exp(lo)), latency)
    return {
        "latency_us": latency,
        "low_us": low,
        "high_us": np.maximum(latency * np.exp(hi), latency),
        "in_distribution": np.zeros(len(latency), dtype=bool),
    }


def predict_frame(frame: pd.DataFrame, op: str) -> pd.DataFrame:
    """The analytical answer for validated rows of one op (description columns, canonical ``gpu``)."""
    cols = {c: frame[c].to_numpy() for c in frame.columns}
    f = feature_columns(cols, op, learned=False)
    latency, bound = get_op(op).analytical(cols, f)
    out = _interval(op, cols["backend"], latency, f["floor_us"])
    return pd.DataFrame(
        {
            "latency_us": out["latency_us"],
            "low_us": out["low_us"],
            "high_us": out["high_us"],
            "floor_us": f["floor_us"],
            "bound": bound,
        },
        index=frame.index,
    )
