"""Compile facts on a CPU host: kernelcast's Triton GEMM compiled for sm_90 by the pinned triton (no GPU), its shared
memory and registers read back, and the shared-memory model the features and the config rule use checked against
what Triton allocated."""

import dataclasses
import json

import numpy as np
import pytest

from kernelcast import predict_latency
from kernelcast.features.desc import parse_desc
from kernelcast.features.ops.gemm import triton_gemm_operands

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from kernelcast.collect.compile_facts import _descs_of, class_id, facts_of, with_config  # noqa: E402
from kernelcast.collect.precompile import compile_key  # noqa: E402
from kernelcast.collect.workloads import get_backend  # noqa: E402

LIMIT = 232448  # H200 shared memory per block (opt-in)


def _gemm(m, n, k, layout, bm, bn, bk, warps, stages, split_k=1, batch=1):
    cfg = dict(block_m=bm, block_n=bn, block_k=bk, group_m=8, num_warps=warps, num_stages=stages, split_k=split_k)
    return dict(op="gemm", gpu="H200", dtype="bf16", backend="triton", m=m, n=n, k=k, batch=batch, layout=layout,
                config=cfg)  # fmt: skip


def _model(d: dict) -> float:
    cfg = {k: np.array([float(v)]) for k, v in d["config"].items()}
    cols = {k: [d[k]] for k in ("m", "n", "k", "batch", "layout", "gpu")}
    return float(triton_gemm_operands(cols, cfg, 2.0).smem_bytes[0])


# (description, what it exercises); each compiles in well under a few seconds
CASES = [
    (_gemm(4096, 4096, 4096, "nt", 128, 128, 64, 4, 3), "aligned, wgmma: num_stages buffers"),
    (_gemm(4096, 4096, 4096, "nt", 32, 64, 64, 4, 4), "aligned, mma.sync: num_stages - 1 buffers"),
    (_gemm(4096, 4096, 4090, "nt", 128, 128, 64, 4, 3), "ragged k (nt): neither operand pipelined"),
    (_gemm(4096, 4090, 4096, "nn", 128, 64, 64, 4, 4), "ragged n (nn): B in one buffer, A pipelined"),
    (_gemm(2048, 2048, 2048, "nt", 64, 128, 128, 8, 5, split_k=2), "5 stages over the limit: refused by Triton"),
]


@pytest.mark.parametrize("desc,why", CASES, ids=[w for _, w in CASES])
def test_shared_memory_model_matches_what_triton_allocates(desc, why):
    """The features' and the config rule's shared memory is what Triton 3.7 allocates for sm_90 (and 3.6 on the
    H200: all 81,446 measured rows' status, benchmarks/RESULTS.md)."""
    facts = facts_of(with_config(desc), "H200")[0]  # over-the-limit configs too
    assert facts["kernel"] == "kc_gemm_kernel" and 0 < facts["registers"] <= 255
    assert facts["shared_bytes"] == _model(desc), why
    assert facts["fits_shared"] == (_model(desc) <= LIMIT)


def test_a_config_that_cannot_fit_is_refused_with_the_numbers_and_its_ragged_variant_is_not():
    big = _gemm(4096, 4096, 4096, "nt", 256, 256, 128, 8, 5)
    with pytest.raises(ValueError, match=r"232448 B \(227 KiB\).*needs 655360 B \(640 KiB\)"):
        predict_latency(big)
    ragged = {**big, "k": 4095}  # one buffer each: 128 KiB, and Triton runs it (with spills)
    assert _model(ragged) == 131072 and predict_latency(ragged).latency_us > 0


def test_output_check_compiles_the_description_s_own_variant():
    """The collector's output check runs a small description of the same compile class: with an aligned k it once
    compiled a pipelined variant for ragged-k rows and refused 381 that would have run."""
    backend = get_backend("gemm", "triton")
    for n, k, layout in ((4096, 4096, "nt"), (4090, 4096, "nn"), (4096, 4090, "nt"), (4090, 4090, "nn")):
        d = parse_desc(_gemm(1000, n, k, layout, 64, 64, 32, 4, 3))
        assert compile_key(backend.small(d)) == compile_key(d), (n, k, layout)


def test_class_id_names_the_compile_class():
    a = parse_desc(_gemm(1000, 4096, 4096, "nt", 64, 64, 32, 4, 3))
    assert class_id(a) == class_id(dataclasses.replace(a, m=77))  # m is not specialized
    assert class_id(a) != class_id(dataclasses.replace(a, k=4090))


def test_measured_rows_are_read_with_their_configs_even_those_the_rule_refuses():
    descs = _descs_of(["datasets/gemm/kernelcast_h200_sxm_20261201_test2.parquet"], "triton")
    assert len(descs) == 2286
    refused = [d for d in descs if _model(d.to_dict()) > LIMIT]
    assert refused and all(dict(d.config)["num_stages"] >= 2 for d in refused)


def test_facts_table_keeps_the_main_kernel_and_the_larger_launch(tmp_path):
    """A facts file (synthetic records in the format collect_facts writes) as one row per compiled class: the MoE's
    two grouped-GEMM launches folded into their larger figures, its routing kernels ignored, a failed class left out."""
    from kernelcast.collect.compile_facts import facts_table

    def kernel(name, regs, stack):
        return {
            "kernel": name,
            "shared_bytes": 36864,
            "fits_shared": True,
            "registers": regs,
            "stack_bytes": stack,
            "local_bytes": stack,
            "num_warps": 4,
        }

    cfg = {"block_m": 64, "block_n": 128, "block_k": 64, "group_m": 8, "num_warps": 4, "num_stages": 3}
    moe = {"op": "moe", "tokens": 45, "hidden": 128, "ffn": 96, "config": cfg}
    lines = [
        {
            "class": "a",
            "gpu": "H200",
            "desc": moe,
            "kernels": [kernel("kc_moe_count", 30, 0), kernel("kc_moe_gemm", 63, 0), kernel("kc_moe_gemm", 255, 16)],
        },
        {"class": "b", "gpu": "H200", "desc": moe, "error": "OutOfResources: shared memory"},
    ]
    (tmp_path / "f.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    table = facts_table(tmp_path / "f.jsonl")
    assert table["class_id"].tolist() == ["a"]
    row = table.iloc[0]
    assert (row["registers"], row["stack_bytes"], row["block_k"], row["hidden"]) == (255, 16, 64, 128)
