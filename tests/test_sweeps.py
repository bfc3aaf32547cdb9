"""Sweep files expand into valid, tagged, deterministic descriptions with reasons for every skip."""

import collections
import functools
import re

import pytest

from kernelcast.collect import sweeps
from kernelcast.features.desc import parse_desc


def _write(tmp_path, monkeypatch, text):
    (tmp_path / "t.toml").write_text(text)
    monkeypatch.setattr(sweeps, "SWEEP_DIR", tmp_path)


@functools.cache
def _expanded(name: str, seed: int) -> tuple:
    """One expansion per (sweep, seed) for the whole module: expanding every shipped sweep is most of its time."""
    return tuple(sweeps.expand(name, "H200", seed=seed))


def test_every_shipped_sweep_expands_and_is_seeded():
    """Every shipped sweep expands to distinct descriptions. Seeding is the expander's, not a sweep's, so a fresh
    expansion is compared on one sweep of each block kind and one drawing a config pool (re-expanding all of them
    doubled this module's time)."""
    fresh = {}
    for name in sweeps.list_sweeps():
        first = _expanded(name, 0)
        assert first, name
        assert len({d.key() for d in first}) == len(first)
        data = sweeps._load(name)[1]
        for kind in (k for k in sweeps.BLOCK_KINDS if data.get(k)):
            fresh.setdefault(kind, name)
        if any(isinstance(b.get("config"), dict) and "pool" in b["config"] for b in data.get("random", [])):
            fresh.setdefault("pool", name)
    assert set(fresh) == {*sweeps.BLOCK_KINDS, "pool"}, fresh
    for name in set(fresh.values()):
        assert [d.key() for d in _expanded(name, 0)] == [d.key() for d in sweeps.expand(name, "H200", seed=0)], name


def test_data_targets_are_met():
    counts = collections.Counter()
    for name in ("gemm_cublas", "gemm_triton", "attention", "moe"):
        for d in _expanded(name, 0):
            counts[(d.op, d.backend)] += 1
    assert counts[("gemm", "cublas")] >= 15000
    assert counts[("gemm", "triton")] >= 5000
    assert sum(v for (op, _), v in counts.items() if op == "attention") >= 4000
    assert sum(v for (op, _), v in counts.items() if op == "moe") >= 3000
    triton = _expanded("gemm_triton", 0)
    assert len({d.config for d in triton}) >= 40
    assert len({(d.m, d.n, d.k) for d in triton}) >= 150


def test_model_shapes_are_tagged_and_split_by_tp():
    items = sweeps.expand_tagged("gemm_cublas", "H200")
    tagged = [
        (d, t)
        for d, t in items
        if t.get("model") == "llama3_8b" and t["layer"] == "down" and d.m == 128 and d.dtype == "bf16"
    ]
    assert sorted((t["tp"], d.n, d.k) for d, t in tagged) == [
        (1, 4096, 14336),
        (2, 4096, 7168),
        (4, 4096, 3584),
        (8, 4096, 1792),
    ]
    qkv = [
        d
        for d, t in items
        if t.get("model") == "qwen3_235b_a22b"
        and t["layer"] == "qkv"
        and t["tp"] == 8
        and d.m == 1
        and d.dtype == "bf16"
    ]
    assert [d.n for d in qkv] == [(8 + 2 * 1) * 128]  # 4 kv heads over 8 ranks: one replicated kv head
    moe = {
        (d.experts, d.top_k, d.hidden, d.ffn)
        for d, t in sweeps.expand_tagged("moe", "H200")
        if t.get("model") == "deepseek_v3" and t["tp"] == 2
    }
    assert moe == {(256, 8, 7168, 1024)}


def test_tile_boundaries_are_sampled():
    ms = {d.m for d in _expanded("gemm_cublas", 0)}
    assert {127, 128, 129, 255, 256, 257} <= ms


