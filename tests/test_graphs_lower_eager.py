"""graphs/lower.py against what eager torch launches on the H200 (issue 15, fusion benefit): a ``where`` over values
of two dtypes casts one first (a kernel of its own), and ``amin`` is lowered as the ``amax`` kernel it shares."""

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kernelcast.collect.fusion_graphs import TORCH_DTYPE, compile_source  # noqa: E402
from kernelcast.graphs.capture import capture  # noqa: E402
from kernelcast.graphs.lower import lower  # noqa: E402
from kernelcast.graphs.predict import predict_module  # noqa: E402

TEST_GRAPHS = (
    Path(__file__).resolve().parent.parent / "datasets/compiled/kernelcast_h200_sxm_20261201_test_tasks.parquet"
)


def meta(*shape, dtype=torch.bfloat16):
    return torch.empty(*shape, device="meta", dtype=dtype)


def lowered(fn, *args):
    return [d for rec in capture(fn, args).ops for d in lower(rec, "H200").descs]


def test_where_over_two_dtypes_casts_the_other_value_first():
    a, b = meta(64, 300, dtype=torch.float32), meta(64, 300)
    descs = lowered(lambda a, b: torch.where(a > 0, a, b), a, b)
    assert [d["fn"] for d in descs] == ["compare", "cast", "where"]
    cast = descs[1]
    assert (cast["in_dtype"], cast["dtype"], cast["elements"]) == ("bf16", "fp32", 64 * 300)
    assert descs[2]["dtype"] == "fp32" and descs[2]["elements"] == 64 * 300


def test_where_casts_a_broadcast_value_at_its_own_size():
    a, b = meta(64, 300), meta(1, 300, dtype=torch.float32)
    descs = lowered(lambda a, b: torch.where(a > 0, a, b), a, b)
    assert [d["fn"] for d in descs] == ["compare", "cast", "where"]
    assert (descs[1]["in_dtype"], descs[1]["dtype"], descs[1]["elements"]) == ("bf16", "fp32", 64 * 300)
    descs = lowered(lambda a, b: torch.where(b > 0, b, a), a, b)
    assert (descs[1]["in_dtype"], descs[1]["elements"]) == ("bf16", 64 * 300)


def test_where_of_one_dtype_or_a_python_number_is_one_kernel():
    a, b = meta(64, 300), meta(64, 300)
    assert [d["fn"] for d in lowered(lambda a, b: torch.where(a > 0, a, b), a, b)] == ["compare", "where"]
    assert [d["fn"] for d in lowered(lambda a: torch.where(a > 0, a, 0.5), a)] == ["compare", "where"]


def test_masked_fill_out_of_place_clones_then_fills():
    """torch's ``masked_fill`` is ``self.clone()`` then ``masked_fill_``: a Memcpy DtoD of the whole tensor (158 µs of
    Mixtral's 1×3000 prefill expert output, measured) before the fill kernel; the in-place one is the fill alone."""
    x, m = meta(64, 1024), meta(64, 1, dtype=torch.bool)
    clone, fill = lowered(lambda x, m: x.masked_fill(m, 0.0), x, m)
    assert (clone["op"], clone["fn"], clone["elements"], clone["run"]) == ("copy", "copy", 64 * 1024, 64 * 1024)
    assert (fill["op"], fill["fn"], fill["broadcast_elements"]) == ("elementwise", "where", 64)
    assert [d["fn"] for d in lowered(lambda x, m: x.masked_fill_(m, 0.0), x, m)] == ["where"]


def test_operands_of_other_ranks_in_one_memory_order_are_dense():
    """An RMSNorm weight [n] times a one-token activation [1, 1, n]: both contiguous, aligned from the last dim as
    broadcasting aligns them — the vectorized kernel (the README's `kernelcast layer --tokens 1` failed on it)."""
    (mul,) = lowered(lambda w, x: w * x, meta(4096), meta(1, 1, 4096))
    assert (mul["contiguous"], mul["dense"]) == (True, True)
    (half,) = lowered(lambda w, x: w * x[..., :4096], meta(4096), meta(1, 2, 8192))
    assert (half["contiguous"], half["dense"]) == (False, False)


def test_amin_is_lowered_as_the_amax_kernel():
    x = meta(96, 4000)
    (mn,) = lowered(lambda x: x.amin(dim=-1), x)
    (mx,) = lowered(lambda x: x.amax(dim=-1), x)
    assert mn == mx and mn["fn"] == "amax"
    (mid,) = lowered(lambda x: x.amin(dim=0, keepdim=True), x)
    assert mid | {"fn": "amax", "outer": 1, "reduce": 96, "inner": 4000} == mid
    (mn_dim,) = lowered(lambda x: torch.min(x, dim=1).values, x)
    assert mn_dim["fn"] == "amax"


