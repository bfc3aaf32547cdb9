"""Collector contracts on CPU: every workload/backend registered, supports() reasons, routing, the trace splitter."""

import numpy as np
import pytest

from kernelcast.collect import timers
from kernelcast.collect.measure import measure_many
from kernelcast.collect.timers import KernelEvent, split_segments, timing_from_segments
from kernelcast.collect.workloads import WORKLOADS, get_backend, register
from kernelcast.collect.workloads.gemm import Cublas
from kernelcast.collect.workloads.moe import routing
from kernelcast.features.desc import parse_desc
from kernelcast.features.fields import OUTSIDE_BACKENDS
from kernelcast.features.ops import get_op
from kernelcast.features.ops.moe import expert_counts

GEMM = {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "cublas", "m": 128, "n": 256, "k": 512}
ATTN = {
    "op": "attention",
    "gpu": "H200",
    "dtype": "bf16",
    "backend": "flash",
    "batch": 1,
    "heads_q": 8,
    "heads_kv": 2,
    "seq_q": 64,
    "seq_kv": 256,
    "head_dim": 128,
    "causal": True,
}
MOE = {
    "op": "moe",
    "gpu": "H200",
    "dtype": "bf16",
    "backend": "torch",
    "tokens": 16,
    "hidden": 64,
    "ffn": 64,
    "experts": 8,
    "top_k": 2,
}


@pytest.mark.parametrize("op", ["gemm", "attention", "moe", "trsm", "conv"])
def test_every_own_backend_is_registered(op):
    own = set(get_op(op).all_backends()) - set(OUTSIDE_BACKENDS)
    assert set(WORKLOADS[op]) == own
    for backend in WORKLOADS[op].values():
        for method in ("supports", "prepare", "build", "check", "class_key", "small"):
            assert callable(getattr(backend, method))


def test_registering_twice_raises():
    with pytest.raises(ValueError, match="registered twice"):
        register("gemm", Cublas())
    with pytest.raises(ValueError, match="not a backend of op 'moe'"):
        register("moe", Cublas())


def test_get_backend_lists_what_exists():
    with pytest.raises(
        ValueError,
        match="kernel_desc\\['backend'\\] must be a measurable backend of op 'gemm': cublas, grouped, triton",
    ):
        get_backend("gemm", "trtllm")


@pytest.mark.parametrize(
    "desc, reason",
    [
        ({**GEMM, "dtype": "fp8_e4m3", "layout": "nn"}, "layout 'nt' and batch 1"),
        ({**GEMM, "dtype": "fp8_e4m3", "n": 250}, "multiples of 16"),
        ({**GEMM, "dtype": "fp8_block"}, "cublas backend measures dtypes"),
        ({**GEMM, "dtype": "bf16", "out_dtype": "fp32"}, "writes bf16"),
        (
            {
                **GEMM,
                "backend": "triton",
                "dtype": "fp32",
                "config": {
                    "block_m": 64,
                    "block_n": 64,
                    "block_k": 32,
                    "group_m": 8,
                    "num_warps": 4,
                    "num_stages": 3,
                    "split_k": 1,
                },
            },
            "triton GEMM measures dtypes bf16, fp16",
        ),
        ({**ATTN, "backend": "cudnn"}, "bottom-right causal"),
        ({**ATTN, "head_dim": 512}, "head_dim <= 256"),
        (
            {
                **ATTN,
                "backend": "triton",
                "head_dim": 96,
                "config": {"block_m": 64, "block_n": 64, "num_warps": 4, "num_stages": 2},
            },
            "power of two",
        ),
        ({**MOE, "dtype": "fp8_e4m3"}, "moe torch measures dtypes bf16, fp16"),
    ],
)
def test_supports_gives_reasons(desc, reason):
    d = parse_desc(desc)
    assert reason in get_backend(d.op, d.backend).supports(d, None)


@pytest.mark.parametrize("desc", [GEMM, {**ATTN, "seq_q": 256}, {**ATTN, "heads_kv": 8, "causal": False}, MOE])
def test_runnable_descs_are_supported(desc):
    d = parse_desc(desc)
    assert get_backend(d.op, d.backend).supports(d, None) is None


def test_unsupported_rows_need_no_gpu():
    rows = measure_many([{**GEMM, "dtype": "fp8_e4m3", "layout": "nn"}], cache="warm")
    assert rows[0]["status"] == "unsupported" and "layout 'nt'" in rows[0]["error"]
    assert rows[0]["latency_us"] is None and rows[0]["cache"] == "warm" and rows[0]["timer"] == "cupti"


