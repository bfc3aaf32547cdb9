"""The ``kernelcast collect`` commands: plan, run, merge, status (argparse; thin shells over one function each)."""
from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Any, Callable

from kernelcast.collect.worker import DEFAULT_MEASURE, DEFAULT_TIMEOUT_S



def _shard_arg(text: str) -> tuple[int, int]:
    from kernelcast.collect.plan import parse_shard

    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _gpus_arg(text: str) -> list[int]:
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() for p in parts) or len(set(parts)) != len(parts):
        raise argparse.ArgumentTypeError(f"must be distinct GPU indices like 0,1; got {text!r}")
    return [int(p) for p in parts]


def _names_arg(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"must name at least one sweep (NAME[,NAME]); got {text!r}")
    return names


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1; got {text!r}")
    return int(text)


def _emit(args: argparse.Namespace, result: dict[str, Any], text: Callable[[dict], str]) -> None:
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else text(result))


def _plan(args: argparse.Namespace) -> int:
    from kernelcast.collect.plan import build_plan, save_plan

    plan = build_plan(args.sweep, args.gpu, args.seed, args.repeat_share)
    path = save_plan(plan, args.out)
    repeats = sum(e.repeat_of is not None for e in plan.entries)
    result = {"plan": str(path), "plan_id": plan.plan_id(), "count": len(plan.entries), "repeats": repeats,
              "sweeps": args.sweep, "gpu": args.gpu, "seed": args.seed}
    _emit(args, result, lambda r: f"plan {r['plan']}: {r['count']} entries ({r['repeats']} re-measurements), "
                                  f"sweeps {','.join(r['sweeps'])}, gpu {r['gpu']}, seed {r['seed']}")
    return 0


def _run_text(r: dict[str, Any]) -> str:
    counts = ", ".join(f"{k} {v}" for k, v in r["status_counts"].items()) or "nothing"
    head = "interrupted" if r["interrupted"] else "done"
    return (f"shard {r['shard']} {head}: measured {r['measured']} ({counts}); {r['already_done']} were done, "
            f"{r['left']} left; {r['rows_per_min']} rows/min; {r['restarts']} worker restarts\n"
            + "\n".join(f"  {f}" for f in r["files"]))


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _run(args: argparse.Namespace) -> int:
    from kernelcast.collect.shard import run_shard

    measure = args.measure
    previous = signal.signal(signal.SIGTERM, _interrupt)     # a Slurm preemption flushes like Ctrl-C
    try:
        result = run_shard(args.plan, args.shard[0], args.shard[1], args.out, gpus=args.gpus, measure=measure,
                           cache=args.cache, repeats=args.repeats, timeout_s=args.timeout, limit=args.limit,
                           retry_failed=args.retry_failed)
    finally:
        signal.signal(signal.SIGTERM, previous)
    _emit(args, result, _run_text)
    return 130 if result["interrupted"] else 0


def _merge(args: argparse.Namespace) -> int:
    from kernelcast.collect.merge import format_noise, merge

    tags = json.loads(open(args.tags).read()) if args.tags else None
    result = merge(args.inputs, args.datasets, tags)
    _emit(args, result, lambda r: f"merged {r['rows_in']} rows: added {r['added'] or 'none'}, duplicates "
                                  f"skipped {r['duplicates_skipped'] or 'none'}\n" + format_noise(r["noise"])
                                  + "".join(f"\n  {f}" for f in r["files"]))
    return 0


def _status(args: argparse.Namespace) -> int:
    from kernelcast.collect.shard import plan_status

    result = plan_status(args.plan, args.out)
    _emit(args, result, lambda r: f"plan {r['plan']}: {r['entries']} entries, {r['done']} done, failed "
                                  f"{r['failed'] or 'none'}, {r['missing']} missing")
    return 0


def add_parsers(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``collect {plan,run,merge,status}``; each sets ``func(args) -> exit code``."""
    collect = subparsers.add_parser("collect", help="measure kernels: plan, run shards, merge into datasets/")
    sub = collect.add_subparsers(dest="collect_command", required=True, metavar="{plan,run,merge,status}")
    p = sub.add_parser("plan", help="write a deterministic, seeded plan of descriptions from named sweeps")
    p.add_argument("--sweep", type=_names_arg, required=True, help="sweep name(s), comma-separated (collect/sweeps/<name>.toml)")
    p.add_argument("--gpu", required=True, help="GPU name or alias, e.g. H200")
    p.add_argument("--seed", type=int, default=0, help="shuffle and sampling seed (default 0)")
    p.add_argument("--repeat-share", type=float, default=0.1, help="share re-measured for the noise floor, >= 0.1 (default 0.1)")
    p.add_argument("--out", required=True, help="plan file to write (JSON lines)")
    p.set_defaults(func=_plan)
    r = sub.add_parser("run", help="measure one shard of a plan (resumable), one worker per GPU")
    r.add_argument("--plan", required=True, help="plan file from `collect plan`")
    r.add_argument("--shard", type=_shard_arg, default=(0, 1), help="i/N: entries with index %% N == i (default 0/1)")
    r.add_argument("--out", required=True, help="output folder (rows land in OUT/<op>/*_sIIIofNNN.parquet)")
    r.add_argument("--gpus", type=_gpus_arg, default=[0], help="GPU indices, one worker each (default 0)")
    r.add_argument("--cache", choices=("cold", "warm"), default="cold", help="L2 state before each call (default cold)")
    r.add_argument("--repeats", type=_positive_int, default=None, help="timed calls per config (default: the measure function's)")
    r.add_argument("--measure", default=DEFAULT_MEASURE, help=f"measure function 'module:function' (default {DEFAULT_MEASURE})")
    r.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per config before the worker is restarted")
    r.add_argument("--retry-failed", action="store_true", help="measure again the configs recorded as failed")
    r.add_argument("--limit", type=_positive_int, default=None, help="measure at most this many configs this run")
    r.set_defaults(func=_run)
    m = sub.add_parser("merge", help="validate and deduplicate shard files into datasets/<op>/, report noise")
    m.add_argument("--in", dest="inputs", nargs="+", required=True, help="shard output folders or parquet files")
    m.add_argument("--datasets", default="datasets", help="datasets root (default datasets/)")
    m.add_argument("--tags", help="sweep tag file (gpu_job's tags.json): fills the model column")
    m.set_defaults(func=_merge)
    s = sub.add_parser("status", help="what of a plan is done, failed, missing in an output folder")
    s.add_argument("--plan", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(func=_status)
    for parser in (p, r, m, s):
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return collect


def main(argv: list[str] | None = None) -> int:
    """``python -m kernelcast.collect.cli collect ...``; bad input exits 2 with the message."""
    parser = argparse.ArgumentParser(prog="kernelcast")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        parser.exit(2, f"kernelcast: error: {exc}\n")


if __name__ == "__main__":
    sys.exit(main())
