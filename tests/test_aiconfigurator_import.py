"""The aiconfigurator-core importer on the installed package's real tables (a small subset, for speed)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

aic = pytest.importorskip("kernelcast.collect.importers.aiconfigurator")
from kernelcast.features.desc import from_row  # noqa: E402

try:
    ROOT = aic.data_root()
except ImportError:
    pytest.skip("aiconfigurator-core not installed (pip install 'kernelcast[outside]')", allow_module_level=True)


def _table(where: str) -> aic.TableFile:
    return next(f for f in aic.discover(ROOT) if f.where == where)


def test_choose_prefers_collected_and_skips_reuse_copies_and_unknown_gpus():
    chosen, skipped = aic.choose(aic.discover(ROOT))
    picked = {(f.system, f.table, f.framework): f.version for f in chosen}
    assert picked[("h200_sxm", "gemm_perf", "trtllm")] == "1.3.0rc20"
    assert picked[("h200_sxm", "nccl_perf", "nccl")] == "2.29.2"  # collected beats legacy 2.26.2
    assert picked[("a100_sxm", "gemm_perf", "trtllm")] == "1.0.0"  # legacy only: newest kept
    reasons = {f.where: r for f, r in skipped}
    assert reasons["b200_sxm/attention/vllm/0.22.0/context_attention_perf"] == "copy of another version (reuse.yaml)"
    assert reasons["b60/gemm/vllm/0.26.0/gemm_perf"].startswith("system b60 not in the GPU spec database")
    assert reasons["h200_sxm/comm/nccl/2.26.2/nccl_perf"] == "another version of the same table chosen"
    assert not any(f.reused for f in chosen)


def test_nccl_rows_keep_nccl_tests_size_semantics():
    f = _table("h200_sxm/comm/nccl/2.29.2/nccl_perf")
    raw = pd.read_parquet(f.path)
    frame, skips = aic.import_op("collective", [f])
    assert len(frame) == len(raw) == 504 and not skips
    row = frame[(frame.collective == "all_to_all") & (frame.dtype == "fp16") & (frame.ranks == 8)].iloc[0]
    src = raw[
        (raw.op_name == "alltoall")
        & (raw.nccl_dtype == "half")
        & (raw.num_gpus == 8)
        & (raw.message_size * 2 == row["bytes"])
    ].iloc[0]
    assert row["latency_us"] == pytest.approx(src["latency"] * 1000)
    assert (row["timer"], row["cache"], row["source"], row["backend"], row["nccl"]) == (
        "nccl-tests",
        "warm",
        "aiconfigurator",
        "nccl",
        "2.29.2",
    )
    assert set(frame.collective) == {"all_gather", "all_reduce", "reduce_scatter", "all_to_all"}
    int8 = frame[frame.dtype == "int8"]
    assert int8["bytes"].min() == raw.loc[raw.nccl_dtype == "int8", "message_size"].min()


def test_generation_attention_maps_step_to_kv_length_and_counts_skips():
    f = _table("h200_sxm/attention/trtllm/1.3.0rc20/generation_attention_perf")
    raw = pd.read_parquet(f.path)
    frame, skips = aic.import_op("attention", [f])
    assert (frame.seq_q == 1).all() and not frame.causal.any()
    kept = raw[(raw.window_size == 0) & (raw.kv_cache_dtype == "bfloat16")]
    assert set(frame.seq_kv) == set(kept.isl + kept.step)
    assert skips["sliding-window attention (no window field)"] == int((raw.window_size > 0).sum())
    mixed = skips["attention and KV-cache dtypes differ (or unmapped)"]
    assert mixed == int(((raw.window_size == 0) & (raw.kv_cache_dtype == "fp8")).sum())
    dropped = skips.get("same description, slower kernel_source (fastest kept)", 0)
    assert len(frame) + dropped == len(kept)
    assert frame.groupby(["batch", "heads_q", "heads_kv", "seq_kv", "head_dim"]).size().max() == 1


def test_moe_keeps_only_unsharded_experts_and_divides_ffn_by_tp():
    f = _table("a100_sxm/moe/trtllm/1.0.0/moe_perf")
    raw = pd.read_parquet(f.path)
    frame, skips = aic.import_op("moe", [f])
    assert skips["expert-parallel shard (moe_ep_size > 1)"] == int((raw.moe_ep_size > 1).sum())
    ep1 = raw[(raw.moe_ep_size == 1) & (raw.moe_dtype == "bfloat16")]
    assert set(frame.ffn) == set(ep1.inter_size // ep1.moe_tp_size)
    assert set(frame.distribution) <= {"balanced", "power_law_1.01", "power_law_1.2"}


def test_rows_are_valid_descriptions_with_their_desc_key():
    f = _table("a100_sxm/gemm/trtllm/1.0.0/gemm_perf")
    frame, skips = aic.import_op("gemm", [f])
    assert skips == Counter(
        {
            "gemm_dtype 'int8_wo' has no kernelcast dtype": 6048,
            "gemm_dtype 'int4_wo' has no kernelcast dtype": 6048,
            "gemm_dtype 'sq' has no kernelcast dtype": 6048,
        }
    )
    sample = frame.sample(200, random_state=0)
    for row in sample.to_dict("records"):
        assert from_row(row).key() == row["desc_key"]
    assert (sample.gpu_name == "NVIDIA A100-SXM4-80GB").all() and (sample.gpu == "a100_sxm").all()
    assert (sample.layout == "nt").all() and (sample.framework_version == "1.0.0").all()


def test_run_import_writes_cache_in_row_schema(tmp_path: Path):
    root = tmp_path / "data"
    for where in ("l40s/comm/nccl/2.27.3", "b200_sxm/attention/vllm/0.22.0"):  # the second is a reuse copy
        src = ROOT / where
        (root / where).mkdir(parents=True)
        for p in src.iterdir():
            (root / where / p.name).symlink_to(p)
    summary = aic.run_import(out=tmp_path / "out", root=root, progress=False)
    assert summary["ops"]["collective"]["rows"] == 504
    assert summary["ops"]["attention"]["rows"] == 0
    assert summary["tables_skipped"] == {"copy of another version (reuse.yaml)": 2}
    path = aic.cache_path(tmp_path / "out", "collective")
    assert pq.read_schema(path).names == aic.cache_schema("collective").names
    assert pq.read_schema(path).metadata[b"kernelcast.source"] == b"aiconfigurator"
    text = aic.format_summary(summary)
    assert "l40s" in text and "504" in text
    json.dumps(summary)


def test_version_order():
    versions = ["1.3.0rc10", "1.3.0", "1.3.0rc20", "1.2.0rc5", "1.3.1"]
    assert sorted(versions, key=aic._version_key) == ["1.2.0rc5", "1.3.0rc10", "1.3.0rc20", "1.3.0", "1.3.1"]
