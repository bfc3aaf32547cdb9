"""The ``kernelcast collect`` commands: plan, run, merge, status (argparse; thin shells over one function each)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelcast.collect.worker import DEFAULT_TIMEOUT_S, TIMERS

MAX_INT_FLAG = 10**9  # no count flag needs more


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")


def _shard_arg(text: str) -> tuple[int, int]:
    from kernelcast.collect.plan import parse_shard

    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def gpus_arg(text: str) -> list[int]:
    """``0,1`` -> [0, 1]: distinct GPU indices."""
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() and len(p) < 4 for p in parts) or len(set(parts)) != len(parts):
        raise argparse.ArgumentTypeError(f"must be distinct GPU indices like 0,1; got {_shown(text)}")
    return [int(p) for p in parts]


def _names_arg(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"must name at least one sweep (NAME[,NAME]); got {text!r}")
    return names


def positive_int(text: str) -> int:
    """An integer flag in [1, 10**9]."""
    text = text.strip()
    if not text.isdigit() or len(text) > 10 or not 1 <= int(text) <= MAX_INT_FLAG:
        raise argparse.ArgumentTypeError(f"must be an integer in [1, {MAX_INT_FLAG}]; got {_shown(text)}")
    return int(text)


def finite_float(text: str) -> float:
    """A number of seconds: finite and >= 0 (``inf`` and ``nan`` are refused: nan would disable a watchdog)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0 (seconds); got {_shown(text)}")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0 (seconds); got {_shown(text)}")
    return value


def _json_file(flag: str, path: str) -> Any:
    """A JSON file's content; a missing or malformed file is a ValueError naming the flag."""
    try:
        return json.loads(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"{flag} file {path!r} cannot be read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{flag} file {path!r} is not valid JSON: {exc}") from None


def _emit(args: argparse.Namespace, result: dict[str, Any], text: Callable[[dict], str]) -> None:
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else text(result))


def _plan(args: argparse.Namespace) -> int:
    from kernelcast.collect.plan import build_plan, save_plan

    plan = build_plan(args.sweep, args.gpu, args.seed, args.repeat_share)
    path = save_plan(plan, args.out)
    repeats = sum(e.repeat_of is not None for e in plan.entries)
    result = {
        "plan": str(path),
        "plan_id": plan.plan_id(),
        "count": len(plan.entries),
        "repeats": repeats,
        "sweeps": args.sweep,
        "gpu": args.gpu,
        "seed": args.seed,
    }
    _emit(
        args,
        result,
        lambda r: (
            f"plan {r['plan']}: {r['count']} entries ({r['repeats']} re-measurements), "
            f"sweeps {','.join(r['sweeps'])}, gpu {r['gpu']}, seed {r['seed']}"
        ),
    )
    return 0


def _run_text(r: dict[str, Any]) -> str:
    counts = ", ".join(f"{k} {v}" for k, v in r["status_counts"].items()) or "nothing"
    head = "interrupted" if r["interrupted"] else "done"
    return (
        f"shard {r['shard']} {head}: measured {r['measured']} ({counts}); {r['already_done']} were done, "
        f"{r['left']} left; {r['rows_per_min']} rows/min; {r['restarts']} worker restarts\n"
        + "\n".join(f"  {f}" for f in r["files"])
    )


def _run(args: argparse.Namespace) -> int:
    from kernelcast.collect.shard import RunConfig, run_shard

    if not Path(args.plan).is_file():
        raise ValueError(f"--plan file {args.plan!r} does not exist")
    config = RunConfig(
        gpus=tuple(args.gpus),
        timer=args.measure or args.timer,
        cache=args.cache,
        repeats=args.repeats,
        chunk=args.chunk,
        timeout_s=args.timeout,
        warmup_s=args.warmup_s,
        budget_s=args.budget_s,
        limit=args.limit,
        retry_failed=args.retry_failed,
        precompile_workers=args.precompile_workers,
        progress=not args.json,
    )
    result = run_shard(args.plan, args.shard[0], args.shard[1], args.out, config)  # SIGTERM/Ctrl-C: flush, stop
    _emit(args, result, _run_text)
    return {None: 0, "SIGTERM": 143}.get(result["signal"], 130)


def _merge(args: argparse.Namespace) -> int:
    from kernelcast.collect.merge import format_noise, merge

    tags = _json_file("--tags", args.tags) if args.tags else None
    if tags is not None and not isinstance(tags, dict):
        raise ValueError(
            f"--tags file {args.tags!r} must hold a JSON object (desc_key -> tags); got {type(tags).__name__}"
        )
    result = merge(args.inputs, args.datasets, tags, allow_host_timers=args.allow_host_timers)
    _emit(
        args,
        result,
        lambda r: (
            f"merged {r['rows_in']} rows: added {r['added'] or 'none'}, duplicates "
            f"skipped {r['duplicates_skipped'] or 'none'}\n"
            + format_noise(r["noise"])
            + "".join(f"\n  {f}" for f in r["files"])
        ),
    )
    return 0


