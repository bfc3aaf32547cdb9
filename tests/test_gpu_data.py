"""Sanity tests for the GPU spec database (features/gpus/*.toml).

Stdlib + pytest only: this must not import the kernelcast package.
"""

import math
import re
from pathlib import Path

import pytest
import tomllib

GPU_DIR = Path(__file__).resolve().parent.parent / "features" / "gpus"

CANONICAL = {
    "a100_sxm",
    "h100_sxm",
    "h200_sxm",
    "h20",
    "b200_sxm",
    "gb200",
    "b300_sxm",
    "gb300",
    "l40s",
    "l4",
    "rtx_pro_6000_server",
    "rtx_4090",
    "mi300x",
    "mi325x",
    "mi355x",
}

VENDORS = {"nvidia", "amd"}
ARCHS = {"ampere", "hopper", "ada", "blackwell", "cdna3", "cdna4"}
TARGETS = {"sm_80", "sm_90", "sm_89", "sm_100", "sm_103", "sm_120", "gfx942", "gfx950"}
ARCH_TARGETS = {
    "ampere": {"sm_80"},
    "hopper": {"sm_90"},
    "ada": {"sm_89"},
    "blackwell": {"sm_100", "sm_103", "sm_120"},
    "cdna3": {"gfx942"},
    "cdna4": {"gfx950"},
}

NUMBER = (int, float)
# key -> (types, must be strictly positive)
TOP_KEYS = {
    "name": (str, None),
    "display_name": (str, None),
    "aliases": (list, None),
    "vendor": (str, None),
    "architecture": (str, None),
    "target": (str, None),
    "sm_count": (int, True),
    "boost_clock_hz": (NUMBER, True),
    "memory_bytes": (NUMBER, True),
    "memory_bandwidth_bps": (NUMBER, True),
    "l2_bytes": (int, True),
    "infinity_cache_bytes": (int, False),  # 0 allowed (NVIDIA)
    "shared_memory_per_sm_bytes": (int, True),
    "registers_per_sm": (int, True),
    "max_warps_per_sm": (int, True),
    "max_threads_per_sm": (int, True),
    "warp_size": (int, True),
    "tdp_w": (NUMBER, True),
}
REQUIRED_FLOPS = {"fp64", "fp32", "bf16", "fp16", "int8"}
OPTIONAL_FLOPS = {"fp64_tensor", "tf32", "fp8", "fp4"}
REQUIRED_SOURCES = {"peak_flops", "memory", "sm_count", "l2_bytes", "interconnect"}


def _files():
    return sorted(GPU_DIR.glob("*.toml"))


def _load(path):
    with path.open("rb") as f:
        return tomllib.load(f)


def _norm(alias):
    return re.sub(r"[-_ ]+", " ", alias.strip().lower())


ALL = {p.stem: _load(p) for p in _files()}
IDS = sorted(ALL)


def _is_num(v, types):
    return isinstance(v, types) and not isinstance(v, bool)


def test_canonical_names_exist():
    missing = CANONICAL - set(ALL)
    assert not missing, f"missing GPU files: {sorted(missing)}"


def test_every_file_parses():
    assert _files(), "no GPU files found"
    for p in _files():
        assert isinstance(_load(p), dict)


@pytest.mark.parametrize("stem", IDS)
def test_top_level_keys(stem):
    d = ALL[stem]
    assert d["name"] == stem, "name must equal the file stem"
    for key, (types, positive) in TOP_KEYS.items():
        assert key in d, f"{stem}: missing {key}"
        v = d[key]
        if types in (str, list):
            assert isinstance(v, types) and len(v) > 0, f"{stem}: {key} empty or wrong type"
        else:
            assert _is_num(v, types), f"{stem}: {key} has type {type(v).__name__}"
            assert math.isfinite(v)
            assert v > 0 if positive else v >= 0, f"{stem}: {key}={v}"
    assert all(isinstance(a, str) and a.strip() for a in d["aliases"])
    assert d["vendor"] in VENDORS
    assert d["architecture"] in ARCHS
    assert d["target"] in TARGETS
    assert d["target"] in ARCH_TARGETS[d["architecture"]]
    expected_warp = 32 if d["vendor"] == "nvidia" else 64
    assert d["warp_size"] == expected_warp
    assert d["max_threads_per_sm"] == d["max_warps_per_sm"] * d["warp_size"]
    if d["vendor"] == "nvidia":
        assert d["infinity_cache_bytes"] == 0
        assert d["target"].startswith("sm_")
    else:
        assert d["infinity_cache_bytes"] > 0
        assert d["target"].startswith("gfx")


