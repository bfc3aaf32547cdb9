"""Whole decoder layers and the host launch cost on a GPU (issue 14's validation set).

Measurements, one JSON-lines file each under ``--out`` (``--parts`` picks them):

* ``layers.jsonl``: eager decoder layers of real models (``features/layers.py``: the same call ``predict_module``
  predicts), prefill and decode with a KV cache, each call preceded by the L2 flush and a synchronize. Per call:
  device time (sum of its kernels, CUPTI), span (first kernel start to last kernel end: the host launch path shows
  here) and, replayed as a CUDA graph, the same two. The kernels (name, µs) of the median eager call are kept, and
  beside each eager repeat the host's speed at that moment (``host_probe``: µs to issue one small eager op).
* ``launch.jsonl``: N back-to-back calls of one small op, eager and as a CUDA graph: span / N is the per-kernel
  issue interval when the host is the bottleneck; device time / N the kernel itself.
* ``sdpa.jsonl``: which SDPA backend torch picks for attention shapes (the kernel names it launches).
* ``sdpa_masks.jsonl`` (``--parts sdpa_masks``): the kernels SDPA launches, and their µs, for a call with an explicit
  mask — what a model's own forward passes past a sliding window, to a sparse indexer or to Falcon's attention — beside
  the same call with ``is_causal``.

Run on a GPU host: ``python3 -m kernelcast.collect.layer_job --out DIR``. Resumable: a point already in a file is
skipped.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kernelcast.collect.timers import KernelEvent, _separators, _trace_events, split_segments

REPEATS = 8
#: back-to-back issues of one small op that make one host-speed probe (about 1 ms)
PROBE_LAUNCHES = 64
#: (model, tp, phase, batch, seq, context): prefill fills an empty cache, decode adds 1 token to `context`
POINTS_PREFILL = ((1, 128), (1, 512), (1, 2048), (4, 1024), (1, 8192), (2, 333))
POINTS_DECODE = ((1, 512), (8, 2048), (32, 1024), (64, 4096), (128, 512), (16, 8191))
MODELS = (
    ("llama3_8b", 1),
    ("llama3_70b", 8),
    ("qwen2_5_7b", 1),
    ("mistral_7b_v0_3", 1),
    ("qwen3_8b", 1),
    ("mixtral_8x7b", 1),
    ("qwen3_30b_a3b", 1),
    ("deepseek_v3", 8),
)
#: architectures none of the above is (an independent test of the layer harness and predict_module: no constant was
#: fitted on them): GPT-2/OPT/NeoX/Falcon/StarCoder2 layouts, Gemma's softcaps and head_dim 256, Phi's fused
#: projections, OLMo-2's QK norms, Granite's multipliers, GPT-OSS's sinks on its eager attention, shared experts,
#: hybrid linear-attention (Qwen3.5) and Mamba (Nemotron-H) layers
ARCH_MODELS = tuple(
    (name, 1)
    for name in (
        "gpt2",
        "opt_6_7b",
        "pythia_2_8b",
        "falcon_7b",
        "starcoder2_7b",
        "gemma2_9b",
        "gemma3_4b",
        "phi3_mini_4k",
        "olmo2_7b",
        "granite3_8b",
        "gpt_oss_20b",
        "qwen1_5_moe_a2_7b",
        "phi3_5_moe",
        "qwen3_5_27b",
        "nemotron3_nano_30b",
    )
)
#: a second, sealed set measured after the choices ARCH_MODELS' layers informed: those architectures at other points,
#: and five more (Qwen3.5-MoE, MiniMax-M2.5, MiMo-V2-Flash, GPT-OSS-120B, Nemotron-3-Super)
ARCH2_MODELS = ARCH_MODELS + tuple(
    (name, 1) for name in ("qwen3_5_35b_a3b", "minimax_m2_5", "mimo_v2_flash", "gpt_oss_120b", "nemotron3_super_120b")
)
ARCH2_PREFILL = ((1, 777), (3, 1500), (1, 4000))
ARCH2_DECODE = ((2, 3000), (24, 1500), (48, 700))
#: a third, sealed set (fifteenth session, measured with the strided-cat data and read after every choice it made):
#: every model above at five other points, and six architectures no set used (GPT-J's parallel block, StableLM's
#: partial rotary, Command-R's parallel block with its QK-free norm, OLMoE's 64 experts, Phi-1.5, StarCoder's MQA)
ARCH3_MODELS = (
    MODELS
    + ARCH2_MODELS
    + tuple(
        (name, 1) for name in ("gptj_6b", "stablelm_3b", "cohere_command_r", "olmoe_1b_7b", "phi_1_5", "starcoder_15b")
    )
)
ARCH3_PREFILL = ((2, 640), (1, 3000))
ARCH3_DECODE = ((8, 1000), (32, 2500), (96, 300))
#: a fourth, sealed set: ARCH3_MODELS at five more points, measured after every choice the third set informed (the
#: strided cat's run, sliced pointwise inputs, masked_fill's clone, balanced routing's distinct experts)
ARCH4_PREFILL = ((1, 1200), (4, 700))
ARCH4_DECODE = ((4, 4000), (16, 600), (64, 1200))
#: a fifth set (eighteenth session), the first measured with the inputs each model's own forward passes its layers
#: (``features.layers.INPUTS``): the architectures that need them (Llama 4's chunked attention and complex rotary,
#: Gemma 4, GLM-5's and DeepSeek-V3.2's sparse indexer) and those whose inputs changed with them (Gemma 3's sliding
#: window past 1,024 tokens, Falcon's and GPT-J's masks, GPT-OSS's and MiMo's eager attention now masked)
ARCH5_MODELS = tuple(
    (name, 1)
    for name in (
        "llama4_scout",
        "llama4_maverick",
        "gemma4_26b_a4b",
        "gemma4_31b",
        "glm5",
        "deepseek_v3_2",
        "gemma3_4b",
        "falcon_7b",
        "gptj_6b",
        "gpt_oss_20b",
        "mimo_v2_flash",
    )
)
ARCH5_PREFILL = ((1, 1500), (2, 1900))
ARCH5_DECODE = ((8, 1500), (32, 1900))
#: a sixth, sealed set (twenty-second session): ARCH5_MODELS at four other points, measured before the choices the
#: fifth set's misses led to (Llama 4's expert-stack bmm, repeat_kv's broadcast copies) and read once, after them
ARCH6_PREFILL = ((1, 1100), (3, 700))
ARCH6_DECODE = ((4, 1300), (48, 1000))
#: --models: (models, prefill (batch, seq) points, decode (batch, context) points)
MODEL_SETS = {
    "fit": (MODELS, POINTS_PREFILL, POINTS_DECODE),
    "arch": (ARCH_MODELS, POINTS_PREFILL, POINTS_DECODE),
    "arch2": (ARCH2_MODELS, ARCH2_PREFILL, ARCH2_DECODE),
    "arch3": (ARCH3_MODELS, ARCH3_PREFILL, ARCH3_DECODE),
    "arch4": (ARCH3_MODELS, ARCH4_PREFILL, ARCH4_DECODE),
    "arch5": (ARCH5_MODELS, ARCH5_PREFILL, ARCH5_DECODE),
    "arch6": (ARCH5_MODELS, ARCH6_PREFILL, ARCH6_DECODE),
}


def layer_points(models: tuple = MODELS, prefill: tuple = POINTS_PREFILL, decode: tuple = POINTS_DECODE) -> list[dict]:
    out = []
    for model, tp in models:
        out += [dict(model=model, tp=tp, phase="prefill", batch=b, seq=s, context=0) for b, s in prefill]
        out += [dict(model=model, tp=tp, phase="decode", batch=b, seq=1, context=c) for b, c in decode]
    return out


def _summary(seg: list[KernelEvent]) -> tuple[float, float]:
    device = sum(e.dur_ns for e in seg) / 1e3
    span = (max(e.start_ns + e.dur_ns for e in seg) - min(e.start_ns for e in seg)) / 1e3 if seg else 0.0
    return device, span


def median_kernels(segs: list[list[KernelEvent]]) -> list[list]:
    """The (name, µs) of every kernel of the median call (by device time) of ``segs``, one timed call each."""
    med = sorted(segs, key=lambda seg: _summary(seg)[0])[len(segs) // 2]
    return [[e.name[:160], e.dur_ns / 1e3] for e in med]


def host_probe(buf, n: int = PROBE_LAUNCHES) -> float:
    """µs the host takes to issue one small eager op (``buf.add_(1)``: Python, the dispatcher, one kernel launch), over
    ``n`` back-to-back issues on an idle GPU. The host's speed moves (the H200 host ran at two, ~1.75x apart, within
    one point's repeats: benchmarks/RESULTS.md §24), and a launch-bound layer's span moves with it."""
    import torch

    t = time.perf_counter()
    for _ in range(n):
        buf.add_(1.0)
    dt = time.perf_counter() - t
    torch.cuda.synchronize()
    return dt / n * 1e6


def time_calls(
    fns: Sequence[Callable[[], object]], repeats: int = REPEATS, between: Callable[[], object] | None = None
) -> list[list[list[KernelEvent]]]:
    """Each fn called ``repeats`` times after a warm-up, each call between an L2 flush + sync and an end marker;
    ``between()`` runs after each call's end marker (its kernels belong to no call)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    sep, end = _separators("cold")
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for fn in fns:
            for _ in range(repeats):
                sep()
                torch.cuda.synchronize()
                fn()
                end()
                torch.cuda.synchronize()
                if between is not None:
                    between()
    segs = [calls[0] for calls in split_segments(_trace_events(prof))]  # each call is flushed and ended on its own
    if len(segs) != len(fns) * repeats:
        raise RuntimeError(f"trace holds {len(segs)} calls for {len(fns) * repeats} issued")
    return [segs[i * repeats : (i + 1) * repeats] for i in range(len(fns))]


