"""The predictor contract: what every predictor (analytical, learned, and those to come) implements.

A predictor answers rows of one op family given as validated description columns plus their
feature columns. ``covers`` says which rows it answers; ``predict_columns`` answers them;
``assumptions`` says, in words, what the answer rests on. Dispatch asks predictors in order and
the first that covers a row answers it. ``tests/test_predictor_contract.py`` checks every
predictor against this contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import numpy as np

Columns = Mapping[str, np.ndarray]
#: what ``predict_columns`` returns, one array per key, one value per row
ANSWER_KEYS = ("latency_us", "low_us", "high_us", "in_distribution")


@runtime_checkable
class Predictor(Protocol):
    #: how answers name their source ("analytical", "learned:gemm@3ec37bcb")
    name: str
    #: whether ``predict_columns`` reads the learned-only features (``feature_columns(learned=True)``)
    needs_learned_features: bool

    def covers(self, op: str, cols: Columns) -> np.ndarray:
        """A bool per row: this predictor answers the row."""

    def predict_columns(self, op: str, cols: Columns, features: Columns) -> dict[str, np.ndarray]:
        """``ANSWER_KEYS`` for every row (callers pass only covered rows): low_us <= latency_us <= high_us."""

    def assumptions(self, op: str) -> str:
        """What the answer for ``op`` rests on, in one sentence."""
