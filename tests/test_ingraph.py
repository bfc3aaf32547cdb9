"""Eager kernels inside a call: which reads are warm in L2, and the in-call measurements as family rows."""

import gzip
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kernelcast.graphs.capture import TensorMeta, capture  # noqa: E402
from kernelcast.graphs.l2 import L2Reads, tensor_bytes  # noqa: E402
from kernelcast.graphs.predict import kernel_descs  # noqa: E402
from kernelcast.pipeline import ingraph  # noqa: E402

RAW = Path(__file__).resolve().parents[1] / "datasets/compiled/kernelcast_h200_sxm_20261203_eager_calls.jsonl.gz"


def _t(storage, shape=(1024,), dtype="bfloat16", stride=None):
    return TensorMeta(shape, stride or (1,) * len(shape), dtype, True, storage)


def test_tensor_bytes_count_a_broadcast_dim_once():
    assert tensor_bytes(_t(1, (8, 1024), "float32", (1024, 1))) == 8 * 1024 * 4
    assert tensor_bytes(_t(1, (8, 1024), "float32", (0, 1))) == 1024 * 4


def test_reads_are_warm_while_an_l2_worth_of_traffic_has_not_passed():
    l2 = L2Reads(l2_bytes=10_000)
    assert l2.kernel([_t(1)], [_t(2)]) == 0  # the call's input starts cold
    assert l2.kernel([_t(2)], [_t(3)]) == 2048  # what the kernel before wrote
    assert l2.kernel([_t(1)], [_t(4)]) == 2048  # read 3 kernels ago: 8 KiB of traffic since, still inside 10 KB
    l2.kernel([_t(5, (4096,), "float32")], [_t(6, (4096,), "float32")])  # 32 KiB passes
    assert l2.kernel([_t(3), _t(2)], [_t(7)]) == 0


def test_predict_module_follows_the_data_between_eager_kernels():
    x = torch.empty(64, 1024, dtype=torch.bfloat16, device="meta")
    table, _, _ = kernel_descs(capture(lambda a: torch.sin(torch.exp(a)).sum(-1), (x,)), "H200")
    warm = [json.loads(k).get("warm_bytes") for k in table["desc"]]
    assert list(table["family"]) == ["elementwise", "elementwise", "reduction"]
    assert warm == [0, 64 * 1024 * 2, 64 * 1024 * 2]


def test_in_call_activities_group_into_the_kernels_descriptions_stand_for():
    # synthetic events (names as CUPTI gives them): a memset opens a reduction, moments open a layer norm
    events = [
        ["void at::native::vectorized_elementwise_kernel<4, AbsFunctor>", 1.0, 0.9, 1.1],
        ["Memset (Device)", 0.5, 0.5, 0.6],
        ["void at::native::reduce_kernel<512, 1>", 2.0, 1.9, 2.2],
        ["void RowwiseMomentsCUDAKernel<float>", 3.0, 2.9, 3.1],
        ["void LayerNormForwardCUDAKernel<float>", 4.0, 3.9, 4.1],
    ]
    groups = ingraph.group_events(events)
    assert [g[1] for g in groups] == [1.0, 2.5, 7.0]
    assert groups[1][0] == "Memset (Device);void at::native::reduce_kernel<512, 1>"


def test_measured_graphs_become_rows_whose_labels_add_up_to_the_call():
    with gzip.open(RAW, "rt") as f:
        raws = [json.loads(next(f)) for _ in range(20)]
    used = 0
    for raw in raws:
        rows, reason = ingraph.graph_rows(raw)
        if reason != "used":
            continue
        used += 1
        assert sum(r["latency_us"] for _, r in rows) == pytest.approx(sum(k[1] for k in raw["kernels"]))
        assert {op for op, _ in rows} <= {"elementwise", "reduction", "copy"}
        assert all(r["method"] == "cupti in call" and r["warm_bytes"] >= 0 for _, r in rows)
    assert used >= 18
