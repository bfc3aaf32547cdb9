"""One contract for every predictor (in the spirit of scikit-learn's check_estimator): each check runs on
the analytical predictor and on every shipped learned model, over valid descriptions of every op."""

import numpy as np
import pytest

from kernelcast.features.ops import op_names
from kernelcast.features.validate import columns_from_records, validate_frame
from kernelcast.features.vector import feature_columns
from kernelcast.predictors.analytical import AnalyticalPredictor
from kernelcast.predictors.base import ANSWER_KEYS, Predictor

#: a few valid descriptions per op, inside our H200 data's ranges (so learned models cover most of them)
ROWS = {
    "gemm": [
        {"m": m, "n": n, "k": k, "dtype": d, "backend": "cublas"}
        for m, n, k, d in (
            (1, 4096, 4096, "bf16"),
            (4096, 4096, 4096, "bf16"),
            (127, 1000, 333, "fp16"),
            (8192, 1024, 8192, "fp8_e4m3"),
            (512, 512, 512, "fp32"),
        )
    ],
    "attention": [
        {
            "batch": b,
            "heads_q": 32,
            "heads_kv": kv,
            "seq_q": q,
            "seq_kv": s,
            "head_dim": 128,
            "causal": c,
            "dtype": "bf16",
            "backend": be,
        }
        for b, kv, q, s, c, be in (
            (1, 8, 1, 4096, False, "flash"),
            (2, 32, 1024, 1024, True, "cudnn"),
            (8, 8, 256, 256, True, "flash"),
        )
    ],
    "moe": [
        {
            "tokens": t,
            "hidden": 4096,
            "ffn": 1408,
            "experts": 64,
            "top_k": 6,
            "dtype": "bf16",
            "backend": "triton",
            "config": {"block_m": 64, "block_n": 64, "block_k": 32, "group_m": 8, "num_warps": 4, "num_stages": 3},
        }
        for t in (1, 64, 2048)
    ],
    "collective": [
        {"collective": c, "bytes": b, "ranks": 2, "dtype": "bf16", "backend": "nccl"}
        for c, b in (("all_reduce", 1 << 20), ("all_gather", 1 << 26), ("reduce_scatter", 1 << 30))
    ],
}


def _predictors():
    out = [pytest.param(AnalyticalPredictor(), op, id=f"analytical-{op}") for op in op_names() if op in ROWS]
    try:
        from kernelcast.predictors.learned import load_model
    except ImportError:
        return out
    for op in ROWS:
        model = load_model(op)
        if model is not None:
            out.append(pytest.param(model, op, id=f"learned-{op}"))
    return out


def _columns(op, gpu="H200"):
    frame = columns_from_records([{"op": op, "gpu": gpu, **r} for r in ROWS[op]])
    by_op, _ = validate_frame(frame)
    cols = by_op[op][1]
    return cols, feature_columns(cols, op)


@pytest.mark.parametrize("predictor,op", _predictors())
def test_implements_the_protocol(predictor, op):
    assert isinstance(predictor, Predictor)
    assert isinstance(predictor.name, str) and predictor.name
    text = predictor.assumptions(op)
    assert isinstance(text, str) and len(text) > 20


@pytest.mark.parametrize("predictor,op", _predictors())
def test_covers_is_one_bool_per_row(predictor, op):
    cols, _ = _columns(op)
    covered = predictor.covers(op, cols)
    assert covered.dtype == bool and covered.shape == (len(ROWS[op]),)


@pytest.mark.parametrize("predictor,op", _predictors())
def test_answers_are_ordered_finite_and_above_the_floor(predictor, op):
    cols, feats = _columns(op)
    mine = predictor.covers(op, cols)
    assert mine.any(), f"{predictor.name} covers none of the {op} contract rows"
    sub = {k: np.asarray(v)[mine] for k, v in cols.items()}
    out = predictor.predict_columns(op, sub, {k: np.asarray(v)[mine] for k, v in feats.items()})
    assert set(ANSWER_KEYS) <= set(out)
    lat, low, high = (np.asarray(out[k], dtype=np.float64) for k in ("latency_us", "low_us", "high_us"))
    assert np.isfinite(lat).all() and (lat > 0).all()
    assert (low <= lat).all() and (lat <= high).all() and (low < high).all()  # brackets on both sides
    assert (lat >= 0.5 * np.asarray(feats["floor_us"])[mine]).all()
    assert np.asarray(out["in_distribution"]).dtype == bool


@pytest.mark.parametrize("predictor,op", _predictors())
def test_a_row_gets_the_same_answer_alone_or_in_a_batch(predictor, op):
    cols, feats = _columns(op)
    mine = np.flatnonzero(predictor.covers(op, cols))
    batch = predictor.predict_columns(
        op, {k: v[mine] for k, v in cols.items()}, {k: np.asarray(v)[mine] for k, v in feats.items()}
    )
    for j, i in enumerate(mine):
        alone = predictor.predict_columns(
            op, {k: v[i : i + 1] for k, v in cols.items()}, {k: np.asarray(v)[i : i + 1] for k, v in feats.items()}
        )
        assert alone["latency_us"][0] == pytest.approx(batch["latency_us"][j], rel=1e-5)


@pytest.mark.parametrize("predictor,op", _predictors())
def test_more_work_is_never_much_faster(predictor, op):
    """Doubling the largest size of the biggest row must not cut the predicted time below 80%."""
    size = {"gemm": "m", "attention": "batch", "moe": "tokens", "collective": "bytes"}[op]
    big = dict(max(ROWS[op], key=lambda r: r[size]))
    frame = columns_from_records(
        [{"op": op, "gpu": "H200", **big}, {"op": op, "gpu": "H200", **big, size: 2 * big[size]}]
    )
    cols = validate_frame(frame)[0][op][1]
    if not predictor.covers(op, cols).all():
        pytest.skip(f"{predictor.name} does not cover the doubled {op} row")
    lat = predictor.predict_columns(op, cols, feature_columns(cols, op))["latency_us"]
    assert lat[1] >= 0.8 * lat[0]
