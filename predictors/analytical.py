"""Analytical predictor: each op family's own model (roofline with wave quantization; NCCL's cost model).

Works for every GPU in the spec database. The efficiency assumptions live in the op's module
(``features/ops/``) and are reported with every answer; the learned models correct what they miss.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kernelcast.features.ops import get_op
from kernelcast.features.vector import feature_columns

#: uncalibrated analytical interval: the answer divided / multiplied by this factor (never below the floor)
INTERVAL_FACTOR = 2.0


class AnalyticalPredictor:
    """Answers every row of every op family."""

    name = "analytical"
    needs_learned_features = False

    def covers(self, op: str, cols) -> np.ndarray:
        return np.ones(len(np.atleast_1d(cols["gpu"])), dtype=bool)

    def predict_columns(self, op: str, cols, features) -> dict[str, np.ndarray]:
        latency, _ = get_op(op).analytical(cols, features)
        return self.answer(latency, features["floor_us"])

    @staticmethod
    def answer(latency, floor) -> dict[str, np.ndarray]:
        """The answer for latencies the op's analytical model gave (dispatch computes them once, with the bound)."""
        return _interval(latency, floor)

    def assumptions(self, op: str) -> str:
        return f"{get_op(op).analytical_assumptions}; interval x/÷{INTERVAL_FACTOR:g} (uncalibrated)"


def _interval(latency: np.ndarray, floor: np.ndarray) -> dict[str, np.ndarray]:
    latency = np.asarray(latency, dtype=np.float64)
    low = np.minimum(np.maximum(floor, latency / INTERVAL_FACTOR), latency)
    return {
        "latency_us": latency,
        "low_us": low,
        "high_us": latency * INTERVAL_FACTOR,
        "in_distribution": np.zeros(len(latency), dtype=bool),
    }


def predict_frame(frame: pd.DataFrame, op: str) -> pd.DataFrame:
    """The analytical answer for validated rows of one op (description columns, canonical ``gpu``)."""
    cols = {c: frame[c].to_numpy() for c in frame.columns}
    f = feature_columns(cols, op, learned=False)
    latency, bound = get_op(op).analytical(cols, f)
    out = _interval(latency, f["floor_us"])
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
