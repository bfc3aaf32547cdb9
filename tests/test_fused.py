"""Fused (Inductor) kernels: random fusion graphs, reading output code, the fused op family, the collector's seams.

Everything here runs on real things: the committed H200 rows (their kernel sources and the layers' whole output code),
torch on CPU for the graphs and Inductor's CPU compile of the collector's call.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from kernelcast.collect import fused_job, fused_merge, fusion_graphs
from kernelcast.features import fused_code
from kernelcast.features.ops.fused import describe

FUSED = "datasets/fused/kernelcast_h200_sxm_20261201_{}.parquet"
TASKS = "datasets/compiled/kernelcast_h200_sxm_20261201_{}_tasks.parquet"


@pytest.fixture(scope="module")
def layer_task():
    tasks = pq.read_table(TASKS.format("layers")).to_pandas()
    return tasks[tasks.task == "layer:llama3_8b:tp1:prefill:b1:s512:c0"].iloc[0]


def test_graphs_are_deterministic_and_boxes_differ():
    a, b = fusion_graphs.random_graph(11, "train"), fusion_graphs.random_graph(11, "train")
    assert a == b
    assert fusion_graphs.random_graph(11, "test").source != a.source
    with pytest.raises(ValueError, match="box must be one of"):
        fusion_graphs.random_graph(1, "wide")


def test_graphs_run_on_meta_tensors():
    for box in fusion_graphs.BOXES:
        for seed in range(60):
            g = fusion_graphs.random_graph(seed, box)
            out = fusion_graphs.compile_source(g.source)(*fusion_graphs.make_inputs(g, "meta"))
            assert isinstance(out, tuple) and out


def test_committed_graph_sources_are_what_the_generator_draws():
    tasks = pq.read_table(TASKS.format("test"), columns=["seed", "box", "graph_source"]).to_pandas()
    for row in tasks.head(50).itertuples():
        assert fusion_graphs.random_graph(int(row.seed), row.box).source == row.graph_source


def test_parse_every_kernel_of_a_compiled_layer(layer_task):
    kernels = fused_code.triton_kernels(layer_task.code)
    measured = [k[0] for k in json.loads(layer_task.kernels) if k[0].startswith("triton_")]
    assert measured and set(measured) <= set(kernels)
    norm = kernels[measured[0]]
    assert norm.kind in ("reduction", "persistent_reduction") and norm.reductions >= 1
    assert norm.xnumel == 512 and norm.rnumel == 4096
    assert norm.read_bytes >= 512 * 4096 * 2 and norm.write_bytes >= 512 * 4096 * 2
    assert len(norm.edges) >= len(norm.nodes) - 4  # a connected data-flow graph, loads to stores
    assert any(n.cls == "store" for n in norm.nodes)


def test_vector_width_of_an_access():
    """Hand-worked index expressions (the forms Inductor writes): a unit-stride term's contiguity bounded by the
    other terms' constancy and the powers of two dividing their coefficients and constants."""
    axes = {
        "x0": fused_code.index_axis("(xindex % 128)"),
        "x1": fused_code.index_axis("((xindex // 128) % 2049)"),
        "x2": fused_code.index_axis("xindex // 262272"),
        "x3": fused_code.index_axis("xindex"),
        "x5": fused_code.index_axis("(xindex % 4091)"),
        "r0_1": fused_code.index_axis("r0_index"),
    }
    assert axes["x0"] == ("x", 128, 1) and axes["x1"] == ("x", 1, 128) and axes["x5"] == ("x", 1, 1)
    assert fused_code.vector_elems("(x0 + 128*(x1) + 262144*x2)", axes) == 128
    assert fused_code.vector_elems("(128*x2 + ((-64) + x0))", axes) == 64
    assert fused_code.vector_elems("(x5 + 4091*x2)", axes) == 1  # an odd row length: no vector
    assert fused_code.vector_elems("(2*x3)", axes) == 1  # strided
    assert fused_code.vector_elems("(1 + 2*x3)", axes) == 1
    assert fused_code.vector_elems("(r0_1 + 4096*x3)", axes) == fused_code.VECTOR_CAP  # along r0; x rows constant
    assert fused_code.vector_elems("(x2)", axes) == 1  # no unit-stride term: lanes share addresses, no vector
    assert fused_code.vector_elems("(0)", axes) == fused_code.VECTOR_CAP  # one address for every lane


