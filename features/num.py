"""The math feature formulas are written in, once, for numpy columns and for one description's Python numbers.

``of(x)`` picks the namespace from a value: ``SCALARS`` for a Python number (one description on ``predict_latency``'s
path: ~50 ns an operation, against ~0.5-1 µs for a numpy call on a one-element array), ``ARRAYS`` (numpy) for
anything else. They give the same numbers: ``SCALARS`` keeps numpy's IEEE answers where Python's would raise or differ
(NaN through minimum and maximum, the ceiling of NaN, log2 of 0). Division by zero is the one exception: numpy says
inf, Python raises ``ZeroDivisionError``, and the caller answering one description goes the array way then.
"""

from __future__ import annotations

import math

import numpy as np

NAN, INF = float("nan"), float("inf")


class ARRAYS:
    """numpy, for columns of values."""

    ceil, floor, log2 = np.ceil, np.floor, np.log2
    minimum, maximum, fmax, where, isnan = np.minimum, np.maximum, np.fmax, np.where, np.isnan

    @staticmethod
    def floats(values) -> np.ndarray:
        return np.asarray(values, dtype=np.float64)

    @staticmethod
    def floats1d(values) -> np.ndarray:
        return np.atleast_1d(np.asarray(values, dtype=np.float64))

    @staticmethod
    def ints(values: np.ndarray) -> np.ndarray:
        return values.astype(np.int64)

    @staticmethod
    def as_float(mask: np.ndarray) -> np.ndarray:
        return mask.astype(np.float64)

    @staticmethod
    def full(like: np.ndarray, value) -> np.ndarray:
        """``value`` for every row of ``like``."""
        return np.full(len(like), value)


def _ceil(x: float) -> float:
    return float(math.ceil(x)) if -INF < x < INF else x  # NaN and ±inf are their own ceiling, as in numpy


def _floor(x: float) -> float:
    return float(math.floor(x)) if -INF < x < INF else x


def _log2(x: float) -> float:
    if x > 0:
        return math.log2(x)
    return -INF if x == 0 else NAN


class SCALARS:
    """Python numbers, with numpy's answers, for one row."""

    ceil, floor, log2 = staticmethod(_ceil), staticmethod(_floor), staticmethod(_log2)

    @staticmethod
    def minimum(a, b):
        return a if a <= b else (b if b <= a else NAN)  # NaN on either side fails both comparisons

    @staticmethod
    def maximum(a, b):
        return a if a >= b else (b if b >= a else NAN)

    @staticmethod
    def fmax(a, b):
        return a if a >= b or b != b else b  # NaN only where both are

    @staticmethod
    def where(condition, a, b):
        return a if condition else b

    @staticmethod
    def isnan(x) -> bool:
        return x != x

    @staticmethod
    def floats(value) -> float:
        return float(value)

    floats1d = floats

    @staticmethod
    def ints(value) -> int:
        return int(value)

    @staticmethod
    def as_float(mask) -> float:
        return float(mask)

    @staticmethod
    def full(like, value):
        return value


def of(value) -> type[ARRAYS] | type[SCALARS]:
    """The namespace for a value: ``SCALARS`` for a Python number (bool, int, float), ``ARRAYS`` otherwise."""
    return SCALARS if isinstance(value, (int, float)) else ARRAYS
