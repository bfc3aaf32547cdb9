"""Subcommands for whole workloads: ``model`` (a whole step of a real model), ``layer`` (one decoder layer of it, a
view of ``model``), ``fusion`` (one layer eager against torch.compile, region by region) and ``trace`` (a profiled
run against predictions and floors)."""

from __future__ import annotations

import argparse
import json

import pandas as pd

from kernelcast.features import layers


def _ints(flag: str, text: str, lo: int) -> list[int]:
    try:
        values = [int(t) for t in str(text).split(",")]
    except ValueError:
        raise ValueError(f"{flag} must be comma-separated integers >= {lo}; got {text!r}") from None
    if any(v < lo for v in values):
        raise ValueError(f"{flag} must be comma-separated integers >= {lo}; got {text!r}")
    return values


def _fmt(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, float_format=lambda v: f"{v:,.1f}")


def _routing(text: str):
    """--routing: balanced, power_law_<alpha>, or a JSON list of per-expert row counts."""
    text = text.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"--routing must be balanced, power_law_<alpha> or a JSON list of counts; got {text!r}"
            ) from exc
    return text


def _mapped(p):
    """The CLI answers only when every kernel of the step was predicted: an unmapped kernel (a description out of its
    family's range, an op with no model) is the error, naming the op and the reason; the API lists it instead."""
    for kind, wp in p.layers.items():
        bad = wp.unmapped
        if len(bad):
            op, note = bad.iloc[0]["aten_op"], bad.iloc[0]["note"]
            raise ValueError(f"{len(bad)} kernel(s) of the {kind} layer cannot be predicted; first: {op}: {note}")
    return p


def cmd_model(args: argparse.Namespace) -> int:
    from kernelcast.graphs.model import predict_model

    out = []
    for gpu in args.gpus.split(","):
        for batch in _ints("--batch", args.batch, 1):
            p = predict_model(
                args.model,
                gpu=gpu,
                phase=args.phase,
                batch=batch,
                seq=args.seq,
                context=args.context,
                tp=args.tp,
                cuda_graph=args.cuda_graph,
                routing=_routing(args.routing),
                host_probe_us=args.host_probe_us,
                mode=args.mode,
            )
            out.append(_mapped(p))
    if args.json:
        print(json.dumps([p.to_dict() for p in out], indent=2, default=str))
        return 0
    for p in out:
        print(
            f"{p.model} on {p.gpu}: {p.phase}, batch {p.batch} x {p.seq} tokens, context {p.context}, tp {p.tp}, "
            f"{p.mode}{', CUDA graph' if p.cuda_graph else ''}"
        )
        print(_fmt(p.parts))
        print(
            f"step: device {p.device_us / 1e3:,.3f} ms ({p.low_us / 1e3:,.3f}-{p.high_us / 1e3:,.3f}), "
            f"wall {p.wall_us / 1e3:,.3f} ms ({p.wall_low_us / 1e3:,.3f}-{p.wall_high_us / 1e3:,.3f}; 80% intervals), "
            f"{p.tokens_per_s:,.0f} tokens/s"
        )
        if args.kernels:
            for kind, wp in p.layers.items():
                print(f"kernels of one {kind} layer:")
                print(_fmt(wp.kernels[["aten_op", "family", "latency_us", "floor_us", "bound", "model", "share"]]))
        for a in p.assumptions:
            print(f"  assumes: {a}")
        print()
    return 0


def cmd_layer(args: argparse.Namespace) -> int:
    """One decoder layer at each token count: `model`'s layer part, for --tokens new tokens against --context."""
    from kernelcast.graphs.model import predict_model

    rows = []
    for gpu in args.gpus.split(","):
        for tokens in _ints("--tokens", args.tokens, 1):
            phase = "decode" if args.context else "prefill"
            p = predict_model(
                args.model,
                gpu=gpu,
                phase=phase,
                batch=1,
                seq=tokens,
                context=args.context,
                tp=args.tp,
                cuda_graph=args.cuda_graph,
                host_probe_us=args.host_probe_us,
                mode=args.mode,
            )
            for kind, wp in _mapped(p).layers.items():
                rows.append(
                    {
                        "gpu": p.gpu,
                        "tokens": tokens,
                        "layer": kind,
                        "kernels": len(wp.kernels),
                        "device_us": wp.device_us,
                        "wall_us": wp.wall_us,
                        "low_us": wp.low_us,
                        "high_us": wp.high_us,
                        "wall_low_us": wp.wall_low_us,
                        "wall_high_us": wp.wall_high_us,
                        "device_share": _top(wp.kernels),
                    }
                )
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    print(
        f"{args.model}, one decoder layer, bf16, tp={args.tp}, context={args.context}, "
        f"{args.mode}{', CUDA graph' if args.cuda_graph else ''} (kernel by kernel: `kernelcast model --kernels`)"
    )
    print(_fmt(pd.DataFrame(rows)))
    return 0


