"""Kernel descriptions: valid round trips, hand-picked errors, and a fuzz of malformed input."""

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelcast.features.desc import from_json, from_row, op_fields, parse_desc
from kernelcast.features.ops import op_names
from kernelcast.features.validate import validate_frame

TRITON_GEMM = {
    "block_m": 128,
    "block_n": 128,
    "block_k": 64,
    "group_m": 8,
    "num_warps": 8,
    "num_stages": 3,
    "split_k": 1,
}
VALID = {
    "gemm": {
        "op": "gemm",
        "gpu": "H200",
        "dtype": "bf16",
        "backend": "triton",
        "m": 4096,
        "n": 4096,
        "k": 4096,
        "config": TRITON_GEMM,
    },
    "attention": {
        "op": "attention",
        "gpu": "NVIDIA H200",
        "dtype": "fp16",
        "backend": "flash",
        "batch": 2,
        "heads_q": 32,
        "heads_kv": 8,
        "seq_q": 1,
        "seq_kv": 4096,
        "head_dim": 128,
        "causal": True,
    },
    "moe": {
        "op": "moe",
        "gpu": "h200_sxm",
        "dtype": "bf16",
        "backend": "torch",
        "tokens": 4,
        "hidden": 64,
        "ffn": 64,
        "experts": 4,
        "top_k": 2,
        "distribution": [3, 0, 4, 1],
    },
    "collective": {
        "op": "collective",
        "gpu": "H100",
        "dtype": "bf16",
        "backend": "nccl",
        "collective": "all_gather",
        "bytes": 1 << 20,
        "ranks": 8,
    },
}


@pytest.mark.parametrize("op", VALID)
def test_round_trips(op):
    desc = parse_desc(VALID[op])
    assert parse_desc(desc.to_dict()) == desc
    assert from_json(desc.to_json()) == desc
    assert from_row(desc.to_row()) == desc
    assert json.loads(desc.to_json())["op"] == op


def test_defaults_and_aliases():
    d = parse_desc(VALID["collective"])
    assert (d.gpu, d.ranks_per_node, d.in_place) == ("h100_sxm", 8, False)
    g = parse_desc({**VALID["gemm"], "backend": "cublas", "config": None, "dtype": "fp32"})
    assert (g.batch, g.layout, g.out_dtype) == (1, "nt", "fp32")


@pytest.mark.parametrize(
    "op,change,match",
    [
        ("gemm", {"m": 0}, r"kernel_desc\['m'\] must be an integer in \[1, 16777216\]; got 0"),
        ("gemm", {"k": 4096.5}, r"kernel_desc\['k'\] must be an integer"),
        ("gemm", {"n": True}, r"kernel_desc\['n'\] must be an integer"),
        ("gemm", {"dtype": "fp6"}, r"kernel_desc\['dtype'\] must be one of fp32, tf32, bf16, .*; got 'fp6'"),
        ("gemm", {"config": {**TRITON_GEMM, "block_m": 96}}, r"config.block_m'\] must be a power of two"),
        ("gemm", {"m": 1 << 24, "k": 1 << 24}, r"at most 2\*\*38 elements"),
        ("gemm", {"gpu": "H900"}, r"kernel_desc\['gpu'\] must be one of a100_sxm, .*h200_sxm.*; got 'H900'"),
        ("gemm", {"heads_q": 4}, r"kernel_desc\['heads_q'\] must be absent: op 'gemm' takes"),
        ("attention", {"heads_q": 12}, r"kernel_desc\['heads_q'\] must be a multiple of heads_kv=8; got 12"),
        ("attention", {"seq_q": 8192}, r"kernel_desc\['seq_q'\] must be at most seq_kv=4096 when causal"),
        ("attention", {"causal": "yes"}, r"kernel_desc\['causal'\] must be true or false; got 'yes'"),
        ("moe", {"top_k": 5}, r"kernel_desc\['top_k'\] must be at most experts=4; got 5"),
        ("moe", {"distribution": [1, 1, 1, 1]}, r"counts summing to tokens\*top_k=8"),
        ("moe", {"distribution": "zipf"}, r"kernel_desc\['distribution'\] must be 'balanced', 'power_law_<alpha>'"),
        ("collective", {"ranks_per_node": 3}, r"kernel_desc\['ranks_per_node'\] must be a divisor of ranks=8; got 3"),
        ("collective", {"bytes": 1001}, r"kernel_desc\['bytes'\] must be a multiple of the bf16 element size"),
        ("collective", {"ranks": 1, "ranks_per_node": 1}, r"kernel_desc\['ranks'\] must be an integer >= 2"),
    ],
)
def test_errors_name_field_value_and_allowed(op, change, match):
    bad = {**VALID[op], **change}
    with pytest.raises(ValueError, match=match):
        parse_desc(bad)
    with pytest.raises(ValueError, match="row 0: .*" + match):
        validate_frame(pd.DataFrame([bad]))


