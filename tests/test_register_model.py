"""The Triton resource models the features use, checked against what Triton 3.6 (the H200's) compiled for sm_90:
the compile classes of our measured configs (datasets/compile_facts/, written by
`python -m kernelcast.collect.compile_facts`): GEMM (2,438 classes: which fit in shared memory, which spill),
attention (1,404) and the fused MoE (3,272): which spill."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kernelcast.features.common import MAX_REGISTERS
from kernelcast.features.ops.attention import triton_attention_registers
from kernelcast.features.ops.gemm import triton_gemm_operands, triton_gemm_registers
from kernelcast.features.ops.moe import triton_moe_registers

FACTS = Path(__file__).resolve().parents[1] / "datasets" / "compile_facts" / "triton_gemm_h200.parquet"


@pytest.fixture(scope="module")
def facts():
    f = pd.read_parquet(FACTS)
    cfg = {c: f[c].to_numpy(np.float64) for c in ("block_m", "block_n", "block_k", "num_warps", "num_stages")}
    ops = triton_gemm_operands(f, cfg, np.where(f["dtype"] == "fp32", 4.0, 2.0))
    return f, ops, triton_gemm_registers(cfg, ops)


def test_the_facts_cover_the_config_space(facts):
    f, ops, _ = facts
    assert len(f) >= 2400 and f["class_id"].is_unique
    assert set(f["num_warps"]) == {2, 4, 8} and set(f["layout"]) == {"nn", "nt"}
    assert ops.wgmma.any() and not ops.wgmma.all() and not ops.vec_a.all() and not ops.vec_b.all()


def test_shared_memory_is_what_triton_allocated(facts):
    """Whether a class fits (what the config rule refuses) for every class; the bytes themselves for 91%: Triton
    allocates other than the ring buffers for block_k = 16 and for some wgmma epilogues (up to 4.6× the model's)."""
    f, ops, _ = facts
    assert np.array_equal(ops.smem_bytes <= 232448, f["fits_shared"].to_numpy())
    exact = ops.smem_bytes == f["shared_bytes"].to_numpy(np.float64)
    assert exact.mean() >= 0.9 and exact[f["block_k"].to_numpy() >= 128].all()


def test_the_register_estimate_says_which_classes_spill(facts):
    f, _, registers = facts
    spills = f["stack_bytes"].to_numpy() > 0
    assert 0.15 < spills.mean() < 0.3  # both kinds are common
    agree = (registers > MAX_REGISTERS) == spills
    assert agree.mean() >= 0.95, agree.mean()
    for wgmma in (True, False):  # on either dot path, not only overall
        mine = facts[1].wgmma == wgmma
        assert agree[mine].mean() >= 0.93, (wgmma, agree[mine].mean())
    # and how much spills: the estimate's excess orders the spill sizes
    excess = pd.Series(np.fmax(registers - MAX_REGISTERS, 0)[spills])
    assert excess.corr(pd.Series(f["stack_bytes"].to_numpy()[spills]), method="spearman") > 0.7


ATTENTION_FACTS = FACTS.with_name("triton_attention_h200.parquet")
MOE_FACTS = FACTS.with_name("triton_moe_h200.parquet")


def test_the_attention_register_estimate_says_which_classes_spill():
    """kernelcast's Triton attention (1,388 compile classes that fit in shared memory): the estimate
    (features.ops.attention.triton_attention_registers, written from the kernel's tiles before these facts were
    compiled) says which spill for 92%, and its excess orders how much they spill."""
    f = pd.read_parquet(ATTENTION_FACTS)
    f = f[f["fits_shared"]]
    registers = triton_attention_registers(
        *(f[c].to_numpy(np.float64) for c in ("block_m", "block_n", "head_dim", "num_warps"))
    )
    spills = f["stack_bytes"].to_numpy() > 0
    assert len(f) >= 1300 and 0.1 < spills.mean() < 0.3
    assert ((registers > MAX_REGISTERS) == spills).mean() >= 0.92
    excess = pd.Series(np.fmax(registers - MAX_REGISTERS, 0)[spills])
    assert excess.corr(pd.Series(f["stack_bytes"].to_numpy()[spills]), method="spearman") > 0.9


def test_the_moe_gemms_spill_as_the_gemm_register_model_says():
    """The fused MoE's grouped GEMMs (3,225 compile classes): the Triton GEMM's register model as the MoE features
    apply it (``triton_moe_registers``) says which spill for every class."""
    f = pd.read_parquet(MOE_FACTS)
    f = f[f["fits_shared"]]
    cfg = {c: f[c].to_numpy(np.float64) for c in ("block_m", "block_n", "block_k", "num_warps", "num_stages")}
    registers = triton_moe_registers(np.full(len(f), "h200_sxm"), cfg)
    spills = f["stack_bytes"].to_numpy() > 0
    assert len(f) >= 3000 and spills.any()
    assert ((registers > MAX_REGISTERS) == spills).mean() >= 0.99
