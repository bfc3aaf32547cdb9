"""``predict_model``: one step (prefill or decode) of a whole model from its Hugging Face config: every layer kind
captured and predicted once and repeated, the embedding, final norm and LM head, and with tensor parallelism the two
all_reduces per layer from the collective model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from kernelcast.features import layers
from kernelcast.features.gpu import get_gpu
from kernelcast.graphs.predict import MODES, WorkloadPrediction, predict_module
from kernelcast.predictors.dispatch import predict_latency


@dataclass(frozen=True)
class ModelPrediction:
    """A whole step: per part (layer kinds, head, collectives) the count, device and wall time; totals; tokens/s."""

    model: str
    gpu: str
    phase: str
    batch: int
    seq: int
    context: int
    tp: int
    cuda_graph: bool
    parts: pd.DataFrame
    device_us: float
    wall_us: float
    low_us: float  # the device time's 80% interval
    high_us: float
    wall_low_us: float  # the wall time's (graphs.predict.workload_totals)
    wall_high_us: float
    tokens_per_s: float
    layers: dict[str, WorkloadPrediction] = field(repr=False, default_factory=dict)
    assumptions: tuple[str, ...] = ()
    mode: str = "eager"  # eager, or compile: each layer as Inductor compiles it (graphs.predict.MODES)

    def to_dict(self) -> dict[str, Any]:
        keys = (
            "model",
            "gpu",
            "phase",
            "batch",
            "seq",
            "context",
            "tp",
            "cuda_graph",
            "mode",
            "device_us",
            "wall_us",
            "low_us",
            "high_us",
            "wall_low_us",
            "wall_high_us",
            "tokens_per_s",
        )
        return {
            **{k: getattr(self, k) for k in keys},
            "parts": self.parts.to_dict(orient="records"),
            "assumptions": list(self.assumptions),
        }


def _check(name: str, value: Any, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise ValueError(f"{name} must be an integer >= {lo}; got {value!r}")
    return value


def predict_model(
    model: str | Path | dict,
    *,
    gpu: str,
    phase: str = "decode",
    batch: int = 1,
    seq: int | None = None,
    context: int = 0,
    tp: int = 1,
    cuda_graph: bool = False,
    routing: Any = "balanced",
    host_probe_us: float | None = None,
    mode: str = "eager",
) -> ModelPrediction:
    """One forward step of ``model`` (a shipped config name, a config.json path, or a config dict) on ``gpu``.

    prefill: ``batch`` sequences of ``seq`` tokens into an empty cache; decode: ``batch`` × ``seq`` (default 1) new
    tokens against ``context`` cached ones. ``tp`` shards heads and FFN over that many GPUs and adds two all_reduces
    per layer. The LM head computes the last token's logits per sequence, as generation does. ``routing``: how MoE
    layers' experts share their rows (``predict_module``'s); ``host_probe_us``: the host's speed (as there).
    ``mode="compile"``: each layer kind as ``torch.compile`` (Inductor) compiles it on an NVIDIA GPU — its fused
    kernels and extern GEMMs and attention — found from the code Inductor writes here; the embedding, final norm and LM
    head stay eager (their LM head GEMM is the same extern kernel compiled)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if mode == "compile" and routing != "balanced":
        raise ValueError(
            f"routing must be 'balanced' with mode='compile' (compiled experts are predicted so); got {routing!r}"
        )
    if phase not in layers.PHASES:
        raise ValueError(f"phase must be one of {', '.join(layers.PHASES)}; got {phase!r}")
    seq = 1 if seq is None and phase == "decode" else seq
    if seq is None:
        raise ValueError("seq must be given for prefill (tokens per sequence)")
    batch, seq, context, tp = (
        _check(n, v, lo) for n, v, lo in (("batch", batch, 1), ("seq", seq, 1), ("context", context, 0), ("tp", tp, 1))
    )
    gpu_name = get_gpu(gpu).name
    cfg = layers.canonical(model) if isinstance(model, dict) else layers.load_config(model)
    name = model if isinstance(model, str) else cfg.get("_name_or_path") or cfg.get("model_type")
    sharded = layers.shard(cfg, tp)
    rows, preds, notes = [], {}, []
    kinds = layers.layer_kinds(cfg)
    for kind in kinds:
        m = layers.build_model(sharded, dense=kind.dense, per_layer=kind.per_layer)
        call = layers.layer_call(m, phase, batch, seq, context)
        fn, args, kwargs = call.fn, call.args, call.kwargs
        if mode == "compile":  # the layer as a pure function of its tensors, as the GPU collector compiled it
            fn, tensors = layers.functional_layer(call)
            args, kwargs = tuple(tensors), None
        p = predict_module(
            fn,
            args,
            kwargs,
            gpu=gpu_name,
            mode=mode,
            cuda_graph=cuda_graph,
            routing=routing,
            host_probe_us=host_probe_us,
        )
        preds[kind.name] = p
        notes += [a for a in (*p.assumptions, layers.attention_path(m)) if a and a not in notes]
        rows.append(_workload_part(f"layer ({kind.name})", kind.count, p))
    head = _head(m, sharded, gpu_name, batch, seq, cuda_graph, tp, host_probe_us)
    if mode == "compile":
        notes.append("compile: the embedding, final norm and LM head predicted eager")
    rows.append(_workload_part("embedding + norm + LM head", 1, head))
    if tp > 1:
        hidden_bytes = batch * seq * cfg["hidden_size"] * 2
        rows += [
            _collective("", "all_reduce", hidden_bytes, 2 * sum(k.count for k in kinds), gpu_name, tp),
            # the vocab-parallel head: each rank embeds the tokens of its vocabulary shard, then computes its logits
            _collective("embedding ", "all_reduce", hidden_bytes, 1, gpu_name, tp),
            _collective("logits ", "all_gather", batch * _vocab_rows(cfg, tp) * tp * 2, 1, gpu_name, tp),
        ]
        notes.append("TP all_reduces not overlapped with compute (eager PyTorch runs them in stream order)")
        notes.append(f"vocab-parallel embedding and LM head: {_vocab_rows(cfg, tp):,} vocabulary rows per rank")
    parts = pd.DataFrame(rows)
    tot = {c: float((parts[c] * parts["count"]).sum()) for c in TOTALS}
    tokens = batch * seq
    return ModelPrediction(
        model=str(name),
        gpu=gpu_name,
        phase=phase,
        batch=batch,
        seq=seq,
        context=context,
        tp=tp,
        cuda_graph=cuda_graph,
        mode=mode,
        parts=parts,
        tokens_per_s=tokens / (tot["wall_us"] * 1e-6),
        layers=preds,
        assumptions=tuple(notes),
        **tot,
    )


