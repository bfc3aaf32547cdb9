"""The Triton GEMM resource model the features use, checked against what Triton 3.6 (the H200's) compiled for
sm_90: 2,438 compile classes of our measured configs (datasets/compile_facts/, written by
`python -m kernelcast.collect.compile_facts`): which configs fit in shared memory, and which spill registers."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kernelcast.features.common import MAX_REGISTERS
from kernelcast.features.ops.gemm import triton_gemm_operands, triton_gemm_registers

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
