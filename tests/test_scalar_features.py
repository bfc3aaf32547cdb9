"""One description's features from its Python numbers (features.num.SCALARS, predict_latency's path) are the numbers
the columns give (features.num.ARRAYS, training's and predict_many's path): the formulas exist once."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from kernelcast import parse_desc, predict_latency, predict_many
from kernelcast.features import num
from kernelcast.features.ops import get_op, op_names
from kernelcast.features.vector import feature_columns
from kernelcast.predictors import dispatch
from kernelcast.predictors.dispatch import ACHIEVED_COLUMNS

SPECIAL = (-math.inf, -3.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.5, 7.0, 1e300, math.inf, math.nan)


def _same(a: float, b: float) -> bool:
    return (a != a and b != b) or a == b or abs(a - b) <= 1e-12 * abs(a)


@pytest.mark.parametrize("name", ["minimum", "maximum", "fmax"])
def test_scalar_binary_math_gives_numpy_answers_on_nan_inf_and_zero(name):
    ours, theirs = getattr(num.SCALARS, name), getattr(np, name)
    for a, b in itertools.product(SPECIAL, SPECIAL):
        want = float(theirs(np.float64(a), np.float64(b)))
        assert _same(want, float(ours(a, b))), (name, a, b)


@pytest.mark.parametrize("name", ["ceil", "floor", "log2", "isnan"])
def test_scalar_unary_math_gives_numpy_answers_on_nan_inf_and_zero(name):
    ours, theirs = getattr(num.SCALARS, name), getattr(np, name)
    with np.errstate(all="ignore"):
        for a in SPECIAL:
            assert _same(float(theirs(np.float64(a))), float(ours(a))), (name, a)


def test_the_namespace_follows_the_value():
    assert num.of(3) is num.of(2.5) is num.of(True) is num.of(np.float64(1.0)) is num.SCALARS
    assert num.of(np.ones(1)) is num.of(np.int64(3)) is num.ARRAYS


def random_gemms(count: int, seed: int = 0) -> list[dict]:
    """Valid GEMM descriptions over GPUs (AMD too), dtypes, backends, layouts, batches and Triton configs (refused
    ones skipped)."""
    rng = random.Random(seed)
    gpus = ("H200", "H100", "A100", "B200", "L40S", "RTX4090", "MI300X", "GB200")
    out = []
    while len(out) < count:
        d = {
            "op": "gemm",
            "gpu": rng.choice(gpus),
            "dtype": rng.choice(("bf16", "fp16", "fp32", "tf32", "fp8_e4m3")),
            "backend": rng.choice(("cublas", "cublas", "triton", "grouped", "trtllm")),
            "layout": rng.choice(("nt", "nn")),
            "batch": rng.choice((1, 1, 2, 7, 64)),
            **{c: int(math.exp(rng.uniform(0, 11))) for c in "mnk"},
        }
        if d["backend"] == "triton" and rng.random() < 0.9:
            d["config"] = {
                "block_m": rng.choice((16, 32, 64, 128, 256)),
                "block_n": rng.choice((16, 32, 64, 128, 256)),
                "block_k": rng.choice((16, 32, 64, 128)),
                "group_m": 8,
                "num_warps": rng.choice((2, 4, 8)),
                "num_stages": rng.choice((2, 3, 4, 5)),
                "split_k": rng.choice((1, 1, 2, 4)),
            }
        try:
            out.append(parse_desc(d).to_row())
        except ValueError:  # a dtype the GPU lacks, a config that does not fit: not this test's business
            continue
    return out


def random_attentions(count: int, seed: int = 0) -> list[dict]:
    """Valid attention descriptions over GPUs (AMD too), dtypes, backends (the outside ones too), GQA, causal or not,
    masks, decode and prefill, head_dims on and off the kernels' sizes, and Triton configs (refused ones skipped)."""
    rng = random.Random(seed)
    gpus = ("H200", "H100", "A100", "B200", "L40S", "RTX4090", "MI300X", "GB200")
    out = []
    while len(out) < count:
        heads_kv = rng.choice((1, 2, 4, 8, 32))
        seq_kv = int(math.exp(rng.uniform(0, 13)))
        backend = rng.choice(("flash", "flash", "cudnn", "cudnn", "efficient", "triton", "triton", "trtllm", "vllm"))
        causal = rng.random() < 0.5
        d = {
            "op": "attention",
            "gpu": rng.choice(gpus),
            "dtype": rng.choice(("bf16", "bf16", "fp16", "fp8_e4m3")),
            "backend": backend,
            "batch": rng.choice((1, 1, 2, 7, 16, 64)),
            "heads_kv": heads_kv,
            "heads_q": heads_kv * rng.choice((1, 1, 4, 8)),
            "seq_q": 1 if rng.random() < 0.4 else rng.randint(1, seq_kv),
            "seq_kv": seq_kv,
            "head_dim": rng.choice((64, 64, 72, 96, 128, 128, 160, 192, 256, 320, 512)),
            "causal": causal,
            "mask": not causal and backend in ("cudnn", "efficient") and rng.random() < 0.4,
        }
        if backend == "triton" and rng.random() < 0.9:
            d["config"] = {
                "block_m": rng.choice((16, 32, 64, 128)),
                "block_n": rng.choice((16, 32, 64, 128)),
                "num_warps": rng.choice((2, 4, 8)),
                "num_stages": rng.choice((1, 2, 3, 4)),
            }
        try:
            out.append(parse_desc(d).to_row())
        except ValueError:  # a dtype the GPU lacks, a config that does not fit: not this test's business
            continue
    return out