def as_graph(fn: Callable[[], object], after: Callable[[], None] | None = None) -> Callable[[], object]:
    """``fn`` captured in a CUDA graph (after side-stream warm-up); the returned call replays it."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
            if after:
                after()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    if after:
        after()
    return graph.replay


def _stats(segs: list[list[KernelEvent]]) -> dict:
    dev, span = zip(*(_summary(s) for s in segs))
    return {"device_us": list(dev), "span_us": list(span), "kernels": len(segs[0])}


def _append(path: Path, row: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()


def _done(path: Path, keys: tuple[str, ...]) -> set:
    """The ``keys`` values of every row already in ``path`` (a list value as a tuple), to skip on a resumed run."""
    if not path.exists():
        return set()
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {tuple(tuple(r[k]) if isinstance(r[k], list) else r[k] for k in keys) for r in rows}


def run_layers(out: Path, budget_s: float, t0: float, model_set: str = "fit") -> None:
    import torch

    from kernelcast.features import layers

    path = out / "layers.jsonl"
    keys = ("model", "tp", "phase", "batch", "seq", "context")
    done = _done(path, keys)
    points = [p for p in layer_points(*MODEL_SETS[model_set]) if tuple(p[k] for k in keys) not in done]
    by_model: dict = {}
    for p in points:
        by_model.setdefault((p["model"], p["tp"]), []).append(p)
    for (name, tp), pts in by_model.items():
        if time.time() - t0 > budget_s:
            print(f"layers: budget spent, {name} tp{tp} and later not run", flush=True)
            return
        try:
            model = layers.build_model(layers.shard(layers.load_config(name), tp), device="cuda")
        except Exception as exc:  # noqa: BLE001 - recorded per point: the next model still runs
            for p in pts:
                _append(path, dict(p, error=f"build: {type(exc).__name__}: {exc}"[:400]))
            print(f"layers: {name} did not build: {exc}", flush=True)
            continue
        probe_buf = torch.zeros(1, device="cuda")
        for p in pts:
            row = dict(p)
            try:
                with torch.no_grad():
                    call = layers.layer_call(model, p["phase"], p["batch"], p["seq"], p["context"])
                    row["layer_inputs"] = call.inputs  # how the layer's inputs were made (features.layers.INPUTS)

                    def eager(call=call):
                        call.fn(*call.args, **call.kwargs)
                        call.after()

                    probes: list[float] = []

                    def probe(probes=probes, buf=probe_buf):
                        probes.append(host_probe(buf))

                    (segs,) = time_calls([eager], between=probe)
                    row["eager"] = _stats(segs)
                    row["eager"]["host_probe_us"] = [round(x, 3) for x in probes]  # one per timed repeat
                    row["eager"]["kernel_list"] = median_kernels(segs)
                    try:
                        replay = as_graph(lambda call=call: call.fn(*call.args, **call.kwargs), call.after)
                        (gsegs,) = time_calls([replay])
                        row["graph"] = _stats(gsegs)
                    except Exception as exc:  # noqa: BLE001 - recorded per point
                        row["graph_error"] = f"{type(exc).__name__}: {exc}"[:400]
            except Exception as exc:  # noqa: BLE001 - recorded per point
                row["error"] = f"{type(exc).__name__}: {exc}"[:400]
            _append(path, row)
            dev = statistics.median(row["eager"]["device_us"]) if "eager" in row else float("nan")
            print(
                f"layer {name} tp{tp} {p['phase']} b{p['batch']} s{p['seq']} c{p['context']}: {dev:.1f} us "
                f"{row.get('error', '')}",
                flush=True,
            )
        del model
        torch.cuda.empty_cache()


def _launch_ops():
    """name -> a call of one small kernel (its inputs made once)."""
    import torch
    import torch.nn.functional as F

    x = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(1, 8, 16, 64, device="cuda", dtype=torch.bfloat16)
    idx = torch.arange(16, device="cuda")
    return {
        "add": lambda: x + x,
        "mul_scalar": lambda: x * 2.0,
        "silu": lambda: F.silu(x),
        "cast": lambda: x.float(),
        "sum": lambda: x.sum(-1),
        "softmax": lambda: torch.softmax(x, -1),
        "rms_norm": lambda: F.rms_norm(x, (64,), w[0]),
        "cat": lambda: torch.cat([x, x], -1),
        "index_select": lambda: x.index_select(0, idx),
        "contiguous": lambda: x.t().contiguous(),
        "linear": lambda: F.linear(x, w),
        "sdpa": lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True),
        "topk": lambda: torch.topk(x, 2, -1),
    }


def run_launch(out: Path, n: int = 100) -> None:
    path = out / "launch.jsonl"
    done = _done(path, ("op",))
    for name, op in _launch_ops().items():
        if (name,) in done:
            continue

        def many(op=op):
            for _ in range(n):
                op()

        (segs,) = time_calls([many], repeats=5)
        (gsegs,) = time_calls([as_graph(many)], repeats=5)
        e, g = _stats(segs), _stats(gsegs)
        row = {"op": name, "n": n, "eager": e, "graph": g, "kernels_per_call": e["kernels"] / n}
        _append(path, row)
        print(
            f"launch {name}: eager span/n {statistics.median(e['span_us']) / n:.2f} us, "
            f"device/n {statistics.median(e['device_us']) / n:.2f} us, "
            f"graph span/n {statistics.median(g['span_us']) / n:.2f} us",
            flush=True,
        )


def run_sdpa(out: Path) -> None:
    import torch
    import torch.nn.functional as F

    path = out / "sdpa.jsonl"
    if path.exists():
        return
    shapes = [
        (1, 32, 8, 128, 128, 128, 128),
        (4, 32, 8, 1, 2048, 128, 128),
        (1, 128, 128, 512, 512, 192, 128),
        (1, 16, 16, 64, 4096, 64, 64),
        (1, 32, 32, 2048, 2048, 256, 256),
        (8, 64, 8, 1, 8191, 128, 128),
    ]
    for b, hq, hkv, sq, skv, dk, dv in shapes:
        q = torch.randn(b, hq, sq, dk, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hkv, skv, dk, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hkv, skv, dv, device="cuda", dtype=torch.bfloat16)
        for causal in (True, False):
            for gqa in (True, False):
                if not gqa and hq != hkv:
                    kk, vv = k.repeat_interleave(hq // hkv, 1), v.repeat_interleave(hq // hkv, 1)
                else:
                    kk, vv = k, v
                try:
                    call = functools.partial(
                        F.scaled_dot_product_attention, q, kk, vv, is_causal=causal and sq > 1, enable_gqa=gqa
                    )
                    (segs,) = time_calls([call], repeats=2)
                    names = [e.name[:120] for e in segs[0]]
                except Exception as exc:  # noqa: BLE001
                    names = [f"error {type(exc).__name__}: {exc}"[:200]]
                _append(
                    path,
                    {"shape": [b, hq, hkv, sq, skv, dk, dv], "causal": causal, "enable_gqa": gqa, "kernels": names},
                )


#: (batch, query heads, KV heads, query length, key length, head dim, window) of ``run_sdpa_masks``: prefills inside
#: and past a 1,024-token window, head dims 128 and 256 (Gemma), and a decode step; ``mask_shapes`` adds random ones
MASK_SHAPES = (
    (1, 16, 8, 2048, 2048, 128, 1024),
    (2, 32, 16, 1500, 1500, 256, 1024),
    (1, 8, 1, 4000, 4000, 256, 1024),
    (8, 32, 8, 1, 1501, 128, 1024),
)
#: the largest batch x query x key product a random mask shape may have (the float mask SDPA converts a bool one into
#: is that many elements)
MASK_MAX_ELEMENTS = 1 << 28


def mask_shapes(n: int, seed: int = 0) -> list[tuple[int, ...]]:
    """``MASK_SHAPES`` (seed 0 only: another seed is a fresh draw, a test set of its own) then ``n`` shapes drawn
    log-uniform over what models pass SDPA with a mask: prefills of 16 to 16,384 tokens (a fifth of them chunks at the
    end of a longer cache), decode steps over 64 to 32,768 keys, batch 1-64 (decode 1-256), 1-32 KV heads sharing 1-8
    query heads each (at most 128), head dims 64-256 and windows 64-8,192."""
    import numpy as np

    rng = np.random.default_rng(seed)

    def logu(lo: float, hi: float) -> int:
        return int(round(float(np.exp(rng.uniform(np.log(lo), np.log(hi))))))

    shapes = list(MASK_SHAPES) if seed == 0 else []
    first = len(shapes)
    while len(shapes) < first + n:
        hkv = int(rng.choice((1, 2, 4, 8, 16, 32)))
        hq = min(128, hkv * int(rng.choice((1, 2, 4, 8))))
        d = int(rng.choice((64, 80, 96, 128, 192, 256)))
        window = logu(64, 8192)
        if rng.uniform() < 0.3:
            sq, skv, b = 1, logu(64, 32768), logu(1, 256)
        else:
            sq = logu(16, 16384)
            skv = sq + (logu(16, 16384) if rng.uniform() < 0.2 else 0)
            b = logu(1, 64)
        b = max(1, min(b, MASK_MAX_ELEMENTS // (sq * skv)))
        if sq * skv <= MASK_MAX_ELEMENTS:
            shapes.append((b, hq, hkv, sq, skv, d, window))
    return shapes


def sdpa_masks(sq: int, skv: int, window: int, dtype) -> dict:
    """The masks ``run_sdpa_masks`` passes SDPA for ``sq`` queries at the end of ``skv`` keys, as (sq, skv) tensors
    (None: no mask, ``is_causal``): the causal pattern as a bool mask (True: attend), a sliding window of ``window``
    keys as a bool mask, and the same window additive (0 or -inf in ``dtype``)."""
    from kernelcast.collect.workloads.attention import additive, causal_window

    causal, sliding = causal_window(sq, skv, window)
    window_additive = additive(sliding, dtype)
    return {"is_causal": None, "causal_bool": causal, "window_bool": sliding, "window_additive": window_additive}


def run_sdpa_masks(out: Path, n: int, budget_s: float, seed: int = 0) -> None:
    """Each of ``mask_shapes(n)``'s shapes called with each of its masks (one profiler session a shape), until
    ``budget_s`` seconds have passed; a shape whose calls fail together is retried mask by mask, recording which
    fail."""
    import torch
    import torch.nn.functional as F

    t0 = time.time()
    path = out / "sdpa_masks.jsonl"
    done = _done(path, ("shape", "mask", "window"))
    for b, hq, hkv, sq, skv, d, window in mask_shapes(n, seed):
        if time.time() - t0 > budget_s:
            break
        shape = (b, hq, hkv, sq, skv, d)
        todo = {k: m for k, m in sdpa_masks(sq, skv, window, torch.bfloat16).items() if (shape, k, window) not in done}
        if not todo:
            continue
        q = torch.randn(b, hq, sq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hkv, skv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hkv, skv, d, device="cuda", dtype=torch.bfloat16)
        calls = {}
        for name, mask in todo.items():
            m = None if mask is None else mask.to("cuda")[None, None].expand(b, 1, sq, skv)  # as models pass it
            calls[name] = functools.partial(
                F.scaled_dot_product_attention, q, k, v, attn_mask=m, is_causal=m is None and sq > 1, enable_gqa=True
            )
        try:
            timed = dict(zip(calls, time_calls(list(calls.values()), repeats=3)))
        except Exception:  # noqa: BLE001 - one of them failed: each alone says which
            timed = {}
            for name, call in calls.items():
                try:
                    (timed[name],) = time_calls([call], repeats=3)
                except Exception as exc:  # noqa: BLE001 - recorded: which masks a backend refuses is the finding
                    timed[name] = f"{type(exc).__name__}: {exc}"[:300]
        for name, segs in timed.items():
            row = {"shape": list(shape), "mask": name, "window": window}
            if isinstance(segs, str):
                row["error"] = segs
            else:
                row["kernels"] = median_kernels(segs)
                row["device_us"] = [_summary(s)[0] for s in segs]
            _append(path, row)
        del q, k, v, calls
        torch.cuda.empty_cache()


#: ``run_sdpa_backend``'s calls, SDPA left to choose its kernel (causal, no mask): name -> (batch, query heads,
#: key/value heads, sequence, head dim, dtype). What ``graphs.lower.attention_backend`` says torch picks, checked: cuDNN
#: to head_dim 256, the memory-efficient kernel past it (Gemma 4's full-attention layers, 512, ran it) and for fp32, and
#: a grouped call past 256 on the math path (the memory-efficient kernel takes no grouped heads)
BACKEND_CALLS = {
    "d256": (1, 32, 32, 1500, 256, "bfloat16"),
    "d264": (1, 32, 32, 1500, 264, "bfloat16"),
    "d512": (1, 32, 32, 1500, 512, "bfloat16"),
    "d512_gqa": (1, 32, 4, 1500, 512, "bfloat16"),
    "d128_fp32": (1, 32, 32, 1500, 128, "float32"),
}


def sdpa_backend_calls(device: str = "cuda", scale: float = 1.0) -> dict:
    """The calls ``run_sdpa_backend`` times (``BACKEND_CALLS``; sizes times ``scale``, at least one)."""
    import torch
    import torch.nn.functional as F

    calls = {}
    for name, (b, hq, hkv, s, d, dtype) in BACKEND_CALLS.items():
        s = max(1, int(s * scale))
        q = torch.randn(b, hq, s, d, device=device, dtype=getattr(torch, dtype))
        k, v = (torch.randn(b, hkv, s, d, device=device, dtype=q.dtype) for _ in range(2))
        calls[name] = functools.partial(F.scaled_dot_product_attention, q, k, v, is_causal=True, enable_gqa=hq != hkv)
    return calls


def run_sdpa_backend(out: Path) -> None:
    """Which kernel SDPA launches, left to choose, for each ``BACKEND_CALLS`` call: one record per call."""
    calls = sdpa_backend_calls()
    for name, segs in zip(calls, time_calls(list(calls.values()), repeats=3)):
        _append(
            out / "sdpa_backend.jsonl", {"call": name, "shape": BACKEND_CALLS[name], "kernels": median_kernels(segs)}
        )


#: ``--parts broadcast_copy``: copies whose source repeats along a stride-0 dim, as decoder layers materialize them
#: (transformers' ``repeat_kv``; Falcon's multi-query K and V expanded over its 71 heads for eager attention's bmm),
#: name -> (kind, batch, kv heads, repeats, seq, head_dim, dtype). ``repeat_kv``: [b, kv, s, d] expanded to
#: [b, kv, n, s, d] and reshaped (contiguous runs of s·d); ``expand_v``: [b, kv, s, d] expanded over n heads and made
#: contiguous (the same runs); ``expand_kt``: K transposed to [b, kv, d, s] and made contiguous so (runs of one
#: element); ``plain*``: the same output from a permuted source of full size (no repeats), the copy family's own case,
#: for the ratio. Every layer set's decode misses in Falcon and Gemma 4 are these copies (RESULTS §36); the copy family
#: has no field for the repeats.
BROADCAST_COPIES = {
    "repeat_kv_g4": ("repeat_kv", 32, 16, 2, 1501, 256, "bfloat16"),
    "repeat_kv_g8": ("repeat_kv", 16, 8, 8, 4096, 128, "bfloat16"),
    "repeat_kv_g4_short": ("repeat_kv", 64, 8, 4, 512, 128, "bfloat16"),
    "plain_kv_g4": ("plain", 32, 32, 1, 1501, 256, "bfloat16"),
    "plain_kv_g8": ("plain", 16, 64, 1, 4096, 128, "bfloat16"),
    "expand_v_71": ("expand_v", 64, 1, 71, 1201, 64, "float32"),
    "expand_v_71_b8": ("expand_v", 8, 1, 71, 4096, 64, "float32"),
    "expand_v_32_bf16": ("expand_v", 32, 1, 32, 2048, 128, "bfloat16"),
    "expand_kt_71": ("expand_kt", 64, 1, 71, 1201, 64, "float32"),
    "expand_kt_71_b8": ("expand_kt", 8, 1, 71, 4096, 64, "float32"),
    "expand_kt_32_bf16": ("expand_kt", 32, 1, 32, 2048, 128, "bfloat16"),
    "plain_v_71": ("plain", 64, 71, 1, 1201, 64, "float32"),
    "plain_kt_71": ("plain_t", 64, 71, 1, 1201, 64, "float32"),
}


def broadcast_copy_calls(device: str = "cuda", scale: float = 1.0) -> dict:
    """The calls ``run_broadcast_copy`` times (``BROADCAST_COPIES``; batch times ``scale``, at least one)."""
    import torch

    calls = {}
    for name, (kind, b, kv, n, s, d, dtype) in BROADCAST_COPIES.items():
        b = max(1, int(b * scale))
        x = torch.randn(b, kv, s, d, device=device, dtype=getattr(torch, dtype))
        if kind == "repeat_kv":
            calls[name] = functools.partial(lambda x, n: x[:, :, None].expand(-1, -1, n, -1, -1).flatten(1, 2), x, n)
        elif kind == "expand_v":  # as ``reshape`` copies a view it cannot keep: a clone in contiguous format
            calls[name] = functools.partial(lambda x, n: x.expand(-1, n, -1, -1).contiguous(), x, n)
        elif kind == "expand_kt":
            calls[name] = functools.partial(lambda x, n: x.transpose(-1, -2).expand(-1, n, -1, -1).contiguous(), x, n)
        elif kind == "plain":  # [b, s, kv, d] viewed as [b, kv, s, d]: runs of d elements, no repeats
            src = x.transpose(1, 2).contiguous().transpose(1, 2)
            calls[name] = functools.partial(torch.clone, src, memory_format=torch.contiguous_format)
        else:  # plain_t: the transposed K of full size, runs of one element
            calls[name] = functools.partial(torch.clone, x.transpose(-1, -2), memory_format=torch.contiguous_format)
    return calls


def run_broadcast_copy(out: Path) -> None:
    """The kernels of each ``BROADCAST_COPIES`` copy, cold L2: one record per call."""
    calls = broadcast_copy_calls()
    for name, segs in zip(calls, time_calls(list(calls.values()), repeats=5)):
        _append(
            out / "broadcast_copy.jsonl",
            {"call": name, "shape": BROADCAST_COPIES[name], "kernels": median_kernels(segs)},
        )


#: layer calls a profiler trace is exported for (``--parts trace``): fixtures of ``kernelcast trace``
TRACE_POINTS = (("llama3_8b", 1, "prefill", 1, 512, 0), ("qwen3_30b_a3b", 1, "decode", 8, 1, 2048))


def run_trace(out: Path) -> None:
    """A torch.profiler Chrome trace (CPU + CUDA, record_shapes) of one warm call of each ``TRACE_POINTS`` layer."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from kernelcast.features import layers

    for name, tp, phase, batch, seq, context in TRACE_POINTS:
        model = layers.build_model(layers.shard(layers.load_config(name), tp), device="cuda")
        with torch.no_grad():
            call = layers.layer_call(model, phase, batch, seq, context)
            for _ in range(3):
                call.fn(*call.args, **call.kwargs)
                call.after()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
                call.fn(*call.args, **call.kwargs)
                torch.cuda.synchronize()
            call.after()
        prof.export_chrome_trace(str(out / f"trace_{name}_{phase}_b{batch}_s{seq}_c{context}.json"))
        del model
        torch.cuda.empty_cache()