def test_max_gb_skips_points_that_move_more(tmp_path, monkeypatch):
    _write(tmp_path, monkeypatch, """
[[grid]]
op = "copy"
backend = "torch"
dtype = "bf16"
fn = "copy"
elements = [1048576, 4294967296]
max_gb = 1
""")  # fmt: skip
    report = sweeps.expand_report("t", "H200")
    assert [d.elements for d, _ in report.items] == [1048576]
    assert [why for _, why in report.skipped] == ["17.2 GB moved is over the block's max_gb=1"]


def test_skips_carry_reasons(tmp_path, monkeypatch):
    _write(
        tmp_path,
        monkeypatch,
        """
[[grid]]
op = "attention"
backend = "flash"
dtype = "bf16"
batch = 1
heads_q = [32, 6]
heads_kv = 4
seq_q = 128
seq_kv = "=seq_q"
head_dim = 128
causal = true
[[models]]
op = "attention"
backend = "flash"
dtype = "bf16"
models = ["deepseek_v3"]
seq = 1024
""",
    )
    report = sweeps.expand_report("t", "H200")
    assert len(report.items) == 1 and report.items[0][0].seq_kv == 128
    reasons = [why for _, why in report.skipped]
    assert any("heads_q" in r and "multiple of heads_kv" in r for r in reasons)
    assert any("MLA" in r for r in reasons)


def test_random_block_is_log_uniform_and_rounded(tmp_path, monkeypatch):
    _write(
        tmp_path,
        monkeypatch,
        """
[[random]]
op = "gemm"
backend = "cublas"
dtype = "bf16"
count = 400
m = { log_uniform = [1, 65536] }
n = { log_uniform = [16, 4096], multiple_of = 16 }
k = 64
""",
    )
    descs = sweeps.expand("t", "H200", seed=1)
    assert all(d.n % 16 == 0 for d in descs)
    small = sum(d.m < 256 for d in descs) / len(descs)
    assert 0.35 < small < 0.65  # log-uniform: half the draws below sqrt(65536)
    assert [d.key() for d in descs] != [d.key() for d in sweeps.expand("t", "H200", seed=2)]


@pytest.mark.parametrize(
    "text, match",
    [
        ("[[random]]\nop = 'gemm'\ncount = 0\n", "random.count must be a positive integer; got 0"),
        ("[[random]]\nop = 'gemm'\ncount = 2\nm = { log_uniform = [0, 4] }\n", "m.log_uniform must be"),
        ("[[models]]\nop = 'gemm'\nmodels = ['gpt5']\n", "models.models must be a model of models.toml"),
        ("[[grids]]\nop = 'gemm'\n", "grids must be absent"),
        ("[[grid]]\nop = 'gemm'\nm = { range = [64, 16, 8] }\n", r"m.range must be \[lo, hi, step\]"),
        ("[[random]]\nop = 'gemm'\ncount = 2\nk = { range = [16, 64, 0] }\n", r"k.range must be .*got \[16, 64, 0\]"),
        ("[[random]]\nop = 'gemm'\ncount = 2\nk = { range = [16, 64.0, 8] }\n", "k.range must be"),
    ],
)
def test_bad_sweep_names_file_key_value(tmp_path, monkeypatch, text, match):
    _write(tmp_path, monkeypatch, text)
    with pytest.raises(ValueError, match=match) as info:
        sweeps.expand("t", "H200")
    assert "t.toml" in str(info.value)


def test_range_is_its_list_in_grids_and_draws(tmp_path, monkeypatch):
    block = "op = 'gemm'\nbackend = 'cublas'\ndtype = 'bf16'\nm = 64\nn = 64\n"
    _write(tmp_path, monkeypatch, f"[[grid]]\n{block}k = {{ range = [16, 100, 16] }}\n")
    assert [d.k for d in sweeps.expand("t", "H200")] == [16, 32, 48, 64, 80, 96]  # hi included only when reached
    _write(tmp_path, monkeypatch, f"[[random]]\n{block}count = 50\nk = {{ range = [16, 96, 16] }}\n")
    ranged = [d.key() for d in sweeps.expand("t", "H200", seed=3)]
    _write(tmp_path, monkeypatch, f"[[random]]\n{block}count = 50\nk = [16, 32, 48, 64, 80, 96]\n")
    assert ranged == [d.key() for d in sweeps.expand("t", "H200", seed=3)]  # the same seeded draws as the list


