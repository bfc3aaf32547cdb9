"""SDPA with an explicit mask (nineteenth session): the attention description's ``mask`` field and its rule, what the
lowering makes of a bool or additive mask, and the measured rows ``collect/masks_merge.py`` writes."""

import json
from pathlib import Path

import pandas as pd
import pytest

from kernelcast import predict_latency
from kernelcast.collect import masks_merge
from kernelcast.features.vector import build_features
from kernelcast.graphs.capture import OpRecord, TensorMeta
from kernelcast.graphs.lower import EFFICIENT_NOTE, GROUPED_EFFICIENT_NOTE, MASK_NOTE, lower

MASKS = Path(__file__).resolve().parent.parent / "datasets/layers/kernelcast_h200_sxm_20261205_sdpa_masks.jsonl"
#: the attention rows of the card (train and test files alike: this reads measurements, it fits nothing)
ATTENTION_ROWS = MASKS.parent.parent / "attention"
SHAPE = {"batch": 2, "heads_q": 16, "heads_kv": 8, "seq_q": 1024, "seq_kv": 1024, "head_dim": 128}


def _desc(**kw):
    return {"op": "attention", "gpu": "H200", "dtype": "bf16", "backend": "cudnn", **SHAPE, "causal": False, **kw}


def test_the_mask_is_read_per_head_and_only_cudnn_takes_one():
    f = build_features(pd.DataFrame([_desc(gpu="h200_sxm", mask=True), _desc(gpu="h200_sxm", mask=False)]), "attention")
    mask_bytes = 2 * 16 * 1024 * 1024 * 2.0  # batch x heads x seq_q x seq_kv, bf16, once per head
    qkvo = 2 * (2 * 16 * 1024 * 128 * 2) + 2 * (2 * 8 * 1024 * 128 * 2)
    assert f["mask_bytes_share"].tolist() == pytest.approx([mask_bytes / (qkvo + mask_bytes), 0.0])
    for bad in (_desc(mask=True, backend="flash"), _desc(mask=True, causal=True)):
        with pytest.raises(ValueError, match="mask"):
            predict_latency(bad)


def test_a_masked_call_is_predicted_slower_than_the_unmasked_one():
    # measured on the H200 (sdpa_masks): cuDNN's mask-reading kernel 1.1-4.5x the unmasked one over the same keys
    masked, plain = predict_latency(_desc(mask=True)), predict_latency(_desc())
    assert masked.in_distribution and masked.latency_us > 1.2 * plain.latency_us


def _sdpa(mask_dtype: str | None) -> OpRecord:
    q = TensorMeta((2, 16, 1024, 128), (16 * 1024 * 128, 1024 * 128, 128, 1), "bfloat16", True)
    k = TensorMeta((2, 8, 1024, 128), (8 * 1024 * 128, 1024 * 128, 128, 1), "bfloat16", True)
    mask = None if mask_dtype is None else TensorMeta((2, 1, 1024, 1024), (0, 0, 1024, 1), mask_dtype, False)
    return OpRecord("sdpa", (q, k, k), {"attn_mask": mask, "is_causal": mask is None}, ())


def test_a_bool_mask_adds_its_conversion_and_marks_the_kernel_where_cudnn_runs():
    low = lower(_sdpa("bool"), "H200")
    (attn, *conversion) = low.descs
    assert attn["mask"] is True and attn["causal"] is False and low.assumption == MASK_NOTE["cudnn"]
    # two one-element fills, then a select against them: one tensor in, bool to bf16 (the elementwise family's cast)
    assert [d["fn"] for d in conversion] == ["fill", "fill", "cast"] and conversion[-1]["elements"] == 2 * 1024 * 1024
    additive = lower(_sdpa("bfloat16"), "H200")
    assert len(additive.descs) == 1 and additive.descs[0]["mask"] is True  # nothing to convert
    plain = lower(_sdpa(None), "H200")
    assert plain.descs[0]["mask"] is False and plain.descs[0]["causal"] is True and not plain.assumption
    # flash takes no mask: on an A100 the call goes to the memory-efficient kernel, which reads it (analytical); these
    # grouped heads would take torch's math path there, which the capture could not know: said so
    a100 = lower(_sdpa("bool"), "A100")
    assert a100.descs[0]["backend"] == "efficient" and a100.descs[0]["mask"] is True
    assert a100.assumption == "; ".join((EFFICIENT_NOTE, MASK_NOTE["efficient"], GROUPED_EFFICIENT_NOTE))
    assert lower(_sdpa(None), "A100").descs[0]["backend"] == "flash"  # no mask: flash, as before