def _top(kernels: pd.DataFrame) -> str:
    k = kernels[kernels["model"] != "unmapped"]
    if not len(k):
        return ""
    by = k.groupby("family")["latency_us"].sum().sort_values(ascending=False)
    return ", ".join(f"{f} {v / by.sum():.0%}" for f, v in by.head(3).items())


def cmd_trace(args: argparse.Namespace) -> int:
    from kernelcast.graphs import trace

    table = trace.analyze(args.file, args.gpu)
    tot = trace.totals(table)
    if args.plot:
        trace.plot(table, args.plot, f"{args.file}: measured vs floor on {args.gpu}")
    if args.json:
        print(
            json.dumps(
                {"ops": table.to_dict(orient="records"), "totals": tot.reset_index().to_dict(orient="records")},
                indent=2,
                default=str,
            )
        )
        return 0
    measured, floor = table["measured_us"].sum(), table["floor_us"].sum()
    unmapped = int((table["model"] == "unmapped").sum())
    print(
        f"{args.file}: {len(table)} launching ops, measured {measured:,.1f} µs, roofline floor {floor:,.1f} µs "
        f"({floor / measured:.0%} efficiency over the mapped ones' floor), {unmapped} unmapped (listed)"
    )
    cols = ["aten_op", "family", "measured_us", "latency_us", "floor_us", "efficiency", "left_us", "bound", "model"]
    print(_fmt(table[cols].head(args.top)))
    print("\nby family:")
    print(tot.to_string(float_format=lambda v: f"{v:,.2f}"))
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def _options(text: str | None) -> dict | None:
    """--options: a JSON object of Inductor config options."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(
            f'--options must be a JSON object of Inductor options (e.g. {{"max_fusion_size": 4}}); got {text!r}'
        )
    return value


def _short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def cmd_fusion(args: argparse.Namespace) -> int:
    """One decoder layer eager against compiled: which eager kernels each fused kernel replaces, and the speedup."""
    from kernelcast.graphs.fusion import predict_layer_fusion

    seq = 1 if args.seq is None and args.phase == "decode" else args.seq
    if seq is None:
        raise ValueError("--seq must be given for prefill (tokens per sequence)")
    f = predict_layer_fusion(
        args.model,
        gpu=args.gpu,
        phase=args.phase,
        batch=args.batch,
        seq=seq,
        context=args.context,
        tp=args.tp,
        options=_options(args.options),
        cuda_graph=args.cuda_graph,
    )
    if args.plot:
        plot_fusion(f.table, args.plot, f"{args.model} layer, {args.phase} {args.batch}x{seq}: eager vs compiled")
    if args.json:
        print(json.dumps(f.to_dict(), indent=2, default=str))
        return 0
    t = f.totals()
    print(
        f"{args.model}, one decoder layer on {f.compiled.gpu}: {args.phase}, batch {args.batch} x {seq} tokens, "
        f"context {args.context}, tp {args.tp}; eager vs torch.compile (Inductor), predicted"
    )
    table = f.table.drop(columns=["region"]).assign(kernel=f.table["kernel"].map(_short))
    print(_fmt(table))
    print(
        f"eager: {t['eager_kernels']} kernels, device {t['eager_device_us']:,.1f} µs, wall {t['eager_wall_us']:,.1f} µs"
    )
    print(
        f"compiled: {t['compile_kernels']} kernels, device {t['compile_device_us']:,.1f} µs, "
        f"wall {t['compile_wall_us']:,.1f} µs"
    )
    print(f"predicted speedup: device {t['speedup']:.2f}x, wall {t['wall_speedup']:.2f}x")
    for name, bad in (("eager", f.eager.unmapped), ("compiled", f.compiled.unmapped)):
        for _, r in bad.iterrows():
            print(f"  unmapped ({name}): {r['aten_op']}: {r['note']}")
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def plot_fusion(table: pd.DataFrame, path: str, title: str) -> str:
    """Eager vs compiled predicted µs per compiled kernel (each with the eager kernels it replaces)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(11, 0.3 * len(table) + 1.5))
    y = np.arange(len(table))[::-1]
    ax.barh(y + 0.2, table["eager_us"], height=0.4, color="#c44", label="eager kernels it replaces")
    ax.barh(y - 0.2, table["compile_us"].fillna(0), height=0.4, color="#48c", label="compiled kernel")
    ax.set_yticks(y, [f"{_short(k, 50)} ({f})" for k, f in zip(table["kernel"], table["family"])], fontsize=7)
    ax.set_xlabel("predicted µs")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