def test_not_a_mapping_and_bad_json():
    with pytest.raises(ValueError, match="kernel_desc must be a mapping"):
        parse_desc([1, 2])
    with pytest.raises(ValueError, match="not valid JSON"):
        from_json("{op: gemm")


JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.integers(-5, 50), max_size=6),
    st.dictionaries(st.text(max_size=8), st.integers(-3, 300), max_size=4),
)
ALL_FIELDS = {f for op in op_names() for f in op_fields(op)}
FIELD_NAMES = sorted(
    {k for v in VALID.values() for k in v}
    | {"layout", "out_dtype", "batch", "gated", "in_place", "ranks_per_node", "bogus"}
)


@st.composite
def malformed(draw):
    d = dict(VALID[draw(st.sampled_from(sorted(VALID)))])
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["set", "drop", "config"]))
        key = draw(st.sampled_from(FIELD_NAMES))
        if action == "drop":
            d.pop(key, None)
        elif action == "config":
            d["config"] = draw(st.dictionaries(st.sampled_from(sorted(TRITON_GEMM) + ["x"]), JUNK, max_size=8))
        else:
            d[key] = draw(JUNK)
    return d


def _outcome(call):
    """What an entry point answered: ("ok", latency) or ("error", message without a frame's row prefix)."""
    try:
        return "ok", round(float(call()), 6)
    except ValueError as exc:
        text = str(exc)
        assert "kernel_desc" in text or "predictor" in text, text
        return "error", text.removeprefix("row 0: ")


def _frame(d):
    """One row as a frame. An empty cell (None/NaN) in another op's column is how a frame of mixed ops says
    "not this row's field", so such keys are left out of the frame (the scalar side rejects them as present)."""
    op = d.get("op") if d.get("op") in op_names() else None
    mine = set(op_fields(op)) if op else ALL_FIELDS
    empty = lambda v: v is None or (isinstance(v, float) and v != v)
    kept = {k: v for k, v in d.items() if not (k in ALL_FIELDS and k not in mine and empty(v))}
    return pd.DataFrame({k: pd.Series([v], dtype=object) for k, v in kept.items()})


@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(malformed())
def test_fuzz_every_entry_point_agrees(d):
    """≥10,000 random malformed descriptions through the scalar parser, ``predict_latency``, ``predict_many``
    on a list of mappings and on a frame, and a description object rebuilt with ``dataclasses.replace``: the
    same answer or the same error (naming kernel_desc) everywhere."""
    from kernelcast import predict_latency, predict_many

    frame = _frame(d)
    outcomes = {
        "parse": _outcome(lambda: 1.0 if parse_desc(d) else 0.0),
        "predict_latency": _outcome(lambda: predict_latency(d, predictor="analytical").latency_us),
        "predict_many(list)": _outcome(lambda: predict_many([d], predictor="analytical")["latency_us"].iloc[0]),
    }
    if len(frame.columns) == len(d):
        outcomes["predict_many(frame)"] = _outcome(
            lambda: predict_many(frame, predictor="analytical")["latency_us"].iloc[0]
        )
    kinds = {k: v[0] for k, v in outcomes.items()}
    assert len(set(kinds.values())) == 1, outcomes
    if kinds["parse"] == "error":
        assert len({v[1] for v in outcomes.values()}) == 1, outcomes
        return
    assert len({v[1] for k, v in outcomes.items() if k != "parse"}) == 1, outcomes
    desc = parse_desc(d)
    assert parse_desc(desc.to_dict()) == desc and from_row(desc.to_row()) == desc


