"""predict_latency / predict_many: hand-computed analytical answers, batch = single, clear errors."""

import numpy as np
import pandas as pd
import pytest

from kernelcast import predict_latency as _predict_latency
from kernelcast import predict_many
from kernelcast.features.common import MEMORY_EFFICIENCY
from kernelcast.features.ops import attention as attention_op
from kernelcast.features.ops import gemm as gemm_op

GEMM = {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "cublas"}
#: one kernel's fixed time on H200: 4950 cycles at the 1.98 GHz boost clock
KERNEL_FLOOR_H200_US = 2.5


def predict_latency(desc):
    """The analytical answer (hand-computable); learned dispatch is tested in test_learned.py."""
    return _predict_latency(desc, predictor="analytical")


def test_gemm_8192_cubed_is_compute_bound_at_the_bf16_peak():
    p = predict_latency({**GEMM, "m": 8192, "n": 8192, "k": 8192})
    assert p.floor_us == pytest.approx(2 * 8192**3 / 989.4e12 * 1e6, rel=0.01)
    assert p.bound == "compute" and p.model == "analytical" and not p.in_distribution
    # 128×256 tiles: 64·32 = 2048 tiles over 132 SMs = 16 waves at 2048/2112 efficiency
    expected = p.floor_us / (gemm_op.COMPUTE_EFFICIENCY["cublas"] * 2048 / 2112) + KERNEL_FLOOR_H200_US
    assert p.latency_us == pytest.approx(expected)
    assert p.low_us <= p.latency_us <= p.high_us


def test_gemv_is_memory_bound():
    p = predict_latency({**GEMM, "m": 1, "n": 4096, "k": 4096})
    floor = (4096 + 4096 * 4096 + 4096) * 2 / 4.8e12 * 1e6
    assert p.bound == "memory" and p.floor_us == pytest.approx(floor)
    # split-K (2 splits fill the SMs) adds the reduction kernel
    assert p.latency_us == pytest.approx(floor / MEMORY_EFFICIENCY + 2 * KERNEL_FLOOR_H200_US)


def test_tiny_gemm_is_latency_bound():
    p = predict_latency({**GEMM, "m": 16, "n": 16, "k": 16})
    assert p.bound == "latency" and p.latency_us == pytest.approx(KERNEL_FLOOR_H200_US, abs=0.01)
    # the fixed time is 4950 cycles: 3.51 µs at A100's 1.41 GHz boost clock
    a100 = predict_latency({**GEMM, "gpu": "A100", "m": 16, "n": 16, "k": 16})
    assert a100.latency_us == pytest.approx(4950 / 1.41e3, abs=0.01)


def test_attention_prefill_by_hand():
    d = {
        "op": "attention",
        "gpu": "h200_sxm",
        "dtype": "bf16",
        "backend": "flash",
        "batch": 1,
        "heads_q": 32,
        "heads_kv": 8,
        "seq_q": 4096,
        "seq_kv": 4096,
        "head_dim": 128,
        "causal": True,
    }
    p = predict_latency(d)
    flops = 4 * 32 * 128 * 4096 * 4097 / 2
    assert p.floor_us == pytest.approx(flops / 989.4e12 * 1e6)
    units = 32 * 32  # 32 q-tiles × 32 heads = 1024 → 8 waves
    expected = p.floor_us / (attention_op.COMPUTE_EFFICIENCY["flash"] * units / (8 * 132)) + KERNEL_FLOOR_H200_US
    assert p.bound == "compute" and p.latency_us == pytest.approx(expected)


def test_moe_decode_streams_only_active_experts():
    d = {
        "op": "moe",
        "gpu": "H200",
        "dtype": "bf16",
        "backend": "torch",
        "tokens": 1,
        "hidden": 4096,
        "ffn": 14336,
        "experts": 8,
        "top_k": 2,
    }
    p = predict_latency(d)
    weights = 2 * 4096 * 3 * 14336 * 2  # 2 active experts, up+gate+down, bf16
    acts = 2 * 4096 * 2 + 2 * (2 * 14336 + 14336) * 2
    assert p.bound == "memory" and p.floor_us == pytest.approx((weights + acts) / 4.8e12 * 1e6)
    # the per-expert torch loop pays 4 kernels per active expert, plus routing and combine
    assert p.latency_us == pytest.approx(p.floor_us / MEMORY_EFFICIENCY + KERNEL_FLOOR_H200_US * (2 + 4 * 2))


