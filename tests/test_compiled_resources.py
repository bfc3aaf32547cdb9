"""The compiled-resources tables the Triton attention and GEMM features read: each covers its whole table space, is
the compile facts Triton 3.6 gave (real files under datasets/compile_facts/), is read for sm_90 GPUs only, and the
features take registers and spills from it where it holds the key."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kernelcast.collect.compile_facts import class_id, key_columns, main, space_rows, with_config
from kernelcast.features.compiled import KEYS, SPACE, VALUES, compiled_resources
from kernelcast.features.desc import parse_desc
from kernelcast.features.ops.attention import triton_attention_registers
from kernelcast.features.vector import build_features

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "features" / "compiled" / "triton_attention_sm90.csv"
FACTS = REPO / "datasets" / "compile_facts"
KEY = list(KEYS["triton_attention"])


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return pd.read_csv(TABLE)


def test_the_table_holds_every_key_of_the_space_once(table):
    assert len(table) == math.prod(len(v) for v in SPACE["triton_attention"].values()) == 2304
    assert not table.duplicated(KEY).any()
    for name, values in SPACE["triton_attention"].items():
        got = set(table[name].astype(int) if name == "causal" else table[name])
        assert got == {int(v) if name == "causal" else v for v in values}, name
    assert table["registers"].between(1, 255).all() and (table["stack_bytes"] >= 0).all()
    assert set(table["triton"]) == {"3.6.0"}


def test_the_table_is_the_compile_facts_of_the_space_and_of_every_measured_shape(table):
    """The serving table is the space's facts file; where the facts compiled from measured rows (other shapes) hold
    a key, registers and stack agree: the shape does not change what Triton allocates."""
    space = pd.read_parquet(FACTS / "triton_attention_space_h200.parquet").assign(causal=lambda f: f.causal.astype(int))
    measured = pd.read_parquet(FACTS / "triton_attention_h200.parquet").assign(causal=lambda f: f.causal.astype(int))
    both = table.merge(space, on=KEY, suffixes=("", "_space"))
    assert len(both) == len(table)
    for v in VALUES:
        assert (both[v] == both[f"{v}_space"]).all(), v
    seen = measured.drop_duplicates(KEY).merge(table, on=KEY, suffixes=("_measured", ""))
    assert len(seen) == measured.drop_duplicates(KEY).shape[0] > 1000
    for v in VALUES:
        assert (seen[v] == seen[f"{v}_measured"]).all(), v


def test_resources_are_read_for_sm90_and_nan_elsewhere(table):
    spill = table[table.stack_bytes > 1000].iloc[0]
    args = [spill[k] for k in KEY]
    for gpu in ("H200", "H100"):
        reg, stack = compiled_resources("triton_attention", [gpu], *[[a] for a in args])
        assert (reg[0], stack[0]) == (spill.registers, spill.stack_bytes)
    reg, stack = compiled_resources("triton_attention", ["A100"], *[[a] for a in args])
    assert np.isnan(reg[0]) and np.isnan(stack[0])
    outside = [*args[:3], 256, *args[4:]]  # block_m 256: outside the space
    assert np.isnan(compiled_resources("triton_attention", ["H200"], *[[a] for a in outside])[0][0])
    # many rows: each distinct key looked up once, answers in row order
    reg, _ = compiled_resources("triton_attention", ["H200", "A100", "H200"], *[[a, a, a] for a in args])
    assert reg[0] == reg[2] == spill.registers and np.isnan(reg[1])


def _row(gpu: str, key: pd.Series) -> pd.DataFrame:
    cfg = {k: int(key[k]) for k in ("block_m", "block_n", "num_warps", "num_stages")}
    desc = parse_desc(
        dict(op="attention", gpu=gpu, dtype=key["dtype"], backend="triton", batch=4, heads_q=16, heads_kv=16,
             seq_q=4096, seq_kv=4096, head_dim=int(key["head_dim"]), causal=bool(key["causal"]), config=cfg)
    )  # fmt: skip
    return pd.DataFrame([desc.to_row()])


def test_the_attention_features_take_spills_from_the_table_and_estimate_off_it(table):
    key = table[(table.stack_bytes > 1000) & (table.block_m * table.block_n <= 64 * 64)].iloc[0]
    f = build_features(_row("H200", key), "attention").iloc[0]
    assert f["spilled_registers"] == key["stack_bytes"] / 4
    assert f["registers_per_thread"] == key["registers"] + key["stack_bytes"] / 4
    estimate = triton_attention_registers(
        *(np.float64(key[k]) for k in ("block_m", "block_n", "head_dim", "num_warps"))
    )
    f = build_features(_row("A100", key), "attention").iloc[0]  # sm_80: no table, the estimate
    assert f["registers_per_thread"] == pytest.approx(estimate)
    assert f["spilled_registers"] == pytest.approx(max(estimate - 255, 0.0))


def test_the_space_is_one_description_per_key_with_distinct_compile_classes():
    rows = space_rows("triton_attention", "H200")
    assert len(rows) == 2304
    assert len({class_id(with_config(r)) for r in rows}) == 2304
    with pytest.raises(ValueError, match="--space must be one of triton_attention, triton_gemm; got 'gemm'"):
        space_rows("gemm", "H200")


def test_the_cli_takes_datasets_or_a_space(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--space", "triton_attention", "--datasets", str(tmp_path), "--out", str(tmp_path / "f.jsonl")])
    assert "give --datasets or --space" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--space", "triton_attention", "--serving", str(tmp_path), "--out", str(tmp_path / "f.jsonl")])
    assert "--serving needs --space and --table" in capsys.readouterr().err


def test_the_gemm_space_is_every_fitting_key_once_and_its_facts_agree_with_every_measured_shape():
    """The Triton GEMM key space (what compile_facts --space triton_gemm compiles: 21,948 keys that fit shared
    memory, each its own compile class) and its facts (datasets/compile_facts/triton_gemm_space_h200.parquet, all
    of them compiled with Triton 3.6): where the facts compiled from measured rows (other shapes, bf16 and fp16, any
    group_m and split_k) hold a key, registers agree and the stack frame within 1% — dtype, group_m, split_k past 1
    and the shape beyond n and k's alignment change nothing Triton allocates that matters, so they are not keys."""
    rows = space_rows("triton_gemm", "H200")
    assert len(rows) == 21948 and len({class_id(with_config(r)) for r in rows}) == len(rows)
    assert all(r["config"]["block_m"] * r["config"]["block_n"] / r["config"]["num_warps"] <= 8192 for r in rows)
    key = list(KEYS["triton_gemm"])

    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        return key_columns(frame[frame.batch <= 1], "triton_gemm")

    space = keyed(pd.read_parquet(FACTS / "triton_gemm_space_h200.parquet"))
    assert not space.duplicated(key).any() and len(space) == 21948 and set(space["triton"]) == {"3.6.0"}
    measured = keyed(pd.read_parquet(FACTS / "triton_gemm_h200.parquet"))
    seen = measured.merge(space, on=key, suffixes=("_measured", ""))
    assert len(seen) > 2000
    assert (seen["registers"] == seen["registers_measured"]).all()
    # (2 of 2,173 classes, a 32x256x128 tile with n ragged under 32, spill 40 bytes more than at n = 4,095)
    stack = (seen["stack_bytes"] - seen["stack_bytes_measured"]).abs()
    assert (stack == 0).mean() > 0.99 and (stack <= 0.01 * seen["stack_bytes"]).all()


