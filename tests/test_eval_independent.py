"""benchmarks/eval_independent.py's bootstrap band on a test set's median APE (synthetic APEs: only the statistics
are under test here)."""

import importlib.util
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "eval_independent.py"


def _script():
    spec = importlib.util.spec_from_file_location("eval_independent", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_median_band_holds_the_median_and_narrows_with_the_set_size():
    median_interval = _script().median_interval
    rng = np.random.default_rng(7)
    small = np.abs(rng.normal(0.0, 0.07, 79))  # |N(0, σ)|: median 0.6745 σ ≈ 4.7%
    large = np.abs(rng.normal(0.0, 0.07, 2000))
    lo_s, hi_s = median_interval(small)
    lo_l, hi_l = median_interval(large)
    assert lo_s < np.median(small) < hi_s and lo_l < np.median(large) < hi_l
    assert lo_s < 0.6745 * 0.07 < hi_s and lo_l < 0.6745 * 0.07 < hi_l
    assert (hi_l - lo_l) < (hi_s - lo_s) / 3  # ~√(2000/79) ≈ 5× narrower
    assert median_interval(small) == (lo_s, hi_s)  # seeded: the same band every run
