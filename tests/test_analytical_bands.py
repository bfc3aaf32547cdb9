"""The analytical answer's interval: the band its own errors fell in on the training rows, per op and backend
(predictors/models/analytical.bands.json, ``python -m kernelcast.training.bands``), ×/÷2 where none was measured."""

import json

import numpy as np
import pytest

from kernelcast import predict_latency
from kernelcast.predictors import analytical
from kernelcast.training.bands import op_bands

TRITON_GEMM = {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "triton", "m": 2048, "n": 2048, "k": 2048}


def test_an_analytical_answer_spans_its_backends_measured_band():
    band = analytical.bands()["gemm"]["triton"]
    assert band["rows"] > 10_000 and band["q10"] < band["q90"]
    for gpu in ("H200", "MI300X"):  # a GPU with no learned model gets the same band: the model's error, not the GPU's
        p = predict_latency({**TRITON_GEMM, "gpu": gpu}, predictor="analytical")
        assert p.model == "analytical" and not p.in_distribution
        assert p.high_us == pytest.approx(max(p.latency_us * np.exp(band["q90"]), p.latency_us))
        assert p.low_us == pytest.approx(min(max(p.floor_us, p.latency_us * np.exp(band["q10"])), p.latency_us))
        assert f"80% of {band['rows']:,} training rows of gemm/triton measured within" in p.assumptions


def test_without_a_band_the_interval_is_the_flat_factor(tmp_path, monkeypatch):
    path = tmp_path / "analytical.bands.json"
    path.write_text(json.dumps({"bands": {"gemm": {}}}))  # a file that measured no GEMM backend
    monkeypatch.setattr(analytical, "BANDS_FILE", path)
    analytical.bands.cache_clear()
    try:
        p = predict_latency(TRITON_GEMM, predictor="analytical")
        assert p.high_us == pytest.approx(p.latency_us * analytical.INTERVAL_FACTOR)
        assert "uncalibrated; backends with a measured band: none" in p.assumptions
    finally:
        analytical.bands.cache_clear()


def test_the_shipped_bands_are_what_the_training_rows_give():
    shipped = analytical.bands()["copy"]
    # aiconfigurator's tables hold no copy rows, so the card's own copy training rows give the whole band
    assert op_bands("copy", sources=("kernelcast",)) == shipped