def test_predict_many_equals_predict_latency_for_mixed_ops():
    rows = [{**GEMM, "m": m, "n": 4096, "k": 1024} for m in (1, 77, 4096)] + [
        {
            "op": "attention",
            "gpu": "MI300X",
            "dtype": "fp16",
            "backend": "cudnn",
            "batch": 4,
            "heads_q": 16,
            "heads_kv": 16,
            "seq_q": 1,
            "seq_kv": 8192,
            "head_dim": 64,
            "causal": False,
        },
        {
            "op": "moe",
            "gpu": "B200",
            "dtype": "fp8_e4m3",
            "backend": "torch",
            "tokens": 64,
            "hidden": 7168,
            "ffn": 2048,
            "experts": 256,
            "top_k": 8,
            "distribution": "power_law_1.01",
        },
    ]
    many = predict_many(rows)
    assert list(many.index) == [0, 1, 2, 3, 4]
    for row, (_, got) in zip(rows, many.iterrows()):
        one = _predict_latency(row)  # auto: learned where covered
        assert got["latency_us"] == pytest.approx(one.latency_us)
        assert (got["bound"], got["model"]) == (one.bound, one.model)


def test_predict_many_errors_name_the_row():
    frame = pd.DataFrame([{**GEMM, "m": 8, "n": 8, "k": 8}, {**GEMM, "m": 8, "n": -1, "k": 8}])
    with pytest.raises(ValueError, match=r"row 1: kernel_desc\['n'\] must be an integer in \[1, 16777216\]"):
        predict_many(frame)


def test_every_gpu_gets_an_answer():
    from kernelcast.features.gpu import list_gpus

    out = predict_many([{**GEMM, "gpu": g.name, "m": 512, "n": 512, "k": 512} for g in list_gpus()])
    assert np.isfinite(out["latency_us"].astype(float)).all() and (out["latency_us"] > 0).all()


def test_model_choice_is_checked_and_analytical_is_forced():
    with pytest.raises(ValueError, match="predictor must be one of auto, analytical; got 'magic'"):
        _predict_latency({**GEMM, "m": 8, "n": 8, "k": 8}, predictor="magic")
    forced = predict_many([{**GEMM, "m": 4096, "n": 4096, "k": 4096}], predictor="analytical")
    assert list(forced["model"]) == ["analytical"]


def test_learned_answers_say_where_they_come_from():
    pytest.importorskip("xgboost")
    p = _predict_latency({**GEMM, "m": 4096, "n": 4096, "k": 4096})
    assert p.model.startswith("learned:gemm@") and p.in_distribution
    assert "split-conformal" in p.assumptions and p.low_us <= p.latency_us <= p.high_us
    # an A100 fp32 GEMM: no learned model saw it, the analytical model answers and says so
    q = _predict_latency({**GEMM, "gpu": "A100", "dtype": "fp32", "m": 4096, "n": 4096, "k": 4096})
    assert (q.model, q.in_distribution) == ("analytical", False) and "dense peak" in q.assumptions


def _mixed_rows():
    return [{**GEMM, "m": m, "n": 4096, "k": 1024, "batch": 1} for m in (1, 77, 4096)] + [
        {
            "op": "attention",
            "gpu": "H200",
            "dtype": "bf16",
            "backend": "flash",
            "batch": b,
            "heads_q": 32,
            "heads_kv": 8,
            "seq_q": 1,
            "seq_kv": 4096,
            "head_dim": 128,
            "causal": False,
        }
        for b in (1, 64)
    ]


@pytest.mark.parametrize(
    "index", [[0, 0, 1, 1, 2], ["a", "b", "a", "b", "a"], [4, 3, 2, 1, 0], [0.5, 0.5, 0.5, 0.5, 0.5]]
)
def test_predict_many_answers_row_i_on_row_i_for_any_index(index):
    """Repeated, shuffled and non-integer indexes over mixed ops (a pd.concat without ignore_index)."""
    rows = _mixed_rows()
    many = predict_many(pd.DataFrame(rows, index=index))
    assert list(many.index) == index
    for i, row in enumerate(rows):
        one = _predict_latency(row)
        assert many["latency_us"].iloc[i] == pytest.approx(one.latency_us) and many["model"].iloc[i] == one.model