RANDOM_ROWS = {"gemm": random_gemms, "attention": random_attentions}


@pytest.mark.parametrize("op", RANDOM_ROWS)
def test_one_descriptions_features_are_the_columns_features(op):
    rows = RANDOM_ROWS[op](1500)
    for row in rows:
        columns = feature_columns({k: np.asarray([v], dtype=object if isinstance(v, (str, type(None))) else None)
                                   for k, v in row.items()}, op)  # fmt: skip
        scalars = feature_columns(row, op)
        assert set(scalars) == set(columns)
        for name, value in columns.items():
            assert isinstance(scalars[name], (int, float)), (name, type(scalars[name]))
            assert _same(float(value[0]), float(scalars[name])), (name, row)


ANSWER = ("latency_us", "low_us", "high_us", "floor_us", "bound", "model", "in_distribution", *ACHIEVED_COLUMNS)


def _exact(a, b) -> bool:
    return a == b or (a != a and b != b)  # NaN (an op without FLOPs) equals NaN


@pytest.mark.parametrize("op, least", [("gemm", 40), ("attention", 50)])
def test_predict_latency_on_the_fast_path_answers_as_predict_many_and_the_column_path(monkeypatch, op, least):
    """One description's answer in Python numbers (``dispatch._learned_row``) is the column path's answer for it, every
    field and the words (source, assumptions) alike, and ``predict_many``'s, bit for bit."""
    rows = RANDOM_ROWS[op](300, seed=1)
    chain = dispatch.predictors_for(op, "auto")
    fast_rows = sum(dispatch._learned_row(chain, op, parse_desc(r).to_row()) is not None for r in rows)
    assert fast_rows >= least  # the rest (GPUs or sizes no learned model covers, no config) the columns
    many = predict_many(rows)
    fast = [predict_latency(r) for r in rows]
    monkeypatch.setattr(dispatch, "_learned_row", lambda *args: None)
    for i, row in enumerate(rows):
        general = predict_latency(row)
        assert repr(fast[i].to_dict()) == repr(general.to_dict()), row
        for field in ANSWER:
            assert _exact(getattr(fast[i], field), many[field].iloc[i]), (field, row)


@pytest.mark.parametrize("op", [op for op in op_names()])
def test_predict_latency_answers_as_predict_many_on_every_family(op):
    """Every family's example on GPUs its learned model saw, one it never saw and one the analytical model answers."""
    rows = [{"op": op, "gpu": gpu, **get_op(op).example} for gpu in ("H200", "H100", "B200", "MI300X")]
    many = predict_many(rows)
    for i, row in enumerate(rows):
        one = predict_latency(row)
        for field in ANSWER:
            assert _exact(getattr(one, field), many[field].iloc[i]), (field, row)


def test_only_the_tested_ops_claim_scalar_features():
    """An op that sets the flag must pass the equality tests above; extend ``RANDOM_ROWS`` before flagging another."""
    assert [op for op in op_names() if get_op(op).scalar_features] == list(RANDOM_ROWS)