def run_once(out: Path) -> None:
    """One warm-up and one call of the first ``TRACE_POINTS`` layer: the process ``ncu`` profiles."""
    import torch

    from kernelcast.features import layers

    name, tp, phase, batch, seq, context = TRACE_POINTS[0]
    model = layers.build_model(layers.shard(layers.load_config(name), tp), device="cuda")
    with torch.no_grad():
        call = layers.layer_call(model, phase, batch, seq, context)
        for _ in range(2):
            call.fn(*call.args, **call.kwargs)
            call.after()
    torch.cuda.synchronize()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelcast.collect.layer_job", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="output folder (resumable)")
    p.add_argument("--budget-s", type=float, default=400.0, help="layers: no new model after this many s")
    p.add_argument(
        "--parts",
        default="sdpa,launch,layers",
        help="comma-separated: sdpa, sdpa_masks, sdpa_backend, broadcast_copy, launch, layers, trace, once",
    )
    p.add_argument("--mask-shapes", type=int, default=150, help="random shapes sdpa_masks adds to its fixed four")
    p.add_argument("--mask-budget-s", type=float, default=60.0, help="sdpa_masks starts no new shape after this")
    p.add_argument("--mask-seed", type=int, default=0, help="sdpa_masks' draw (0: the fixed four shapes first)")
    p.add_argument("--models", default="fit", choices=tuple(MODEL_SETS), help="the layers' model set")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = args.parts.split(",")
    if "sdpa" in parts:
        run_sdpa(out)
    if "sdpa_masks" in parts:
        run_sdpa_masks(out, args.mask_shapes, args.mask_budget_s, args.mask_seed)
    if "sdpa_backend" in parts:
        run_sdpa_backend(out)
    if "broadcast_copy" in parts:
        run_broadcast_copy(out)
    if "launch" in parts:
        run_launch(out)
    if "layers" in parts:
        run_layers(out, args.budget_s, time.time(), args.models)
    if "trace" in parts:
        run_trace(out)
    if "once" in parts:
        run_once(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