def test_masks_merge_keeps_one_row_per_shape_and_splits_by_shape():
    records = [json.loads(line) for line in MASKS.read_text().splitlines()]
    split = masks_merge.split_rows(records, "20261205", "abc1234")
    rows = split["masked"] + split["maskedtest"]
    assert len(rows) == len({tuple(r["shape"]) for r in records}) == 279
    assert {r["desc_key"] for r in split["masked"]}.isdisjoint(r["desc_key"] for r in split["maskedtest"])
    assert 0.15 < len(split["maskedtest"]) / len(rows) < 0.35
    additive = next(r for r in records if r["mask"] == masks_merge.LABEL_MASK)
    row = masks_merge.attention_row(additive, "20261205", None)
    assert row["mask"] and not row["causal"] and row["backend"] == "cudnn"
    assert not any("elementwise" in name for name in row["kernel_names"].split(";"))  # no conversion kernels


def test_the_collector_passes_the_window_mask_models_pass_and_checks_against_it():
    """A ``mask`` description is measured with an additive sliding window (0 or -inf, bottom-right aligned, broadcast
    over batch and heads as models pass it); the float64 reference adds the same bias: on the CPU it agrees with SDPA
    given that mask, and differs from the unmasked answer where the window cuts keys off."""
    torch = pytest.importorskip("torch")
    from kernelcast.collect.workloads.attention import MASK_WINDOW, _reference, _window_mask
    from kernelcast.features.desc import parse_desc

    desc = parse_desc(_desc(batch=2, heads_q=4, heads_kv=2, seq_q=3, seq_kv=MASK_WINDOW + 5, head_dim=16, mask=True))
    bias = _window_mask(desc, torch.float32, "cpu")
    assert bias.shape == (2, 1, 3, MASK_WINDOW + 5) and bias.stride()[0] == 0
    last = bias[0, 0, -1]  # the last query sees the last MASK_WINDOW keys
    assert torch.isinf(last[:5]).all() and (last[5:] == 0).all()
    assert torch.isinf(bias[0, 0, 0, -2:]).all()  # bottom-right aligned: the first query stops 2 keys early
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 3, 16, generator=g)
    k, v = (torch.randn(2, 2, MASK_WINDOW + 5, 16, generator=g) for _ in range(2))
    got = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias, enable_gqa=True)
    assert torch.allclose(got.double(), _reference(q, k, v, False, bias)(), atol=1e-5)
    assert not torch.allclose(got.double(), _reference(q, k, v, False)(), atol=1e-3)


def test_mask_rows_cudnn_reads_unpadded_are_aligned_by_seq_kv():
    # cuDNN reads SDPA's 2-byte mask as given; PyTorch pads it to 8 elements a row for the memory-efficient kernel
    rows = [_desc(gpu="h200_sxm", mask=True, seq_kv=s) for s in (1023, 1022, 1020, 1024, 1032)]
    rows += [_desc(gpu="h200_sxm", mask=True, seq_kv=1023, backend="efficient"), _desc(gpu="h200_sxm", seq_kv=1023)]
    f = build_features(pd.DataFrame(rows), "attention")
    assert f["mask_row_align"].tolist() == [1.0, 2.0, 3.0, 4.0, 4.0, 4.0, 4.0]  # log2 bytes: 2, 4, 8, 16 B


def test_measured_cudnn_steps_over_an_odd_length_mask_are_slower_and_predicted_so():
    """On the committed masked cuDNN rows (prefill kernel, head_dim 128, ≥ 2 full waves) a K/V step over mask rows of an
    odd seq_kv takes ≥ 1.3× the time of an even one, on both GPUs; the model answers an odd seq_kv slower too."""
    for gpu in ("h100_sxm", "h200_sxm"):
        files = sorted(ATTENTION_ROWS.glob(f"kernelcast_{gpu}_*masked*.parquet"))
        rows = pd.concat([pd.read_parquet(p) for p in files])
        rows = rows[(rows["backend"] == "cudnn") & (rows["status"] == "ok") & (rows["seq_q"] > 1)]
        rows = rows[(rows["head_dim"] > 64) & (rows["head_dim"] <= 128)]
        tiles = (rows["seq_q"] // -64 * -1) * rows["batch"] * rows["heads_q"]
        waves = tiles // -132 * -1  # the H100 SXM and the H200 both have 132 SMs
        rows = rows.assign(step_ns=rows["latency_us"] * 1e3 / (waves * (rows["seq_kv"] // -128 * -1)))[waves >= 2]
        odd = rows["seq_kv"] % 2 == 1
        assert odd.sum() >= 30 and (~odd).sum() >= 30
        assert rows["step_ns"][odd].median() >= 1.3 * rows["step_ns"][~odd].median()
    odd_call, even_call = (predict_latency(_desc(mask=True, seq_q=s, seq_kv=s)).latency_us for s in (2047, 2048))
    assert odd_call > 1.3 * even_call