def test_unknown_sweep_lists_the_known():
    with pytest.raises(ValueError, match="sweep must be one of .*smoke"):
        sweeps.expand("nope", "H200")


def test_triton_configs_only_on_triton_rows():
    for d in _expanded("attention", 0):
        assert (d.config is not None) == (d.backend == "triton")
        parse_desc(d.to_dict())


def test_random_config_pool_draws_few_configs_from_per_key_choices(tmp_path, monkeypatch):
    _write(
        tmp_path,
        monkeypatch,
        """
[[random]]
op = "gemm"
backend = "triton"
dtype = "bf16"
count = 300
m = { log_uniform = [1, 4096] }
n = { log_uniform = [16, 4096], multiple_of = 16 }
k = { log_uniform = [16, 4096], multiple_of = 16 }
config = { pool = 12, pool_seed = 5, block_m = [16, 32, 64, 128, 256], block_n = [16, 32, 64, 128, 256], block_k = [16, 32, 64, 128], group_m = [1, 8], num_warps = [2, 4, 8], num_stages = [2, 3, 4, 5, 6], split_k = [1, 2], pool_max = { "block_m*block_n/num_warps" = 4096 } }
""",
    )
    descs = sweeps.expand("t", "H200", seed=1)
    configs = {d.config for d in descs}
    assert len(configs) == 12 and len(descs) > 250
    assert all(dict(c)["block_m"] * dict(c)["block_n"] / dict(c)["num_warps"] <= 4096 for c in configs)
    other = sweeps.expand("t", "H200", seed=2)  # another seed: other shapes, the same pool (pool_seed)
    assert {d.config for d in other} == configs
    assert [d.key() for d in other] != [d.key() for d in descs]


def test_config_pool_errors_name_the_key(tmp_path, monkeypatch):
    _write(
        tmp_path,
        monkeypatch,
        """
[[random]]
op = "gemm"
backend = "triton"
dtype = "bf16"
count = 3
m = 64
n = 64
k = 64
config = { pool = 9, block_m = [16, 32], block_n = 16, block_k = 16, group_m = 1, num_warps = 4, num_stages = 2, split_k = 1 }
""",
    )
    with pytest.raises(ValueError, match="config.pool must be at most the 2 distinct tables"):
        sweeps.expand("t", "H200")


_SMALL_SPACE = "block_m = [16, 32], block_n = [16, 32], num_warps = [4, 8], num_stages = 2"


def _small_pool(name, pool, seed, exclude=None):
    excl = f", pool_exclude = {exclude!r}".replace("'", '"') if exclude else ""
    return f"""
[[random]]
op = "attention"
backend = "triton"
dtype = "bf16"
count = 200
batch = 2
heads_q = 8
heads_kv = 8
seq_q = {{ log_uniform = [16, 512] }}
seq_kv = "=seq_q"
head_dim = 64
causal = false
config = {{ pool = {pool}, pool_seed = {seed}{excl}, {_SMALL_SPACE} }}
"""


