"""The shipped learned models: loading, manifest checks, coverage, intervals, and dispatch through them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("xgboost")
from kernelcast.features.vector import build_features, feature_version  # noqa: E402
from kernelcast.predictors import learned  # noqa: E402

SHIPPED = [op for op in ("gemm", "attention", "moe", "collective") if (learned.MODEL_DIR / f"{op}.json").exists()]
GEMM = {
    "op": ["gemm"] * 3,
    "gpu": ["h200_sxm", "mi300x", "h200_sxm"],
    "dtype": ["bf16"] * 3,
    "backend": ["trtllm"] * 3,
    "m": [4096, 4096, 1 << 22],
    "n": [4096] * 3,
    "k": [4096] * 3,
    "batch": [1] * 3,
    "layout": ["nt"] * 3,
    "out_dtype": ["bf16"] * 3,
    "config": [None] * 3,
}


def _copy(op: str, tmp_path: Path) -> Path:
    for suffix in (".forest.npz", ".json"):
        shutil.copy(learned.MODEL_DIR / f"{op}{suffix}", tmp_path / f"{op}{suffix}")
    return tmp_path


@pytest.mark.parametrize("op", SHIPPED)
def test_shipped_manifest_matches_this_code(op):
    manifest = learned.read_manifest(op)
    learned.check_manifest(manifest, op)
    assert manifest["feature_version"] == feature_version(op) and len(manifest["data_fingerprint"]) == 16
    assert manifest["conformal"]["coverage_target"] == 0.8 and manifest["metrics"]["random.learned.mape"] > 0
    assert learned.load_model(op) is learned.load_model(op)  # cached


def test_gemm_covers_trained_gpu_backend_and_range_only():
    if "gemm" not in SHIPPED:
        pytest.skip("no shipped gemm model")
    model = learned.load_model("gemm")
    frame = pd.DataFrame(GEMM)
    assert model.covers("gemm", frame).tolist() == [True, False, False]  # h200 in; MI300X unseen; m beyond range
    assert model.covers("gemm", {k: np.asarray(v) for k, v in GEMM.items()}).tolist() == [True, False, False]
    p50, low, high = model.predict(build_features(frame.iloc[:1], "gemm"))
    assert low[0] <= p50[0] <= high[0]
    assert 100 < p50[0] < 300  # aiconfigurator measured 4096³ bf16 on H200 at 175 µs (anchors.md §3.1)


def test_missing_manifest_means_no_model(tmp_path):
    assert learned.load_model("gemm", tmp_path) is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"feature_version": "0"}, "feature_version '0'"),
        ({"features": ["log_m", "log_n"]}, "feature names differ"),
        ({"op": "moe"}, "op 'moe', expected 'gemm'"),
        ({"routes": ["nope"]}, r"routes must be distinct backends of 'gemm' \(.*\); got \['nope'\]"),
        ({"routes": []}, r"reads \d+ inputs; its manifest lists \d+ features and 0 route columns"),
    ],
)
def test_manifest_mismatch_is_a_clear_error(tmp_path, change, message):
    if "gemm" not in SHIPPED:
        pytest.skip("no shipped gemm model")
    folder = _copy("gemm", tmp_path)
    manifest = json.loads((folder / "gemm.json").read_text())
    (folder / "gemm.json").write_text(json.dumps({**manifest, **change}))
    with pytest.raises(ValueError, match=message):
        learned.load_model("gemm", folder)


def _corrupt(folder: Path, name: str, how: str) -> None:
    path = folder / name
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if how == "truncate" else data[:-1] + bytes([data[-1] ^ 1]))


@pytest.mark.parametrize(
    "name,how,message",
    [
        ("gemm.forest.npz", "flip", r"gemm.forest.npz: sha256 .* does not match its manifest"),
        ("gemm.forest.npz", "truncate", r"gemm.forest.npz: sha256 .* does not match its manifest"),
        ("gemm.json", "truncate", r"gemm.json: not a valid model manifest"),
    ],
)
def test_altered_or_truncated_files_are_one_clear_error(tmp_path, name, how, message):
    if "gemm" not in SHIPPED:
        pytest.skip("no shipped gemm model")
    folder = _copy("gemm", tmp_path)
    _corrupt(folder, name, how)
    with pytest.raises(learned.ModelFileError, match=message):
        learned.load_model("gemm", folder)


def test_a_forest_that_does_not_give_xgboosts_check_margins_is_refused(tmp_path):
    """The manifest carries XGBoost's own margins on check rows: a forest that answers otherwise never serves."""
    if "gemm" not in SHIPPED:
        pytest.skip("no shipped gemm model")
    folder = _copy("gemm", tmp_path)
    manifest = json.loads((folder / "gemm.json").read_text())
    manifest["check"]["margins"][3][0] += 0.01  # one row's point margin: 1% in latency
    (folder / "gemm.json").write_text(json.dumps(manifest))
    message = r"gemm.forest.npz: margins differ from XGBoost's .* by up to 0.01"
    with pytest.raises(learned.ModelFileError, match=message):
        learned.load_model("gemm", folder)
    del manifest["check"]
    (folder / "gemm.json").write_text(json.dumps(manifest))
    with pytest.raises(learned.ModelFileError, match=r"gemm.json: manifest lacks check"):
        learned.load_model("gemm", folder)


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda m: m.pop("covered"), "manifest lacks covered"),
        (lambda m: m["conformal"].update(offset=float("nan")), "conformal offsets must be finite numbers"),
        (lambda m: m.update(files={}), "records no sha256"),
    ],
)
def test_manifest_keys_and_offsets_are_checked(tmp_path, change, message):
    if "gemm" not in SHIPPED:
        pytest.skip("no shipped gemm model")
    folder = _copy("gemm", tmp_path)
    manifest = json.loads((folder / "gemm.json").read_text())
    change(manifest)
    (folder / "gemm.json").write_text(json.dumps(manifest))
    with pytest.raises(learned.ModelFileError, match=message):
        learned.load_model("gemm", folder)