def test_vector_width_in_committed_kernels(layer_task):
    """The layer's kernels (model sizes, 128-element heads) vector every access to 16 bytes; a random graph's kernel
    with an odd xnumel under its mask does not."""
    kernels = fused_code.triton_kernels(layer_task.code)
    widths = {min(n.vector * n.elem_bytes, 16) for k in kernels.values() for n in k.nodes if n.cls in ("load", "store")}
    assert widths == {16}
    source = pq.read_table(FUSED.format("train"), columns=["code", "xnumel"]).to_pandas()
    odd = source[(source.xnumel % 2 == 1) & source.code.str.contains("xmask)", regex=False)].code.iloc[0]
    kernel = fused_code.parse_kernel(odd.split("def ", 1)[1].split("(", 1)[0], odd)
    assert any(n.vector == 1 for n in kernel.nodes if n.cls in ("load", "store"))


def test_warm_bytes_follow_the_wrapper(layer_task):
    warm = fused_code.warm_bytes(layer_task.code, 50e6)
    order = [k[0] for k in json.loads(layer_task.kernels) if k[0].startswith("triton_")]
    assert warm[order[0]] == 0  # the first norm reads the layer input: flushed
    silu = next(k for k in order if "silu" in k)
    assert warm[silu] > 0  # reads the gate/up GEMM outputs written just before
    assert fused_code.warm_bytes(layer_task.code, 0.0)[silu] == 0


def test_fused_description_predicts_and_rejects_bad_fields(layer_task):
    from kernelcast import predict_latency

    kernel = next(iter(fused_code.triton_kernels(layer_task.code).values()))
    desc = describe(kernel, "H200")
    pred = predict_latency(desc)
    assert pred.latency_us > 0 and pred.floor_us > 0
    with pytest.raises(ValueError, match="kind"):
        predict_latency({**desc, "kind": "template"})


def test_merge_rows_from_a_measured_call(layer_task):
    raw = {
        "kind": "layer",
        "model": "llama3_8b",
        "tp": 1,
        "phase": "prefill",
        "batch": 1,
        "seq": 512,
        "context": 0,
        "code": layer_task.code,
        "kernels": json.loads(layer_task.kernels),
        "device_us": [layer_task.device_us] * 5,
    }
    rows = fused_merge.kernel_rows(raw, "20261201", "abc")
    assert rows and {r["op"] for r in rows} == {"fused"}
    assert [r["position"] for r in rows] == sorted(r["position"] for r in rows)
    assert rows[0]["code"].startswith("@triton_heuristics.")
    assert fused_merge.split_of(raw) == "layers"


