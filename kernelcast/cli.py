"""The `kernelcast` command: predict, gpus — and the model/layer/trace, collect and train/evaluate/dashboard stages."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _read_desc(args: argparse.Namespace) -> dict:
    desc: dict[str, Any] = {}
    if args.file:
        try:
            text = sys.stdin.read() if args.file == "-" else open(args.file).read()
        except OSError as exc:
            raise ValueError(f"--file {args.file!r} cannot be read: {exc.strerror}") from None
        try:
            desc = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"--file {args.file!r} is not a JSON description: {exc}") from None
        if not isinstance(desc, dict):
            raise ValueError(
                f"--file {args.file!r} must hold one JSON object (a description); got {type(desc).__name__}"
            )
    for item in args.fields:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"description fields are key=value (e.g. m=4096 causal=true); got {item!r}")
        desc[key] = _value(value)
    return desc


def _table(rows: list[dict], columns: Sequence[str]) -> str:
    cells = [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.2f}" if abs(v) < 1e6 else f"{v:.3e}"
    return "" if v is None else str(v)


def _numeric(v: str) -> bool:
    return v.replace(",", "").replace(".", "").replace("-", "").replace("e+", "").isdigit()


PRED_COLUMNS = ("floor_us", "latency_us", "low_us", "high_us", "bound", "model")


def cmd_predict(args: argparse.Namespace) -> int:
    from kernelcast import predict_latency
    from kernelcast.features.desc import parse_desc

    desc = parse_desc(_read_desc(args))
    pred = predict_latency(desc, args.predictor)
    if args.json:
        print(json.dumps({"desc": desc.to_dict(), "prediction": pred.to_dict()}, indent=2))
    else:
        print(_table([pred.to_dict()], PRED_COLUMNS))
        print(f"in_distribution={pred.in_distribution}; {pred.assumptions}")
    return 0


GPU_COLUMNS = (
    "name",
    "display_name",
    "architecture",
    "target",
    "sm_count",
    "memory_GB",
    "bandwidth_TBps",
    "bf16_TFLOPs",
    "fp8_TFLOPs",
    "l2_MiB",
    "link_GBps",
)


def _gpu_row(spec) -> dict:
    return {
        "name": spec.name,
        "display_name": spec.display_name,
        "architecture": spec.architecture,
        "target": spec.target,
        "sm_count": spec.sm_count,
        "memory_GB": spec.memory_bytes / 1e9,
        "bandwidth_TBps": spec.memory_bandwidth_bps / 1e12,
        "bf16_TFLOPs": spec.peak_flops.get("bf16", 0) / 1e12,
        "fp8_TFLOPs": spec.peak_flops.get("fp8", 0) / 1e12,
        "l2_MiB": spec.l2_bytes / 2**20,
        "link_GBps": spec.link_bandwidth_bps / 1e9,
    }


def cmd_gpus(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from kernelcast.features.gpu import get_gpu, list_gpus

    if args.name:
        spec = get_gpu(args.name)
        if args.json:
            print(json.dumps(asdict(spec), indent=2))
        else:
            for key, value in asdict(spec).items():
                print(f"{key:28s} {value}")
        return 0
    rows = [_gpu_row(s) for s in list_gpus()]
    print(json.dumps(rows, indent=2) if args.json else _table(rows, GPU_COLUMNS))
    return 0


def _stage_parsers(sub) -> None:
    """The pipeline stages register their own subcommands."""
    from kernelcast.collect import cli as collect_cli
    from kernelcast.collect import importers
    from kernelcast.graphs import cli as graphs_cli
    from kernelcast.pipeline import cli as pipeline_cli
    from kernelcast.training import cli as training_cli

    collect_cli.add_parsers(sub)
    graphs_cli.add_parsers(sub)
    importers.add_parsers(sub)
    training_cli.add_parsers(sub)
    pipeline_cli.add_parsers(sub)


def _ensure_outside(args: argparse.Namespace) -> None:
    """`train`/`evaluate` over the outside source: import aiconfigurator-core's tables where not cached yet
    (training reads the cache; only the face may call the importer)."""
    if args.command not in ("train", "evaluate") or getattr(args, "source", None) not in (None, "aiconfigurator"):
        return
    from kernelcast.collect.importers.aiconfigurator import ensure_cache
    from kernelcast.features.ops import op_names

    ensure_cache(op_names() if args.op == "all" else [args.op])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelcast", description="GPU kernel latency prediction from measurements")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("predict", help="predict one kernel's device time")
    p.add_argument("fields", nargs="*", help="description fields as key=value (op=gemm gpu=H200 m=4096 ...)")
    p.add_argument("--file", help="a JSON description file, or - for stdin (key=value fields override it)")
    p.add_argument(
        "--predictor",
        default="auto",
        choices=("auto", "analytical"),
        help="auto: learned where a model covers the kernel, else analytical",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_predict)
    p = sub.add_parser("gpus", help="list the GPU spec database, or show one GPU")
    p.add_argument("name", nargs="?", help="a GPU name or alias")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpus)
    _stage_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import signal

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `kernelcast gpus | head` ends quietly
    args = build_parser().parse_args(argv)
    try:
        _ensure_outside(args)
        return args.func(args)
    except ValueError as exc:
        print(f"kernelcast {args.command}: error: {exc}", file=sys.stderr)
        return 2