@pytest.mark.parametrize("stem", IDS)
def test_peak_flops(stem):
    pf = ALL[stem].get("peak_flops")
    assert isinstance(pf, dict), f"{stem}: missing [peak_flops]"
    missing = REQUIRED_FLOPS - set(pf)
    assert not missing, f"{stem}: peak_flops missing {sorted(missing)}"
    unknown = set(pf) - REQUIRED_FLOPS - OPTIONAL_FLOPS
    assert not unknown, f"{stem}: unknown peak_flops keys {sorted(unknown)}"
    for k, v in pf.items():
        assert _is_num(v, NUMBER) and math.isfinite(v) and v > 0, f"{stem}: {k}={v!r}"
        assert 1e11 <= v <= 1e17, f"{stem}: {k}={v:g} outside plausible range"


@pytest.mark.parametrize("stem", IDS)
def test_interconnect(stem):
    ic = ALL[stem].get("interconnect")
    assert isinstance(ic, dict), f"{stem}: missing [interconnect]"
    assert isinstance(ic.get("kind"), str) and ic["kind"]
    assert _is_num(ic.get("links"), int) and ic["links"] > 0
    assert _is_num(ic.get("bandwidth_bps"), NUMBER) and ic["bandwidth_bps"] > 0
    assert isinstance(ic.get("nvswitch"), bool)
    if ic["kind"].startswith("pcie"):
        assert ic["nvswitch"] is False
        assert ic["kind"] in {"pcie4", "pcie5"}
    assert 10e9 <= ic["bandwidth_bps"] <= 5e12


@pytest.mark.parametrize("stem", IDS)
def test_sources(stem):
    src = ALL[stem].get("sources")
    assert isinstance(src, dict), f"{stem}: missing [sources]"
    missing = REQUIRED_SOURCES - set(src)
    assert not missing, f"{stem}: sources missing {sorted(missing)}"
    for k, v in src.items():
        assert isinstance(v, str) and len(v.strip()) >= 10, f"{stem}: source {k} too short"


def test_aliases_unique_across_files():
    owner = {}
    clashes = []
    for stem, d in ALL.items():
        keys = {_norm(a) for a in d["aliases"]} | {_norm(stem)}
        for k in keys:
            if k in owner and owner[k] != stem:
                clashes.append((k, owner[k], stem))
            owner.setdefault(k, stem)
    assert not clashes, f"aliases shared between files: {clashes}"


REQUIRED_ALIASES = {
    "a100_sxm": ["NVIDIA A100-SXM4-80GB", "a100_sxm", "A100"],
    "h100_sxm": ["NVIDIA H100 80GB HBM3", "h100_sxm", "H100", "h100"],
    "h200_sxm": ["NVIDIA H200", "h200_sxm", "H200"],
    "h20": ["NVIDIA H20", "H20"],
    "b200_sxm": ["NVIDIA B200", "b200_sxm", "B200"],
    "gb200": ["NVIDIA GB200", "gb200", "GB200"],
    "b300_sxm": ["NVIDIA B300 SXM6 AC", "b300_sxm", "B300"],
    "gb300": ["NVIDIA GB300", "gb300", "GB300"],
    "l40s": ["NVIDIA L40S", "l40s"],
    "l4": ["NVIDIA L4", "L4"],
    "rtx_pro_6000_server": ["NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx_pro_6000_server"],
    "rtx_4090": ["NVIDIA GeForce RTX 4090", "RTX 4090", "4090"],
    "mi300x": ["AMD Instinct MI300X", "MI300X", "mi300x"],
    "mi325x": ["AMD Instinct MI325X", "MI325X"],
    "mi355x": ["AMD Instinct MI355X", "MI355X"],
}


@pytest.mark.parametrize("stem", sorted(REQUIRED_ALIASES))
def test_tool_names_are_aliases(stem):
    have = {_norm(a) for a in ALL[stem]["aliases"]}
    for a in REQUIRED_ALIASES[stem]:
        assert _norm(a) in have, f"{stem}: alias {a!r} missing"


@pytest.mark.parametrize("stem", IDS)
def test_sanity_ratios(stem):
    d = ALL[stem]
    pf = d["peak_flops"]
    assert pf["bf16"] == pf["fp16"], f"{stem}: bf16 != fp16"
    if "fp8" in pf:
        assert pf["fp8"] == pytest.approx(2 * pf["bf16"], rel=0.05), f"{stem}: fp8 !~ 2x bf16"
    if "fp4" in pf:
        assert d["architecture"] in {"blackwell", "cdna4"}, f"{stem}: fp4 on non-FP4 hardware"
        assert pf["fp4"] >= pf["fp8"]
    if "fp64_tensor" in pf:
        assert pf["fp64_tensor"] > pf["fp64"]
    assert pf["bf16"] > pf["fp32"]
    assert d["l2_bytes"] < d["memory_bytes"]
    assert d["infinity_cache_bytes"] < d["memory_bytes"]
    assert 0.2e12 <= d["memory_bandwidth_bps"] <= 10e12
    assert 0.5e9 <= d["boost_clock_hz"] <= 3.5e9
    assert 1e9 <= d["memory_bytes"] <= 1e12
    # memory capacity should be in the right ballpark of a "GB"-quoted value, not GiB/MiB typos
    assert d["shared_memory_per_sm_bytes"] < d["l2_bytes"]
