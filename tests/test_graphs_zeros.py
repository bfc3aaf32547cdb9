"""GEMM operands a call fills with zero rows (graphs/zeros.py): followed on meta tensors, and what they do to a
prediction."""

import pytest

torch = pytest.importorskip("torch")

from kernelcast.graphs.capture import capture  # noqa: E402
from kernelcast.graphs.predict import kernel_descs, kernel_table  # noqa: E402
from kernelcast.graphs.zeros import ZERO_ROW_TIMES, ZeroRows, zero_operand_factor  # noqa: E402


def _experts(x, router, gate_up, down, top_k: int):
    """Llama 4's eager expert block, as transformers writes it: every token's hidden state repeated once per expert and
    scaled by the sigmoid of a -inf fill with the token's top-k logits scattered in."""
    logits = x @ router
    top, idx = torch.topk(logits, top_k, dim=1)
    scores = torch.full_like(logits, float("-inf")).scatter_(1, idx, top).transpose(0, 1)
    scores = torch.sigmoid(scores.float()).to(x.dtype)
    routed = x.repeat(scores.shape[0], 1) * scores.reshape(-1, 1)
    g, u = torch.bmm(routed.view(scores.shape[0], -1, x.shape[1]), gate_up).chunk(2, dim=-1)
    out = torch.bmm(torch.nn.functional.silu(g) * u, down)
    return out.view(-1, x.shape[1]).sum(0) + x.sum(0)


def _meta(*shape):
    return torch.empty(*shape, dtype=torch.bfloat16, device="meta")


def _args(experts=16, tokens=512, hidden=1024, ffn=2048):
    return (_meta(tokens, hidden), _meta(hidden, experts), _meta(experts, hidden, 2 * ffn), _meta(experts, ffn, hidden))


def _bmm_shares(fn, args):
    zeros = ZeroRows()
    return [z for rec in capture(fn, args).ops for z in [zeros.op(rec)] if "bmm" in rec.name]


@pytest.mark.parametrize("experts,top_k", [(16, 1), (128, 1), (8, 2)])
def test_router_scaled_expert_inputs_are_zero_but_top_k_of_every_token_rows(experts, top_k):
    shares = _bmm_shares(lambda *a: _experts(*a, top_k=top_k), _args(experts))
    assert shares == pytest.approx([1 - top_k / experts] * 2)  # gate_up's A, and down's A (silu(0)·0) after it


def test_operands_of_unknown_values_and_overwritten_ones_are_not_zero():
    def plain(x, router, gate_up, down):
        a = x.repeat(gate_up.shape[0], 1).view(gate_up.shape[0], -1, x.shape[1])
        return torch.bmm(a, gate_up)

    def overwritten(x, router, gate_up, down):
        z = torch.zeros(gate_up.shape[0], x.shape[0], x.shape[1], dtype=x.dtype, device=x.device)
        first = torch.bmm(z, gate_up)  # all zeros
        z.add_(1.0)  # an in-place write forgets what the storage held
        return first, torch.bmm(z, gate_up)

    assert _bmm_shares(plain, _args()) == [0.0]
    assert _bmm_shares(overwritten, _args()) == [1.0, 0.0]


def test_a_compute_bound_gemm_of_zero_rows_is_predicted_faster_by_the_measured_ratio():
    args = _args(experts=16, tokens=2048, hidden=4096, ffn=4096)
    cap = capture(lambda *a: _experts(*a, top_k=1), args)
    table, _, notes = kernel_table(cap, "H200")
    bmm = table[table["aten_op"].str.contains("bmm")]
    assert (bmm["bound"] == "compute").all() and (bmm["zero_rows"] == 15 / 16).all()
    factor = zero_operand_factor(15 / 16)
    assert factor == pytest.approx(0.841)  # the measured point at 15/16
    assert (bmm["latency_us"] / bmm["label_us"]).to_numpy() == pytest.approx([factor] * 2, rel=1e-3)
    assert any("zero rows" in n for n in notes)
    others = table[~table["aten_op"].str.contains("bmm") & table["desc"].notna()]
    assert (others["zero_rows"] == 0).all()
    factors = [zero_operand_factor(z) for z in (0.0, 0.25, 0.5, 0.9, 1.0, 2.0)]
    assert factors[0] == 1.0 and factors[-2] == factors[-1] == ZERO_ROW_TIMES[-1][1]
    assert all(a >= b for a, b in zip(factors, factors[1:]))  # more zero rows, never slower


def test_kernel_descs_mark_only_gemms():
    table, _, _ = kernel_descs(capture(lambda *a: _experts(*a, top_k=1), _args()), "H200")
    assert set(table.loc[table["zero_rows"] > 0, "family"]) == {"gemm"}


def test_a_compiled_call_scales_its_extern_gemms_by_the_eager_calls_zero_rows():
    pytest.importorskip("triton")
    from kernelcast.graphs.predict import predict_module

    args = _args(experts=16, tokens=2048, hidden=4096, ffn=4096)
    p = predict_module(lambda *a: _experts(*a, top_k=1), args, gpu="H200", mode="compile")
    k = p.kernels
    bmm = k[(k["family"] == "gemm") & k["aten_op"].str.contains("bmm")]
    assert len(bmm) == 2 and (bmm["bound"] == "compute").all()
    ratio = (bmm["latency_us"] / bmm["label_us"]).to_numpy()
    assert ratio == pytest.approx([zero_operand_factor(15 / 16)] * 2, rel=1e-3)
    router = k[(k["family"] == "gemm") & ~k["aten_op"].str.contains("bmm")]
    assert len(router) and (router["latency_us"] / router["label_us"]).to_numpy() != pytest.approx(ratio[:1])
    assert any("zero rows" in n for n in p.assumptions)


def test_the_zero_row_capture_leaves_the_callers_kv_cache_as_it_was():
    transformers = pytest.importorskip("transformers")
    from kernelcast.graphs.capture import own_cache

    cache = transformers.DynamicCache()
    cache.update(_meta(1, 2, 5, 8), _meta(1, 2, 5, 8), 0)
    mine = own_cache(cache)
    mine.update(_meta(1, 2, 3, 8), _meta(1, 2, 3, 8), 0)
    assert (cache.get_seq_length(), mine.get_seq_length()) == (5, 8)
    assert own_cache(args := _meta(2)) is args
