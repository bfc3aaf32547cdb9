"""The `kernelcast` command: predict, fields, gpus, coverage — and the model/layer/trace, collect, train stages."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kernelcast.show import clip, dumps, table

PRED_COLUMNS = ("floor_us", "latency_us", "low_us", "high_us", "achieved_tflops", "achieved_gbps", "roofline_pct")
PRED_COLUMNS += ("bound", "model")


def cmd_predict(args: argparse.Namespace) -> int:
    from kernelcast import predict_latency, predict_many
    from kernelcast.features.desc import parse_desc
    from kernelcast.inputs import read_descs

    raw, many = read_descs(args.file, args.fields)
    if not many:
        desc = parse_desc(raw[0])
        pred = predict_latency(desc, args.predictor)
        if args.json:
            print(dumps({"desc": desc.to_dict(), "prediction": pred.to_dict()}))
        else:
            print(table([pred.to_dict()], PRED_COLUMNS))
            print(f"in_distribution={pred.in_distribution}; {pred.assumptions}")
        return 0
    preds = predict_many(raw, args.predictor).to_dict("records")
    if args.json:
        descs = [parse_desc(d).to_dict() for d in raw]  # canonical, as for one description (all valid by now)
        print(dumps([{"desc": d, "prediction": p} for d, p in zip(descs, preds)]))
    else:
        rows = [{"#": i, "op": d.get("op"), "gpu": d.get("gpu"), **p} for i, (d, p) in enumerate(zip(raw, preds))]
        print(table(rows, ("#", "op", "gpu", *PRED_COLUMNS, "in_distribution")))
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from kernelcast import rank_configs
    from kernelcast.inputs import read_descs

    raw, many = read_descs(args.file, args.fields)
    if many:
        raise ValueError(f"kernelcast tune ranks the configs of one description; --file {args.file!r} holds a list")
    if args.verify:
        return _tune_verify(raw[0], args)
    ranked = rank_configs(raw[0], top=args.top, predictor=args.predictor)
    rows = ranked.to_dict("records")
    if args.json:
        print(dumps({**ranked.attrs, "ranked": rows}))
    else:
        cfg = [{**r, "config": ", ".join(f"{k}={v}" for k, v in r["config"].items())} for r in rows]
        print(table(cfg, tuple(ranked.columns)))
        print(f"best {len(rows)} of {ranked.attrs['fit']} configs that fit ({ranked.attrs['candidates']} in the space)")
    return 0


def _tune_verify(desc: dict, args: argparse.Namespace) -> int:
    from kernelcast.verify import verify_configs

    out = verify_configs(desc, top=args.verify)
    rows = out.to_dict("records")
    attrs = {k: v for k, v in out.attrs.items()}
    if args.json:
        print(dumps({**attrs, "measured": rows}))
    else:
        cfg = [{**r, "config": ", ".join(f"{k}={v}" for k, v in r["config"].items())} for r in rows]
        print(table(cfg, ("predicted_rank", "config", "latency_us", "measured_us", "status")))
        print(
            f"measured best on {attrs['gpu']}: {attrs['best_us']:.2f} us (predicted rank "
            f"{rows[0]['predicted_rank']}); the predicted top-1 measured {attrs['regret']:.3f}x the best"
        )
    return 0


def cmd_fields(args: argparse.Namespace) -> int:
    from kernelcast.features.catalog import catalog

    rows = catalog((args.op,) if args.op else None)
    if args.json:
        print(dumps(rows))
    else:
        shown = [{**r, "default": "(required)" if r["required"] else r["default"]} for r in rows]
        print(table(shown, ("op", "field", "type", "default", "allowed")))
        print(
            "integers take units (bytes=64MiB, m=4Ki, k=4k); booleans true/false/1/0/yes/no; "
            "choices ignore case, _ and -"
        )
    return 0


def cmd_gpus(args: argparse.Namespace) -> int:
    from kernelcast.gpu_table import gpu_detail, gpu_json, gpu_rows

    if args.name:
        if args.json:  # the spec in SI base units (bytes, Hz, FLOP/s, B/s), as the spec file holds it
            print(dumps(gpu_json(args.name)))
        else:
            rows = gpu_detail(args.name)
            print(table([{**r, "source": clip(r["source"])} for r in rows], ("field", "value", "source")))
        return 0
    rows = gpu_rows()
    print(dumps(rows) if args.json else table(rows, list(rows[0])))
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    from kernelcast.predictors.coverage import COVERAGE_COLUMNS, coverage_rows

    rows = coverage_rows(args.op, args.gpu)
    if args.json:
        print(dumps(rows))
    else:
        print(table(rows, COVERAGE_COLUMNS) if rows else "no learned model covers that: answers are analytical")
        print(
            "error: median / p90 APE of the shipped model on its frozen split's held-out shapes "
            "per (GPU, backend, dtype)"
        )
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
    if getattr(args, "split", None) == "tune":  # config search's regret reads only our exhaustive test rows
        return
    from kernelcast.collect.importers.aiconfigurator import ensure_cache
    from kernelcast.features.ops import op_names

    ensure_cache(op_names() if args.op == "all" else [args.op])


def build_parser() -> argparse.ArgumentParser:
    from kernelcast import __version__
    from kernelcast.features.catalog import usage_line
    from kernelcast.features.ops import op_names

    parser = argparse.ArgumentParser(prog="kernelcast", description="GPU kernel latency prediction from measurements")
    parser.add_argument("--version", action="version", version=f"kernelcast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "predict",
        help="predict one kernel's device time (or a list of them)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="fields of each op (every description also takes gpu, dtype, backend; "
        "`kernelcast fields OP` lists types and allowed values):\n"
        + "\n".join(f"  {usage_line(op)}" for op in op_names())
        + "\nintegers take units (bytes=64MiB, k=4Ki); booleans true/True/1; collective=allreduce; dtype=fp8",
    )
    p.add_argument("fields", nargs="*", help="description fields as key=value (op=gemm gpu=H200 m=4096 ...)")
    p.add_argument(
        "--file",
        help="a JSON file holding one description or a list of them, or - for stdin (key=value fields apply to each)",
    )
    p.add_argument(
        "--predictor",
        default="auto",
        choices=("auto", "analytical"),
        help="auto: learned where a model covers the kernel, else analytical",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_predict)
    p = sub.add_parser("fields", help="every field each op takes: type, default, allowed values")
    p.add_argument("op", nargs="?", choices=op_names(), help="one op (default: all)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_fields)
    p = sub.add_parser("coverage", help="which (GPU, backend, dtype) each shipped learned model covers, and its error")
    p.add_argument("--op", choices=op_names(), help="one op (default: all)")
    p.add_argument("--gpu", help="one GPU (name or alias)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_coverage)
    p = sub.add_parser("tune", help="rank a Triton kernel's configs by predicted latency (gemm, attention, moe)")
    p.add_argument("fields", nargs="*", help="description fields as key=value, backend=triton, no config")
    p.add_argument("--file", help="a JSON description file, or - for stdin (key=value fields override it)")
    p.add_argument("--top", type=int, default=10, help="how many configs to show (default 10)")
    p.add_argument("--predictor", default="auto", choices=("auto", "analytical"))
    p.add_argument(
        "--verify", type=int, metavar="K", help="on a GPU host: measure the top K with the collector, show the best"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_tune)
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