@pytest.mark.parametrize("op", VALID)
def test_replace_runs_validation(op):
    import dataclasses

    desc = parse_desc(VALID[op])
    field = next(
        f for f in op_fields(op) if isinstance(getattr(desc, f, None), int) and not isinstance(getattr(desc, f), bool)
    )
    with pytest.raises(ValueError, match=rf"kernel_desc\['{field}'\] must be"):
        dataclasses.replace(desc, **{field: 0 if field != "bytes" else -5})


@pytest.mark.parametrize("value", [None, float("nan"), float("inf")])
def test_none_nan_inf_are_errors_not_defaults(value):
    with pytest.raises(ValueError, match=r"kernel_desc\['batch'\] must be an integer"):
        parse_desc({**VALID["gemm"], "batch": value})
    with pytest.raises(ValueError, match=r"row 0: kernel_desc\['batch'\] must be an integer"):
        validate_frame(pd.DataFrame([{**VALID["gemm"], "batch": value}]))


def test_unknown_fields_name_the_closest():
    with pytest.raises(ValueError, match=r"kernel_desc\['bacth'\] must be absent: .*did you mean 'batch'"):
        parse_desc({**VALID["gemm"], "bacth": 8})
    with pytest.raises(ValueError, match=r"kernel_desc\['bacth'\] must be absent: .*did you mean 'batch'"):
        validate_frame(pd.DataFrame([{**VALID["gemm"], "bacth": 8}]))
    with pytest.raises(ValueError, match=r"keys must be field names"):
        parse_desc({**VALID["gemm"], 3: 4})


@pytest.mark.parametrize(
    "alias,canonical",
    [
        ("bfloat16", "bf16"),
        ("BF16", "bf16"),
        ("torch.float16", "fp16"),
        ("float16", "fp16"),
        ("half", "fp16"),
        ("float32", "fp32"),
        ("fp8", "fp8_e4m3"),
        ("torch.float8_e4m3fn", "fp8_e4m3"),
    ],
)
def test_dtype_aliases(alias, canonical):
    gemm = {**VALID["gemm"], "backend": "cublas", "config": None, "dtype": alias}
    assert parse_desc(gemm).dtype == canonical
    assert parse_desc(
        {**gemm, "dtype": "bf16", "out_dtype": alias if canonical != "fp8_e4m3" else "bf16"}
    ).out_dtype == (canonical if canonical != "fp8_e4m3" else "bf16")


def test_dtype_objects_of_torch_and_numpy():
    torch = pytest.importorskip("torch")
    import numpy as np

    gemm = {**VALID["gemm"], "backend": "cublas", "config": None}
    assert parse_desc({**gemm, "dtype": torch.bfloat16}).dtype == "bf16"
    assert parse_desc({**gemm, "dtype": np.dtype("float16")}).dtype == "fp16"


def test_odd_values_get_clear_errors():
    import numpy as np

    assert parse_desc({**VALID["attention"], "causal": np.bool_(False)}).causal is False
    with pytest.raises(ValueError, match=r"kernel_desc\['m'\] must be an integer .*chars\)$"):
        parse_desc({**VALID["gemm"], "m": 2**1100})
    with pytest.raises(ValueError) as info:
        parse_desc({**VALID["gemm"], "m": "x" * 100_000})
    assert len(str(info.value)) < 300


def test_dtype_needs_units_on_the_gpu():
    bad = {**VALID["gemm"], "gpu": "A100", "dtype": "fp8_e4m3"}
    match = r"kernel_desc\['dtype'\] must be one of fp32, tf32, bf16, fp16 on a100_sxm \(it has no fp8 units\)"
    with pytest.raises(ValueError, match=match):
        parse_desc(bad)
    with pytest.raises(ValueError, match="row 0: " + match):
        validate_frame(pd.DataFrame([bad]))