def test_conformal_offset_and_interval_shape():
    from kernelcast.training.xgb import conformal_offset

    scores = np.arange(10, dtype=float)  # ceil(11 * 0.8) / 10 = 0.9 -> 9th of 10
    assert conformal_offset(scores, 0.8) == 8.0
    with pytest.raises(ValueError, match="at least one row"):
        conformal_offset(np.array([]), 0.8)
    # the quantiles are the point's error: the interval sits around p50, and always contains it
    p50, low, high = learned.to_latency(np.array([10.0]), np.array([0.5]), np.array([[-0.1, 0.2], [0.3, 0.4]]), 0.05)
    assert p50[0] == pytest.approx(10 * np.exp(0.5))
    assert (low[0], high[0]) == (pytest.approx(p50[0] * np.exp(-0.15)), pytest.approx(p50[0] * np.exp(0.25)))
    p50, low, high = learned.to_latency(np.array([10.0]), np.array([0.0]), np.array([[0.3, 0.4]]), 0.0)
    assert (low[0], p50[0], high[0]) == (10.0, 10.0, pytest.approx(10 * np.exp(0.4)))


def test_dispatch_answers_from_the_learned_model():
    if "gemm" not in SHIPPED:
        pytest.skip("no shipped gemm model")
    from kernelcast.predictors.dispatch import predict_latency

    inside = predict_latency(
        {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "trtllm", "m": 4096, "n": 4096, "k": 4096}
    )
    assert inside.model.startswith("learned:gemm@") and inside.in_distribution
    outside = predict_latency(
        {"op": "gemm", "gpu": "MI300X", "dtype": "bf16", "backend": "trtllm", "m": 4096, "n": 4096, "k": 4096}
    )
    assert outside.model == "analytical" and not outside.in_distribution


def test_without_xgboost_the_shipped_model_still_serves(monkeypatch):
    """Serving reads the forest only: a GPU host or a base install without xgboost gets the learned answer."""
    if "gemm" not in SHIPPED:
        pytest.skip("no shipped gemm model")
    import sys

    monkeypatch.setitem(sys.modules, "xgboost", None)  # what `import xgboost` sees when it is absent
    learned._load.cache_clear()
    try:
        model = learned.load_model("gemm")
        p50, low, high = model.predict(build_features(pd.DataFrame(GEMM).iloc[:1], "gemm"))
        assert model.name.startswith("learned:gemm@") and low[0] <= p50[0] <= high[0]
    finally:
        learned._load.cache_clear()