MODEL_HELP = f"a config.json path or one of {', '.join(layers.config_names())}"


def _host_probe_arg(p) -> None:
    p.add_argument(
        "--host-probe-us",
        type=float,
        default=None,
        help="your host's speed: µs to issue one small eager op (kernelcast.collect.layer_job.host_probe); "
        "default the reference H200 host's",
    )


def _mode_arg(p) -> None:
    p.add_argument(
        "--mode",
        default="eager",
        choices=("eager", "compile"),
        help="compile: each layer as torch.compile (Inductor) compiles it on an NVIDIA GPU (the head stays eager)",
    )


def add_parsers(sub) -> None:
    p = sub.add_parser("model", help="predict one step of a whole model (prefill or decode) from its HF config")
    p.add_argument(
        "--model", default="llama3_8b", help=f"a config.json path or one of {', '.join(layers.config_names())}"
    )
    p.add_argument("--gpus", default="H200", help="comma-separated GPU names")
    p.add_argument("--phase", default="decode", choices=layers.PHASES)
    p.add_argument("--batch", default="1", help="comma-separated batch sizes")
    p.add_argument("--seq", type=int, default=None, help="new tokens per sequence (prefill: required; decode: 1)")
    p.add_argument("--context", type=int, default=0, help="tokens already in the KV cache (decode)")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree (adds 2 all_reduces per layer)")
    p.add_argument("--cuda-graph", action="store_true", help="CUDA-graph replay: no host launch cost")
    _mode_arg(p)
    p.add_argument("--kernels", action="store_true", help="also print each layer kind's kernel table")
    _host_probe_arg(p)
    p.add_argument(
        "--routing",
        default="balanced",
        help="MoE routing: balanced, power_law_<alpha>, or a JSON list of per-expert row counts (tokens x top_k)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_model)
    p = sub.add_parser("layer", help="predict one decoder layer of a real model at several token counts")
    p.add_argument(
        "--model", default="llama3_8b", help=f"a config.json path or one of {', '.join(layers.config_names())}"
    )
    p.add_argument("--tokens", default="1,128,2048,8192", help="comma-separated new-token counts")
    p.add_argument("--context", type=int, default=0, help="tokens already in the KV cache (0: a prefill)")
    p.add_argument("--gpus", default="H200,B200,MI300X")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree")
    p.add_argument("--cuda-graph", action="store_true")
    _mode_arg(p)
    _host_probe_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_layer)
    p = sub.add_parser("fusion", help="one decoder layer eager vs torch.compile: fused kernels, what they replace")
    p.add_argument("--model", default="llama3_8b", help=MODEL_HELP)
    p.add_argument("--gpu", default="H200", help="an NVIDIA GPU name (Inductor writes Triton code for it)")
    p.add_argument("--phase", default="prefill", choices=layers.PHASES)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=None, help="new tokens per sequence (prefill: required; decode: 1)")
    p.add_argument("--context", type=int, default=0, help="tokens already in the KV cache (decode)")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree (one rank's layer)")
    p.add_argument("--options", help="Inductor options as a JSON object, e.g. '{\"max_fusion_size\": 4}'")
    p.add_argument("--cuda-graph", action="store_true", help="CUDA-graph replay: no host launch cost")
    p.add_argument("--plot", help="write a PNG of eager vs compiled µs per compiled kernel")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_fusion)
    p = sub.add_parser("trace", help="a torch.profiler trace (or ncu CSV) against predictions and roofline floors")
    p.add_argument("file", help="Chrome trace JSON from torch.profiler (record_shapes=True), or an ncu raw CSV")
    p.add_argument("--gpu", default="H200", help="the GPU the trace was recorded on")
    p.add_argument("--top", type=int, default=25, help="rows to print (sorted by time left on the table)")
    p.add_argument("--plot", help="write a PNG of measured vs floor per op")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_trace)