def test_config_pool_exclude_draws_clear_of_other_sweeps(tmp_path, monkeypatch):
    """A pool with pool_exclude never draws a table another sweep's pool holds, even in a space of 8 tables."""
    monkeypatch.setattr(sweeps, "SWEEP_DIR", tmp_path)
    (tmp_path / "held.toml").write_text(_small_pool("held", 3, 1))
    (tmp_path / "train.toml").write_text(_small_pool("train", 5, 2, ["held"]))
    held = {d.config for d in sweeps.expand("held", "H200")}
    train = {d.config for d in sweeps.expand("train", "H200")}
    assert len(held) == 3 and len(train) == 5 and not held & train  # 3 + 5 = all 8 tables of the space
    (tmp_path / "train.toml").write_text(_small_pool("train", 6, 2, ["held"]))
    with pytest.raises(ValueError, match="config.pool must be at most the 5 distinct tables"):
        sweeps.expand("train", "H200")
    (tmp_path / "held.toml").write_text(_small_pool("held", 3, 1, ["train"]))
    with pytest.raises(ValueError, match=r"config.pool_exclude must be sweeps that do not exclude each other"):
        sweeps.expand("train", "H200")
    (tmp_path / "train.toml").write_text(_small_pool("train", 5, 2, "held"))
    with pytest.raises(ValueError, match=r"config.pool_exclude must be a list of sweep names; got 'held'"):
        sweeps.expand("train", "H200")


def _configs(names) -> set:
    """Every config table sweeps ``names`` may give a point, whatever the expansion seed: their seeded pools' tables,
    lists and single tables, as ``pool_exclude`` reads them (``sweeps._sweep_tables``, which refuses a pool without
    ``pool_seed``). Covers every seed the GPU ran, not just the seeds a test expands."""
    tables = {t for name in names for t in sweeps._sweep_tables(name, "config", ())}
    assert all(not isinstance(v, (list, dict)) for t in tables for _, v in t), "a config table drawn per point"
    return tables


def test_independent_test_sweeps_use_fresh_triton_configs():
    """The *_test* sweeps' Triton configs are not in any training sweep (the documented exceptions: one attention
    config, and 3 of gemm_triton_test2's 40 configs that 300-config training pools drew too: they were measured
    before this check read the numbered test sets)."""
    tests = [n for n in sweeps.list_sweeps() if re.search(r"_test\d*$", n)]  # _test, _test2, ...
    # _tune, _tune2, ...: config-search test sets (their configs may be the training pools'; their shapes are fresh)
    train = [n for n in sweeps.list_sweeps() if n not in tests and not re.search(r"_tune\d*$", n)]
    shared = _configs(tests) & _configs(train)
    keys = ("block_k", "block_m", "block_n", "group_m", "num_stages", "num_warps", "split_k")
    gemm = lambda *values: ("gemm", tuple(zip(keys, values)))
    known = {
        ("attention", (("block_m", 16), ("block_n", 64), ("num_stages", 2), ("num_warps", 4))),
        gemm(128, 16, 128, 4, 3, 8, 1),
        gemm(16, 128, 32, 16, 6, 8, 1),
        gemm(64, 16, 256, 16, 2, 8, 1),
    }
    assert shared <= {config for _, config in known}


def test_computed_keys_chain_and_scratch_draws_are_dropped(tmp_path, monkeypatch):
    _write(
        tmp_path,
        monkeypatch,
        """
[[random]]
op = "copy"
backend = "torch"
dtype = "bf16"
count = 50
fn = "cat"
contiguous = false
dims = 4
inputs = 2
run = [64, 128]
_outer = { log_uniform = [2, 64] }
_seq = { log_uniform = [8, 512] }
_new = [1, 4]
elements = "=largest+_outer*_new*run"
largest = "=_outer*_seq*run"
""",
    )
    descs = sweeps.expand("t", "H200", seed=3)
    assert len(descs) > 10
    for d in descs:  # elements refers to largest, resolved first wherever it stands in the file
        extra = d.elements - d.largest
        assert extra > 0 and extra % d.run == 0 and d.largest % d.run == 0
        assert not any(k.startswith("_") for k in d.to_row())
    _write(tmp_path, monkeypatch, "[[random]]\nop = 'copy'\ncount = 1\nelements = '=2**8'\n")
    with pytest.raises(ValueError, match=r"sweep t.toml: elements must be an expression of integers.*got '=2\*\*8'"):
        sweeps.expand("t", "H200")