def test_row_offsets_use_each_sources_calibration():
    op = "gemm"
    columns = learned.matrix_columns(op)
    x = np.zeros((3, len(columns)), dtype=np.float32)
    x[0, columns.index("source=kernelcast")] = 1
    x[1, columns.index("source=aiconfigurator")] = 1  # row 2: no source column set
    conformal = {"offset": 0.1, "by_source": {"kernelcast": 0.3}}
    assert learned.row_offsets(x, op, conformal).tolist() == pytest.approx([0.3, 0.1, 0.1])
    x[0, columns.index("backend=cublas")] = 1
    x[1, columns.index("backend=cublas")] = 1  # an aiconfigurator row: the kernelcast/cublas cell is not its own
    cells = {**conformal, "by_backend": {"kernelcast/cublas": 0.5, "kernelcast/triton": 0.7}}
    assert learned.row_offsets(x, op, cells).tolist() == pytest.approx([0.5, 0.1, 0.1])
    assert [learned.row_offsets(x[i : i + 1], op, cells)[0] for i in range(3)] == pytest.approx([0.5, 0.1, 0.1])


def test_calibration_gives_each_backend_its_offset():
    """Mondrian calibration per (source, backend) on calibration scores (synthetic: two backends, one twice as
    spread): each cell's offset is its own scores' conformal quantile, the global one is the pooled one's."""
    from kernelcast.training.xgb import LatencyRegressor, conformal_offset

    op = "gemm"
    columns = learned.matrix_columns(op)
    rng = np.random.default_rng(0)
    x = np.zeros((1000, len(columns)), dtype=np.float32)
    x[:, columns.index("source=kernelcast")] = 1
    x[:500, columns.index("backend=cublas")] = 1
    x[500:, columns.index("backend=triton")] = 1
    scores = np.concatenate([rng.normal(0, 0.1, 500), rng.normal(0, 0.2, 500)])
    got = LatencyRegressor(op)._calibrate(x, scores)
    assert got["by_backend"]["kernelcast/cublas"] == conformal_offset(scores[:500], 0.8)
    assert got["by_backend"]["kernelcast/triton"] == conformal_offset(scores[500:], 0.8)
    assert got["offset"] == conformal_offset(scores, 0.8) == got["by_source"]["kernelcast"]


def test_feature_matrix_one_hot_per_category_group():
    op = "gemm"
    cols = {
        "gpu": np.array(["h200_sxm", "h200_sxm"]),
        "dtype": np.array(["bf16", "fp8_e4m3"]),
        "backend": np.array(["cublas", "mystery"]),
        "layout": np.array(["nt", "nn"]),
        "m": np.array([64, 4096]),
        "n": np.array([128, 4096]),
        "k": np.array([256, 4096]),
        "batch": np.array([1, 1]),
        "out_dtype": np.array(["bf16", "bf16"]),
        "config": np.array([None, None], dtype=object),
    }
    from kernelcast.features.vector import feature_columns

    x = learned.feature_matrix({**cols, **feature_columns(cols, op)}, op)
    columns = learned.matrix_columns(op)
    one = lambda row, name: x[row, columns.index(name)]  # noqa: E731
    assert one(0, "dtype=bf16") == 1 and one(1, "dtype=fp8_e4m3") == 1 and one(0, "dtype=fp8_e4m3") == 0
    backends = [c for c in columns if c.startswith("backend=")]
    assert x[0, [columns.index(c) for c in backends]].sum() == 1
    assert x[1, [columns.index(c) for c in backends]].sum() == 0  # unknown backend: no column set
    assert one(1, "source=kernelcast") == 1  # source defaults from the backend
    assert learned.source_codes(x, op).tolist() == [0, 0]


def test_one_prediction_needs_no_xgboost_import():
    # the shipped numpy forest answers a single description; xgboost is imported only for big batches
    code = (
        "import sys, kernelcast; p = kernelcast.predict_latency({'op': 'gemm', 'gpu': 'H200', 'dtype': 'bf16', "
        "'backend': 'cublas', 'm': 4096, 'n': 4096, 'k': 4096}); print(p.model, 'xgboost' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0].startswith("learned:gemm@") and out[1] == "False"