@pytest.mark.skipif(not TEST_GRAPHS.exists(), reason="the sealed fusion test graphs are not in this checkout")
def test_eager_kernel_count_of_measured_graphs_with_a_two_dtype_where():
    """Every reduction-free test graph with a where over two dtypes: the predicted eager kernels are the ones the
    H200 launched (a reduction may add a memset or a second norm kernel that its one description covers)."""
    import pandas as pd

    tasks = pd.read_parquet(TEST_GRAPHS, columns=["task", "graph_source", "graph_inputs", "eager_kernels"])
    checked = 0
    for r in tasks.itertuples():
        if "torch.where" not in r.graph_source or any(
            s in r.graph_source for s in (".sum(", ".mean(", ".amax(", ".amin(", "softmax", "layer_norm")
        ):
            continue
        specs = json.loads(r.graph_inputs)
        if len({dt for _, dt in specs}) < 2 and ".to(" not in r.graph_source:
            continue
        inputs = tuple(meta(*shape, dtype=getattr(torch, TORCH_DTYPE[dt].split(".")[1])) for shape, dt in specs)
        p = predict_module(compile_source(r.graph_source), inputs, gpu="H200")
        casts = sum(1 for d in p.kernels["desc"] if d and json.loads(d)["fn"] == "cast")
        if not any(op == "aten.where.self" for op in p.kernels["aten_op"]) or not casts:
            continue
        assert len(p.kernels) == r.eager_kernels, r.task
        checked += 1
    assert checked >= 30


def test_ops_past_32bit_offsets_run_as_the_pieces_tensoriterator_splits_them_into():
    """Nemotron-H's Mamba reference path multiplies two broadcast fp32 tensors into 2**31 elements (8 GiB): on the H200
    that ran as 4 multiply kernels and its sum as 4 reduce kernels, the 2**30-element ones as 2 each."""
    a, b = meta(8, 1, 2048, 128, dtype=torch.float32), meta(8, 1024, 1, 128, dtype=torch.float32)  # 2**31 out
    descs = lowered(lambda a, b: (a * b).sum(-1), a, b)
    muls = [d for d in descs if d["op"] == "elementwise"]
    sums = [d for d in descs if d["op"] == "reduction"]
    assert len(muls) == 4 and {d["elements"] for d in muls} == {2**29}
    assert len(sums) == 4 and {(d["outer"], d["reduce"], d["inner"]) for d in sums} == {(2**22, 128, 1)}
    assert len(lowered(lambda a, b: a * b, a[:4], b[:4])) == 2
    small = lowered(lambda a, b: (a * b).softmax(-1), a[:1], b[:1])  # 1 GiB: one kernel each
    assert [d["op"] for d in small] == ["elementwise", "reduction"]


def test_a_gemm_operand_sliced_from_a_wider_tensor_is_described_at_its_rows_alignment():
    """GPT-OSS drops its sink column off the attention scores: the second bmm's A is [128, 1900, 1900] with rows 1,901
    apart, and cuBLAS runs an ``align1`` kernel for it (836 µs measured on the H200, 500 predicted as aligned). The
    description moves k to the next value with the leading dimension's power of two and says so; an aligned copy of
    the same operand, or rows more aligned than k, keep the dims."""
    scores, v = meta(128, 1900, 1901), meta(128, 1900, 64)
    [rec] = capture(lambda s, v: torch.bmm(s[..., :-1], v), (scores, v)).ops[-1:]
    low = lower(rec, "H200")
    [desc] = low.descs
    assert (desc["m"], desc["n"], desc["k"], desc["batch"], desc["layout"]) == (1900, 64, 1901, 128, "nn")
    assert "k 1900 → 1901" in low.assumption
    assert [
        d["k"] for d in lowered(lambda s, v: torch.bmm(s[..., :-1].contiguous(), v), scores, v) if d["op"] == "gemm"
    ] == [1900]
    x, w = meta(512, 4096), meta(1024, 4096)
    assert [d["k"] for d in lowered(lambda x, w: x[:, :4095] @ w.t()[:4095], x, w) if d["op"] == "gemm"] == [4095]
    # an nn B whose rows are 66 apart for n = 64: n moves to 66 (2 dividing both)
    b = meta(4096, 66)
    [desc] = [d for d in lowered(lambda a, b: a @ b[:, :64], meta(512, 4096), b) if d["op"] == "gemm"]
    assert (desc["n"], desc["k"], desc["layout"]) == (66, 4096, "nn")


def test_a_strided_copy_says_how_far_apart_its_runs_sit_in_the_source():
    """A head split made contiguous ([tokens, heads, d] to [heads, tokens, d]) reads runs of d that sit heads·d apart;
    a multi-query model's expanded transposed key (Falcon's [b, 1, s, d] key as [b, 71, d, s]) reads runs of one
    element one head_dim apart, in rows of a whole context. repeat_kv's expand writes each head's run again in a row:
    rows of one run, ``stride`` the distinct elements (the layout ``copy_repeat`` measures)."""
    x = meta(300, 16, 64)
    (split,) = lowered(lambda x: x.transpose(0, 1).contiguous(), x)
    assert (split["run"], split["stride"]) == (64, 16 * 64)
    k = meta(2, 1, 500, 64, dtype=torch.float32)
    (falcon,) = lowered(lambda k: k.transpose(-1, -2).expand(2, 71, 64, 500).contiguous(), k)
    assert (falcon["run"], falcon["expand"], falcon["stride"]) == (1, 71, 64)
    kv = meta(2, 4, 100, 128)
    (rep,) = lowered(lambda kv: kv[:, :, None].expand(2, 4, 3, 100, 128).reshape(2, 12, 100, 128), kv)
    assert (rep["run"], rep["expand"], rep["stride"]) == (100 * 128, 3, 2 * 4 * 100 * 128)