def test_predict_many_property_shuffled_duplicated_mixed():
    """Property: any permutation with repeats of mixed-op rows, any index, answers each row as predict_latency does."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    rows = _mixed_rows()
    single = [_predict_latency(r).latency_us for r in rows]

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(
        st.lists(st.integers(0, len(rows) - 1), min_size=1, max_size=12),
        st.sampled_from(["repeat", "reverse", "strings"]),
    )
    def check(picks, kind):
        index = {
            "repeat": [0] * len(picks),
            "reverse": list(range(len(picks)))[::-1],
            "strings": [f"r{p}" for p in picks],
        }[kind]
        many = predict_many(pd.DataFrame([rows[p] for p in picks], index=index))
        assert many["latency_us"].tolist() == pytest.approx([single[p] for p in picks])

    check()


@pytest.mark.parametrize("op", ["gemm", "attention", "moe", "collective", "elementwise", "reduction", "copy"])
def test_one_row_fast_paths_give_the_batch_paths_values(op):
    """The one-row paths (feature_matrix of one-value arrays, coverage and source offsets of one row) give what the
    many-row paths give for the same row, bit for bit."""
    from kernelcast.features.desc import op_fields
    from kernelcast.features.vector import build_features, feature_columns
    from kernelcast.predictors.learned import feature_matrix, load_model, row_offsets
    from kernelcast.training.data import load_rows

    model = load_model(op)
    rows = load_rows(op, sources=("kernelcast",)).sample(20, random_state=3)
    rows = rows[[c for c in op_fields(op) if c in rows]]
    many = feature_matrix(build_features(rows, op), op)
    covers = model.covers(op, rows)
    offsets = row_offsets(many, op, model.manifest["conformal"])
    for i in range(len(rows)):
        cols = {c: rows[c].to_numpy()[i : i + 1] for c in rows}
        one = feature_matrix({**cols, **feature_columns(cols, op)}, op)
        np.testing.assert_array_equal(one, many[i : i + 1])
        assert model.covers(op, cols).tolist() == [covers[i]]
        assert row_offsets(one, op, model.manifest["conformal"]).tolist() == [offsets[i]]
    scalar = {**cols, **{k: v[0] for k, v in feature_columns(cols, op).items()}}  # scalars: the general path
    np.testing.assert_array_equal(feature_matrix(scalar, op), many[-1:])


def test_predict_latency_equals_predict_many_bit_for_bit_on_learned_gemm():
    descs = [
        {**GEMM, "m": 4096, "n": 4096, "k": 4096},
        {**GEMM, "m": 1, "n": 4096, "k": 14336},
        {**GEMM, "m": 77, "n": 1000, "k": 333, "layout": "nn", "batch": 3},
        {**GEMM, "gpu": "A100", "m": 512, "n": 7168, "k": 2048},
        {
            **GEMM,
            "backend": "triton",
            "m": 640,
            "n": 2048,
            "k": 4096,
            "config": {
                "block_m": 128,
                "block_n": 128,
                "block_k": 64,
                "num_warps": 8,
                "num_stages": 3,
                "group_m": 8,
                "split_k": 1,
            },
        },
    ]
    many = predict_many(descs)
    for i, d in enumerate(descs):
        p = _predict_latency(d)
        for key in ("latency_us", "low_us", "high_us", "floor_us", "bound", "model", "in_distribution"):
            assert getattr(p, key) == many[key].iloc[i], (i, key)


def test_roofline_bound_names_each_rows_limit():
    from kernelcast.features.common import roofline_latency

    f = {
        "compute_floor_us": np.array([100.0, 1.0, 0.01, np.nan]),
        "memory_floor_us": np.array([1.0, 100.0, 0.01, 1.0]),
        "wave_efficiency": np.ones(4),
        "gpu_boost_clock_hz": np.full(4, 1.98e9),
    }
    _, bound = roofline_latency(f, np.full(4, 0.8), 1.0)
    assert bound.dtype == object and bound.tolist() == ["compute", "memory", "latency", "compute"]