def test_bad_timing_args_are_value_errors():
    with pytest.raises(ValueError, match="cache must be one of cold, warm; got 'hot'"):
        measure_many([GEMM], cache="hot")
    with pytest.raises(ValueError, match="repeats must be an integer"):
        measure_many([GEMM], repeats=0)


@pytest.mark.parametrize(
    "tokens, experts, top_k, dist",
    [
        (64, 8, 2, "balanced"),
        (100, 256, 8, "power_law_1.2"),
        (3, 16, 4, "power_law_2.0"),
        (1, 128, 8, "balanced"),
        (10, 4, 2, (10, 10, 0, 0)),
    ],
)
def test_routing_realises_expert_counts_with_distinct_experts(tokens, experts, top_k, dist):
    ids, weights = routing(tokens, experts, top_k, dist)
    assert ids.shape == (tokens, top_k) and weights.shape == (tokens, top_k)
    np.testing.assert_array_equal(
        np.bincount(ids.ravel(), minlength=experts), expert_counts(tokens, experts, top_k, dist)
    )
    assert all(len(set(row)) == top_k for row in ids)
    np.testing.assert_allclose(weights.sum(1), 1.0, rtol=1e-6)
    assert (weights > 0).all()
    again, _ = routing(tokens, experts, top_k, dist)
    np.testing.assert_array_equal(ids, again)


def _ev(name, t, d=10):
    return KernelEvent(name, t, d)


def test_split_segments_drops_setup_and_separators():
    # synthetic trace (unit test only): config 0 = 2 calls, config 1 = 1 call; set-up kernels between configs
    events = [
        _ev("kc_flush_l2", 0),
        _ev("gemm_a", 10, 100),
        _ev("splitKreduce", 120, 5),
        _ev("kc_flush_l2", 200),
        _ev("gemm_a", 210, 90),
        _ev("splitKreduce", 305, 5),
        _ev("kc_end", 400),
        _ev("randn_setup", 410),
        _ev("kc_flush_l2", 500),
        _ev("flash_fwd", 510, 40),
        _ev("kc_end", 600),
    ]
    configs = split_segments(reversed(events))  # order comes from start times, not input order
    assert [[[e.name for e in call] for call in c] for c in configs] == [
        [["gemm_a", "splitKreduce"], ["gemm_a", "splitKreduce"]],
        [["flash_fwd"]],
    ]
    t = timing_from_segments(configs[0], issued=2, repeats=1, clock=1.9e9, error=None)
    assert t.samples_us == (0.095,) and t.kernels == ("gemm_a", "splitKreduce") and t.error is None


def test_timing_flags_lost_or_empty_calls():
    calls = [[_ev("k", 0)], []]
    assert "2 calls" in str(timing_from_segments(calls, 3, 1, None, None).error)
    assert "launched no kernel" in str(timing_from_segments(calls, 2, 1, None, None).error)
    boom = RuntimeError("x")
    assert timing_from_segments(calls, 2, 1, None, boom).error is boom


def test_warm_separator_is_recognised():
    configs = split_segments([_ev("kc_mark", 0), _ev("k", 5), _ev("kc_end", 50)])
    assert [[e.name for e in c] for c in configs[0]] == [["k"]]
    from kernelcast.features.gpu import get_gpu

    assert timers.FLUSH_BYTES >= 4 * get_gpu("H200").l2_bytes  # the flush buffer is several L2s


def test_precompile_targets_one_per_compile_class_plus_check_shapes():
    from kernelcast.collect.precompile import compile_key, compile_targets
    from kernelcast.features.desc import parse_desc

    cfg = {"block_m": 64, "block_n": 64, "block_k": 32, "group_m": 8, "num_warps": 4, "num_stages": 3, "split_k": 1}
    base = {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "triton", "layout": "nt", "config": cfg}
    descs = [parse_desc({**base, "m": m, "n": n, "k": 1024}) for m, n in ((1, 4096), (77, 8192), (5, 1000))]
    descs.append(parse_desc({**base, "backend": "cublas", "config": None, "m": 9, "n": 64, "k": 64}))
    targets = compile_targets(descs)
    # n % 16 == 0 (the first two share a class, and so does the output check's small shape, n = 144), then
    # n = 1000 (its check's n = 131 shares that class: m is not specialized; only n % 16 and k % 16 are)
    assert [(d.m, d.n) for d in targets] == [(1, 4096), (5, 1000)]
    assert compile_key(descs[0]) == compile_key(descs[1]) != compile_key(descs[2]) == compile_key(targets[1])
    assert compile_key(descs[3]) is None


