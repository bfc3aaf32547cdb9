"""Collective collector: the sweep, env guard, timing plan, NCCL log / topology parsing, the measured dataset."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernelcast.collect import dataset, nccl_job
from kernelcast.collect.workloads import collective as W

FIX = Path(__file__).parent / "fixtures" / "nccl_tests"
DATA = Path(__file__).parent.parent / "datasets" / "collective"

try:
    import torch

    _GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
except ImportError:
    _GPUS = 0


def test_sizes_powers_of_two_and_midpoints():
    assert W.sizes(1024, 8192) == [1024, 1536, 2048, 3072, 4096, 6144, 8192]
    assert W.sizes(1024, 4096, between=False) == [1024, 2048, 4096]
    full = W.sizes()
    assert (full[0], full[-1], len(full)) == (1 << 10, 1 << 32, 45)


def test_sweep_modes_and_divisibility():
    descs = W.sweep(("all_reduce", "all_gather", "send_recv"), ("bf16", "fp32"), [1024, 1026], 2, "H200")
    # 1026 B is not a multiple of 4 B x 2 ranks (fp32) nor 2 B x 2 ranks (bf16): dropped
    assert {d.bytes for d in descs} == {1024}
    assert [(d.dtype, d.collective, d.in_place) for d in descs] == [
        ("bf16", "all_reduce", True),
        ("bf16", "all_gather", False),
        ("bf16", "all_gather", True),
        ("bf16", "send_recv", False),
        ("fp32", "all_reduce", True),
        ("fp32", "all_gather", False),
        ("fp32", "all_gather", True),
        ("fp32", "send_recv", False),
    ]
    assert {d.gpu for d in descs} == {"h200_sxm"}


def test_env_guard_sets_nvls_off_and_refuses_overrides():
    env = {"NCCL_DEBUG": "INFO", "PATH": "/bin"}
    recorded = W.check_env(env)
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["NVSHMEM_DISABLE_NVLS"] == "1"
    assert recorded == {
        "NCCL_DEBUG": "INFO",
        "NCCL_NVLS_ENABLE": "0",
        "NVSHMEM_DISABLE_NVLS": "1",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    }
    with pytest.raises(ValueError, match="NCCL_NVLS_ENABLE must be '0'"):
        W.check_env({"NCCL_NVLS_ENABLE": "1"})


def test_plan_calls_from_the_model_estimate():
    assert W.plan_calls(8.0) == (20, 15)  # small: 20 calls per graph, 15 replays
    assert W.plan_calls(13_000.0) == (1, 4)  # 4 GiB all_reduce: one call, 60 ms / 13 ms replays
    assert W.plan_calls(100_000.0) == (1, 3)  # never fewer than 3 replays


def test_summarize_quantiles():
    s = W.summarize(tuple(float(x) for x in range(1, 12)))
    assert s == {"latency_us": 6.0, "p10_us": 2.0, "p90_us": 10.0, "repeats": 11}


def test_parse_tuning_log_measured_excerpt():
    chosen = W.parse_tuning_log((FIX / "nccl_2.28.9_h200x2_tuning_lines.log").read_text(), ranks=2)
    assert chosen[("all_reduce", 1024)] == ("ring", "LL", 1)
    assert chosen[("all_reduce", 16777216)] == ("ring", "SIMPLE", 24)
    # NCCL logs per-rank bytes for all_gather / reduce_scatter: ours are x ranks
    assert chosen[("all_gather", 2048)] == ("ring", "LL", 1)
    assert chosen[("reduce_scatter", 2 * 268435456)] == ("ring", "SIMPLE", 24)


def test_topology_summary_measured():
    assert W.topology_summary((FIX / "h200x2_nvidia_smi_topo.txt").read_text()) == "GPU0-GPU1:NV18"


def test_job_plan_repeats_each_dtype_block(tmp_path):
    plan = nccl_job._plan(nccl_job.JobConfig(tmp_path, "smoke", repeat_every=10), 2, "h200_sxm")
    originals = [p for p in plan if p[2] is None]
    repeats = [p for p in plan if p[2] is not None]
    assert len(originals) == 40 and len(repeats) == 4
    assert all(plan[p[2]][1] == p[1] for p in repeats)
    assert sorted(p[0] for p in plan) == list(range(44))
    schema = dataset.row_schema("collective", extra_columns=nccl_job.EXTRA_COLUMNS)
    assert schema.names[-len(nccl_job.EXTRA_COLUMNS) :] == list(nccl_job.EXTRA_COLUMNS)
    assert "host_loop_us" not in dataset.row_schema("collective").names


def test_measured_dataset_rows():
    files = sorted(DATA.glob("kernelcast_h200_sxm_*.parquet"))
    assert files, "datasets/collective holds the measured 2xH200 shard"
    rows = pq.read_table(files[0]).to_pandas()
    ok = rows[rows.status == "ok"]
    assert len(ok) >= 300 and (ok.latency_us > 0).all() and (ok.p10_us <= ok.p90_us).all()
    assert set(ok.collective) == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"}
    assert set(ok.timer) == {"cuda_graph"} and set(ok.nccl) == {"2.28.9"} and set(ok.topology) == {"GPU0-GPU1:NV18"}
    assert ok.nccl_env.str.contains('"NCCL_NVLS_ENABLE": "0"').all()


@pytest.mark.gpu
@pytest.mark.skipif(_GPUS < 2, reason="needs 2 CUDA GPUs")
def test_job_smoke_on_two_gpus(tmp_path):
    assert nccl_job.main(["--out", str(tmp_path), "--preset", "smoke", "--budget-s", "60", "--repeat-every", "0"]) == 0
    rows = pq.read_table(next(tmp_path.glob("collective/kernelcast_*.parquet"))).to_pandas()
    assert len(rows) == 40 and (rows.status == "ok").all()


def test_collective_rows_with_their_extras_go_through_the_shared_writer(tmp_path):
    from kernelcast.collect.api import LABEL_COLUMNS, PROVENANCE_COLUMNS

    desc = W.sweep(("all_reduce",), ("bf16",), [1 << 20], 2, "H200")[0]
    row = {
        **desc.to_row(),
        **dict.fromkeys(LABEL_COLUMNS),
        **dict.fromkeys(PROVENANCE_COLUMNS),
        "status": "ok",
        "latency_us": 12.5,
        "timer": "cuda_graph",
        "cache": "warm",
        "source": "kernelcast",
        "time": "t",
        "desc_key": desc.key(),
        "plan_index": 0,
        "repeat_of": None,
        "host_loop_us": 30.0,
        "graph_calls": 20,
    }
    writer = dataset.RowWriter(tmp_path, nccl_job.TAG, {"kernelcast.method": nccl_job.METHOD})
    writer.write([row])
    table = pq.read_table(writer.paths[0])
    assert table.column("host_loop_us").to_pylist() == [30.0] and table.column("graph_calls").to_pylist() == [20]
    assert writer.paths[0].parent.name == "collective" and "nccl_algo" not in table.column_names
    with pytest.raises(ValueError, match="'host_loop_us' that the schema lacks"):
        dataset.check_row("gemm", {"op": "gemm", "host_loop_us": 1.0})