def _status(args: argparse.Namespace) -> int:
    from kernelcast.collect.shard import plan_status

    if not Path(args.plan).is_file():
        raise ValueError(f"--plan file {args.plan!r} does not exist")
    result = plan_status(args.plan, args.out)
    _emit(
        args,
        result,
        lambda r: (
            f"plan {r['plan']}: {r['entries']} entries, {r['done']} done, failed "
            f"{r['failed'] or 'none'}, {r['missing']} missing"
        ),
    )
    return 0


def add_parsers(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``collect {plan,run,merge,status}``; each sets ``func(args) -> exit code``."""
    from kernelcast.collect.shard import DEFAULT_CHUNK

    collect = subparsers.add_parser("collect", help="measure kernels: plan, run shards, merge into datasets/")
    sub = collect.add_subparsers(dest="collect_command", required=True, metavar="{plan,run,merge,status}")
    p = sub.add_parser("plan", help="write a deterministic, seeded plan of descriptions from named sweeps")
    p.add_argument(
        "--sweep", type=_names_arg, required=True, help="sweep name(s), comma-separated (collect/sweeps/<name>.toml)"
    )
    p.add_argument("--gpu", required=True, help="GPU name or alias, e.g. H200")
    p.add_argument("--seed", type=int, default=0, help="shuffle and sampling seed (default 0)")
    p.add_argument(
        "--repeat-share", type=float, default=0.1, help="share re-measured for the noise floor, >= 0.1 (default 0.1)"
    )
    p.add_argument("--out", required=True, help="plan file to write (JSON lines)")
    p.set_defaults(func=_plan)
    r = sub.add_parser("run", help="measure one shard of a plan (resumable), one worker per GPU")
    r.add_argument("--plan", required=True, help="plan file from `collect plan`")
    r.add_argument("--shard", type=_shard_arg, default=(0, 1), help="i/N: entries with index %% N == i (default 0/1)")
    r.add_argument("--out", required=True, help="output folder (rows land in OUT/<op>/*_sIIIofNNN.parquet)")
    r.add_argument("--gpus", type=gpus_arg, default=[0], help="GPU indices, one worker each (default 0)")
    r.add_argument(
        "--timer",
        choices=sorted(TIMERS),
        default="cupti",
        help="measuring backend: cupti (GPU device time) or cpu (wall time of CPU GEMMs: the CI seam)",
    )
    r.add_argument("--measure", default=None, help="a batch measure function 'module:function' instead of --timer")
    r.add_argument("--cache", choices=("cold", "warm"), default="cold", help="L2 state before each call (default cold)")
    r.add_argument("--repeats", type=positive_int, default=None, help="timed calls per config (default: the timer's)")
    r.add_argument(
        "--chunk",
        type=positive_int,
        default=DEFAULT_CHUNK,
        help=f"configs per measuring call, one profiler session (default {DEFAULT_CHUNK})",
    )
    r.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        help="seconds per config before the worker is restarted (finite)",
    )
    r.add_argument(
        "--warmup-s", type=finite_float, default=3.0, help="the timer's warm-up per worker start (default 3)"
    )
    r.add_argument("--budget-s", type=finite_float, default=None, help="start no chunk after this many seconds")
    r.add_argument("--retry-failed", action="store_true", help="measure again the configs recorded as failed")
    r.add_argument("--limit", type=positive_int, default=None, help="measure at most this many configs this run")
    r.add_argument(
        "--precompile-workers",
        type=int,
        default=0,
        help="compile the plan's Triton configs in this many processes meanwhile (the whole plan's)",
    )
    r.set_defaults(func=_run)
    m = sub.add_parser("merge", help="validate and deduplicate shard files into datasets/<op>/, report noise")
    m.add_argument("--in", dest="inputs", nargs="+", required=True, help="shard output folders or parquet files")
    m.add_argument("--datasets", default="datasets", help="datasets root (default datasets/)")
    m.add_argument("--tags", help="a JSON file desc_key -> sweep tags: fills an empty model column (older shard files)")
    m.add_argument(
        "--allow-host-timers",
        action="store_true",
        help="accept rows of the cpu/synthetic timers (never for the committed datasets/)",
    )
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
        print(f"kernelcast collect: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