@pytest.mark.parametrize(
    "sweep",
    [
        "copy_wide",
        "copy_test",
        "copy_strided",
        "copy_strided_test",
        "copy_cat_wide",
        "copy_expand",
        "copy_expand_test",
        "copy_stride",
        "copy_stride_test",
        "copy_repeat",
        "elementwise_wide",
        "elementwise_strided",
        "elementwise_strided_test",
        "trsm",
        "trsm_test",
        "conv",
        "conv_test",
    ],
)
def test_the_correctness_checks_small_description_is_valid(sweep):
    """The collector checks each class's output on ``small(desc)``: a field derived from others (copy's ``largest``)
    must be derived again there, or the whole class fails on the GPU (the fifteenth session lost 571 cats so)."""
    from kernelcast.collect.sweeps import expand
    from kernelcast.features.desc import parse_desc

    for desc in expand(sweep, "H200", seed=0)[:300]:
        backend = WORKLOADS[desc.op][desc.backend]
        if backend.supports(desc) is None:
            small = backend.small(desc)
            assert parse_desc({**small.to_row(), "op": desc.op}) == small, desc


def test_an_expand_copy_writes_each_distinct_block_expand_times_in_a_row():
    """A copy whose source repeats (``expand``, as repeat_kv's and an expanded K's): the view the collector makes
    contiguous holds elements/expand distinct values in strided runs, each block written ``expand`` times in a row; the
    output check's small shape keeps it an expand copy. A prime count of runs (13 heads) is measured too, each run
    repeated in a row: repeat_kv's own layout."""
    import torch

    from kernelcast.collect.workloads.copy import repeated_source
    from kernelcast.features.desc import parse_desc

    backend = WORKLOADS["copy"]["torch"]
    for elements, run, expand in ((6 * 64 * 4, 64, 4), (12 * 71, 1, 71), (2 * 96, 96, 2), (13 * 32 * 8, 32, 8)):
        d = parse_desc(dict(op="copy", gpu="H200", dtype="fp32", backend="torch", fn="copy", elements=elements,
                            run=run, expand=expand))  # fmt: skip
        source = torch.arange(elements // expand, dtype=torch.float32)
        view = repeated_source(d, lambda shape, s=source: s.reshape(shape))
        assert view.numel() == elements and 0 in view.stride()
        out = view.contiguous().reshape(view.shape[0], expand, -1)
        assert torch.equal(out, out[:, :1].expand_as(out))  # each block repeated in a row
        assert len(out[:, 0].unique()) == elements // expand  # every distinct element once per repeat
        assert backend.supports(d) is None and backend.small(d).expand == min(expand, 3)


def test_a_strided_copy_reads_its_runs_stride_apart_in_rows_of_distinct_over_stride():
    """The collector's source for a copy with ``stride``: consecutive runs of the output start ``stride`` source
    elements apart, and after ``distinct / stride`` runs (one row) the next row starts one run further on. Left unset,
    ``stride`` is the layout every earlier sweep measured: [a, b, run] transposed with a the largest divisor of the
    runs not above their square root."""
    import torch

    from kernelcast.collect.workloads.copy import repeated_source, transposed_source
    from kernelcast.features.desc import parse_desc

    backend = WORKLOADS["copy"]["torch"]
    for elements, run, stride, expand in ((64 * 300, 1, 64, 1), (16 * 40 * 8, 8, 16 * 8, 1), (64 * 30 * 4, 1, 64, 4)):
        d = parse_desc(dict(op="copy", gpu="H200", dtype="fp32", backend="torch", fn="copy", elements=elements,
                            run=run, stride=stride, expand=expand))  # fmt: skip
        source = torch.arange(elements // expand, dtype=torch.float32)
        make = lambda shape, s=source: s.reshape(shape)  # noqa: E731
        view = repeated_source(d, make) if expand > 1 else transposed_source(d, make)
        out = view.contiguous().reshape(-1, run)[:, 0]  # each run's first source offset, in output order
        row = elements // expand // stride
        first_row = out[:row]
        assert torch.equal(first_row, torch.arange(row) * stride)
        assert out[row * expand] == run  # the next row (past its repeats) starts one run on
        assert backend.supports(d) is None
        small = backend.small(d)
        assert small.stride not in (small.run, small.elements // small.expand)  # the check stays a strided copy
    old = parse_desc(dict(op="copy", gpu="H200", dtype="bf16", backend="torch", fn="copy", elements=6 * 10 * 4, run=4))
    assert old.stride == 10 * 4  # 60 runs split 6 x 10: rows of 6, runs 10 apart
    bad = dict(op="copy", gpu="H200", dtype="bf16", backend="torch", fn="copy", elements=6 * 10 * 4, run=4, stride=28)
    assert "divide the distinct elements 240" in backend.supports(parse_desc(bad))