def test_classes_a_facts_table_holds_are_not_compiled_again(tmp_path):
    """``--skip-table``: a space compiled in parts (the dev machine, then a GPU host) compiles each class once."""
    from kernelcast.collect.compile_facts import collect_facts

    descs = [with_config(r) for r in space_rows("triton_gemm", "H200")[:3]]
    out = tmp_path / "facts.jsonl"
    summary = collect_facts(descs, "H200", out, workers=1, done=[class_id(d) for d in descs])
    assert (summary["classes"], summary["already"], summary["failed"]) == (0, 3, 0)
    assert not out.read_text()


def test_the_gemm_serving_table_is_the_space_facts_file():
    table = pd.read_csv(REPO / "features" / "compiled" / "triton_gemm_sm90.csv")
    key = list(KEYS["triton_gemm"])
    space = key_columns(pd.read_parquet(FACTS / "triton_gemm_space_h200.parquet"), "triton_gemm")
    space = space.assign(**{k: space[k].astype(int) for k in ("split", "n16", "k16")})
    both = table.merge(space, on=key, suffixes=("", "_space"))
    assert len(table) == len(both) == 21948 and not table.duplicated(key).any()
    for v in VALUES:
        assert (both[v] == both[f"{v}_space"]).all(), v


def _gemm(gpu="H200", n=1000, k=1000, batch=1, backend="triton", **config) -> dict:
    config = {"block_m": 32, "block_n": 128, "block_k": 32, "num_warps": 2, "num_stages": 4, "split_k": 4,
              "group_m": 8} | config  # fmt: skip
    return dict(op="gemm", gpu=gpu, m=1000, n=n, k=k, batch=batch, dtype="bf16", backend=backend,
                config=config if backend == "triton" else None)  # fmt: skip


COMPILED = ("compiled_registers", "compiled_spilled_registers", "compiled_spill_us")


@pytest.mark.parametrize("scalar", [False, True], ids=["columns", "one description"])
def test_the_gemm_features_read_what_ptxas_gave_beside_the_estimate(scalar):
    """The class RESULTS §38 found running 4-6x over its prediction: 32x128x32 tiles, 2 warps, split-K, n and k both
    ragged — ptxas gives it 32 registers and a 2,320-byte stack (580 spilled words) where the estimate says 76
    spilled registers; with n and k aligned, 128 registers and no stack. The estimate's columns stay as they were;
    library kernels, batched rows and GPUs of another architecture get NaN. One description (``predict_latency``'s
    scalar path) and a column of them give the same numbers."""
    from kernelcast.features.vector import feature_columns

    descs = [_gemm(), _gemm(n=1024, k=1024), _gemm(backend="cublas"), _gemm(batch=4), _gemm(gpu="A100"),
             _gemm(gpu="H100")]  # fmt: skip
    rows = [parse_desc(d).to_row() for d in descs]
    if scalar:
        got = [feature_columns(r, "gemm", learned=True) for r in rows]  # Python numbers: features.num.SCALARS
        assert all(isinstance(g["compiled_registers"], float) for g in got)
        f = {c: np.array([g[c] for g in got]) for c in (*COMPILED, "spilled_registers")}
    else:
        f = feature_columns({k: np.array([r[k] for r in rows], dtype=object) for k in rows[0]}, "gemm", learned=True)
    assert list(f["compiled_registers"][[0, 1, 5]]) == [32, 128, 32]
    assert list(f["compiled_spilled_registers"][[0, 1, 5]]) == [580, 0, 580]
    assert f["compiled_spill_us"][0] > 0 and f["compiled_spill_us"][1] == 0
    assert f["spilled_registers"][0] == 76  # the estimate, beside
    for c in COMPILED:
        assert np.isnan(f[c][[2, 3, 4]]).all(), c