def test_merge_keeps_train_and_test_files_apart(layer_task, tmp_path, capsys):
    """A kernel a test file holds is dropped from a training file, whether the test file is in this merge or already
    on the card (datasets/files.toml), and the other way round."""
    call = {"code": layer_task.code, "kernels": json.loads(layer_task.kernels), "device_us": [layer_task.device_us]}
    raws = {box: tmp_path / f"{box}.jsonl" for box in ("train", "test")}
    for box, path in raws.items():
        path.write_text(json.dumps({"kind": "graph", "box": box, "seed": 100, **call}) + "\n")
    stem = tmp_path / "datasets" / "fused" / "kernelcast_h200_sxm_20261201_{}.parquet"

    def rows(split):
        return pq.read_table(str(stem).format(split)).num_rows

    # both in one merge: the test split drops every kernel the train split holds
    assert fused_merge.main([str(raws["train"]), str(raws["test"]), "--datasets", str(tmp_path / "datasets")]) == 0
    assert rows("train") > 0 and rows("test") == 0
    # a later training merge against a card whose test file holds the same kernels: the training file drops them
    (tmp_path / "datasets" / "files.toml").write_text(
        '[[file]]\npath = "fused/kernelcast_h200_sxm_20261201_train.parquet"\nrole = "test"\n'
    )
    capsys.readouterr()
    fused_merge.main([str(raws["train"]), "--datasets", str(tmp_path / "datasets"), "--day", "20261202"])
    assert "kernels a file of the other role holds, dropped" in capsys.readouterr().out
    assert pq.read_table(str(stem).replace("20261201", "20261202").format("train")).num_rows == 0


def test_task_keys_name_the_task_not_its_measurements():
    tasks = fused_job.plan((0, 5), "train", 3, 2)
    assert len({fused_job.task_key(t) for t in tasks}) == len(tasks)
    row = {**tasks[0], "code": "...", "kernels": [], "device_us": [1.0]}
    assert fused_job.task_key(row) == fused_job.task_key(tasks[0])


def test_collector_compiles_a_graph_as_on_the_gpu():
    """The collector's compile (make_fx over fake tensors + compile_fx) on this CPU: same outputs as eager."""
    import torch

    fn, tensors, eager, extra = fused_job._build(dict(kind="graph", seed=3, box="train"), "cpu")
    compiled, codes = fused_job.compile_code(fn, tuple(tensors))
    assert codes and extra["source"].startswith("def f(")
    with torch.no_grad():
        for got, want in zip(compiled(*tensors), fn(*tensors)):
            assert torch.allclose(got.float(), want.float(), rtol=2e-2, atol=2e-2)


def test_collector_records_how_a_layers_inputs_were_made():
    """A layer task's row says how its call's inputs were made (features.layers.INPUTS), so evaluation replays it so."""
    task = dict(kind="layer", model="gpt2", tp=1, phase="decode", batch=2, seq=1, context=16)
    fn, tensors, eager, extra = fused_job._build(task, "cpu")
    assert extra == {"layer_inputs": "model"}
    eager()  # the call runs on real (CPU) tensors with the mask and cache its model made


def _layer_points(layer_set: str) -> set[tuple]:
    return {
        (t["model"], t["phase"], t["batch"], t["seq"], t["context"])
        for t in fused_job.plan((0, 0), "train", 10_000, 0, fused_job.LAYER_SETS[layer_set])
    }


def test_trained_layers_share_no_point_with_a_compiled_test_set():
    """The compiled layers trained on (layer sets ``train``, ``train2``, ``train3``, ``hybridtrain``) are none of the
    compiled test sets' layers; the first three hold no hybrid (``hybrid`` is their test set) and none of the third
    sealed set's unseen architectures."""
    assert not _layer_points("hybridtrain") & _layer_points("hybrid")
    train = _layer_points("train") | _layer_points("train2") | _layer_points("train3")
    points = sum(map(len, (fused_job.TRAIN_LAYER_POINTS, fused_job.TRAIN2_LAYER_POINTS, fused_job.TRAIN3_LAYER_POINTS)))
    assert len(train) == len(fused_job.TRAIN_LAYER_MODELS) * points
    for test in ("fit", "arch", "arch2", "arch3", "hybrid"):
        assert not train & _layer_points(test), test
    models = {p[0] for p in train}
    assert not models & fused_job.HYBRIDS
    assert not models & {name for name, _ in fused_job.UNSEEN_LAYER_MODELS}
    assert fused_merge.split_of({"kind": "layer", "model": "llama3_8b"}, layer_split="layertrain") == "layertrain"
    assert "layertrain" in fused_merge.TRAIN_SPLITS