#: a part's times and intervals, summed over parts × counts into the step's
TOTALS = ("device_us", "wall_us", "low_us", "high_us", "wall_low_us", "wall_high_us")


def _part(name: str, count: int, kernels: int, times: Mapping[str, float]) -> dict:
    return {"part": name, "count": count, "kernels": kernels, **{c: float(times[c]) for c in TOTALS}}


def _workload_part(name: str, count: int, p: WorkloadPrediction) -> dict:
    kernels = int((p.kernels["model"] != "unmapped").sum())
    return _part(name, count, kernels, {c: getattr(p, c) for c in TOTALS})


def _head(
    model, cfg: dict, gpu: str, batch: int, seq: int, cuda_graph: bool, tp: int = 1, host_probe_us: float | None = None
) -> WorkloadPrediction:
    """Embedding of the step's tokens, the final norm and the LM head on each sequence's last token. Under ``tp`` the
    vocabulary is sharded as in Megatron/vLLM (vocab-parallel embedding and LM head: ``ceil(vocab / tp)`` rows per
    rank); ``predict_model`` adds the collectives that join the shards."""
    import torch
    import torch.nn.functional as F

    ids = torch.empty(batch, seq, dtype=torch.long, device="meta")
    emb = torch.empty(_vocab_rows(cfg, tp), cfg["hidden_size"], dtype=torch.bfloat16, device="meta")
    lm = torch.empty(_vocab_rows(cfg, tp), cfg["hidden_size"], dtype=torch.bfloat16, device="meta")

    norm = layers.final_norm(model)

    out = model.get_output_embeddings()  # None on a base model (layers.build_model): a bias-free vocab projection

    def head():
        h = F.embedding(ids, emb) if tp > 1 else model.get_input_embeddings()(ids)
        h = h if norm is None else norm(h)
        return F.linear(h[:, -1:, :], lm) if tp > 1 or out is None else out(h[:, -1:, :])

    return predict_module(head, gpu=gpu, cuda_graph=cuda_graph, host_probe_us=host_probe_us)


def _vocab_rows(cfg: dict, tp: int) -> int:
    """Vocabulary rows each rank holds under ``tp`` (``ceil(vocab / tp)``)."""
    return -(-cfg["vocab_size"] // tp)


def _collective(prefix: str, collective: str, nbytes: int, count: int, gpu: str, tp: int) -> dict:
    """A part of ``count`` NCCL ``collective`` calls of ``nbytes`` over ``tp`` ranks, from the collective model."""
    desc = {"op": "collective", "gpu": gpu, "dtype": "bf16", "backend": "nccl", "collective": collective}
    p = predict_latency({**desc, "bytes": nbytes, "ranks": tp})
    # a collective's time per call is its time on the host's clock too (collect/nccl_job.py): wall = device
    times = {"device_us": p.latency_us, "wall_us": p.latency_us, "low_us": p.low_us, "high_us": p.high_us}
    times.update(wall_low_us=p.low_us, wall_high_us=p.high_us)
    return _part(f"{prefix}{collective} {nbytes:,} B x{tp}", count, 1, times)


__all__ = ["ModelPrediction", "predict_model"]
