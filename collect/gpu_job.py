"""The local GPU job: a plan over this host's GPUs through the one runner, then an ncu batch; parquet + logs.

    python3 -m kernelcast.collect.gpu_job --sweeps gemm_cublas,gemm_triton,attention,moe \
        --out DIR --gpus 0,1 --budget-s 480          # rerun with the same --out to resume
    python3 -m kernelcast.collect.gpu_job --out DIR --gpus 0,1 --no-cupti --ncu-count 1000

The CUPTI pass is ``shard.run_shard`` on shard 0/1 with one worker per GPU: the same code as
``kernelcast collect run --plan P --shard i/N`` (resume, crash attribution, SIGTERM, locking).
``OUT/timing.jsonl`` records wall seconds per measuring call and timer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

NCU_OUT = "ncu"  # the ncu pass writes under OUT/ncu/<op>/ (its rows share plan indices with CUPTI's)


def _log(out: Path, record: dict) -> None:
    with open(out / "timing.jsonl", "a") as fh:
        fh.write(json.dumps(record) + "\n")


def _done_ncu(out: Path) -> set[int]:
    """Plan indices already profiled by the ncu pass (its files under ``OUT/ncu/``)."""
    from kernelcast.collect.dataset import parquet_files, read_table

    root = out / NCU_OUT
    files = parquet_files([root]) if root.is_dir() else []
    return set(read_table(files, ["plan_index"]).column(0).to_pylist()) if files else set()


def run_cupti(args, gpus: Sequence[str]) -> dict[str, Any]:
    """The plan as one shard over every local GPU, through the one runner (``shard.run_shard``)."""
    from kernelcast.collect.shard import RunConfig, run_shard

    config = RunConfig(
        gpus=tuple(int(g) for g in gpus),
        timer=args.timer,
        cache=args.cache,
        repeats=args.repeats,
        chunk=args.chunk,
        timeout_s=args.timeout,
        warmup_s=args.warmup_s,
        budget_s=max(0.0, args.deadline - time.time()),
        retry_failed=args.retry_failed,
        precompile_workers=args.precompile_workers,
        progress=not args.json,
    )
    return run_shard(Path(args.out) / "plan.jsonl", 0, 1, args.out, config)


#: not profiled with ncu: hundreds of kernels per call, each replayed once per metric pass
NCU_SKIP = {("moe", "torch")}
NCU_CHUNK = 200  # default descriptions per ncu process (progress is written after each)


def _ncu_pick(plan, count: int) -> list:
    """``count`` supported originals, round-robin over (op, backend) so every family gets ncu rows."""
    from kernelcast.collect.measure import skip_reason

    groups: dict[tuple, list] = {}
    for e in plan.entries:
        if e.repeat_of is None and (e.desc.op, e.desc.backend) not in NCU_SKIP and not skip_reason(e.desc)[1]:
            groups.setdefault((e.desc.op, e.desc.backend), []).append(e)
    picked, lists = [], list(groups.values())
    while len(picked) < count and any(lists):
        for lst in lists:
            if lst and len(picked) < count:
                picked.append(lst.pop(0))
    return picked


def _ncu_row(metrics: dict | None) -> dict[str, Any]:
    from kernelcast.collect.measure import failure_row

    if metrics is None:
        return failure_row("error", "ncu profiled no kernel for this description", "cold") | {"timer": "ncu"}
    t = metrics["ncu__time_us"]
    extra = {k: v for k, v in metrics.items() if k != "ncu__time_us"}
    return {
        "latency_us": t,
        "p10_us": t,
        "p90_us": t,
        "repeats": 1,
        "kernel_count": int(metrics["ncu__kernel_count"]),
        "kernel_names": None,
        "timer": "ncu",
        "cache": "cold",
        "sm_clock_hz": metrics.get("ncu__sm__cycles_elapsed.avg.per_second"),
        "status": "ok",
        "error": None,
        **extra,
    }


def run_ncu(args, gpus: Sequence[str]) -> None:
    """Profile ``--ncu-count`` plan entries with ncu, one ncu process per GPU in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    from kernelcast.collect import ncu
    from kernelcast.collect.dataset import RowWriter, provenance, utc_now
    from kernelcast.collect.plan import load_plan, shard_tag

    out = Path(args.out)
    plan = load_plan(out / "plan.jsonl")
    picked = _ncu_pick(plan, args.ncu_count)
    done = _done_ncu(out)
    picked = [e for e in picked if e.index not in done]
    prov = provenance("kernelcast", "ncu")
    parts = [picked[i :: len(gpus)] for i in range(len(gpus))]

    def one(i: int) -> None:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpus[i]}
        tag = shard_tag(i, len(gpus))
        writer = RowWriter(out / NCU_OUT, tag, {"kernelcast.plan_id": plan.plan_id(), "kernelcast.shard": tag})
        for k in range(0, len(parts[i]), args.ncu_chunk):
            if time.time() > args.deadline:
                _log(out, {"event": "deadline", "shard": tag, "timer": "ncu-skipped", "left": len(parts[i]) - k})
                return
            chunk = parts[i][k : k + args.ncu_chunk]
            start = time.perf_counter()
            metrics = ncu.run_batch([e.desc for e in chunk], out / f"ncu_{i}", env=env)
            writer.write(
                [
                    {
                        **e.desc.to_row(),
                        **_ncu_row(m),
                        **prov,
                        "time": utc_now(),
                        "desc_key": e.desc.key(),
                        "plan_index": e.index,
                        "repeat_of": e.repeat_of,
                        "model": e.tags.get("model"),
                    }
                    for e, m in zip(chunk, metrics)
                ]
            )
            _log(
                out,
                {
                    "timer": "ncu",
                    "shard": tag,
                    "wall_s": time.perf_counter() - start,
                    "configs": len(chunk),
                    "ok": sum(m is not None for m in metrics),
                },
            )

    with ThreadPoolExecutor(len(gpus)) as pool:
        list(pool.map(one, range(len(gpus))))


def rates(out: str | os.PathLike) -> list[dict[str, Any]]:
    """Configs measured per GPU-minute per timer, from a ``timing.jsonl`` (or the folder holding one).

    GPU-seconds are the summed wall time of the measuring calls (a worker's start-up and warm-up
    are not in them).
    """
    totals: dict[str, list[float]] = {}
    path = Path(out) if Path(out).is_file() else Path(out) / "timing.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        rec = json.loads(line)
        if rec.get("timer") and "wall_s" in rec and "configs" in rec:
            t = totals.setdefault(rec["timer"], [0.0, 0, 0])
            t[0] += rec["wall_s"]
            t[1] += rec["configs"]
            t[2] += rec["ok"]
    return [
        {
            "timer": k,
            "configs": v[1],
            "ok": v[2],
            "gpu_seconds": round(v[0], 1),
            "configs_per_gpu_minute": round(60 * v[1] / v[0], 1) if v[0] else None,
        }
        for k, v in totals.items()
    ]


def summary(out: str | os.PathLike) -> list[dict[str, Any]]:
    """Row counts per (op, backend, timer, status) over every parquet file under ``out``."""
    from kernelcast.collect.dataset import parquet_files, read_table

    files = [f for f in parquet_files([out])]
    if not files:
        return []
    frame = read_table(files).select(["op", "backend", "timer", "status"]).to_pandas()
    counts = frame.value_counts().sort_index()
    return [{"op": op, "backend": b, "timer": t, "status": s, "rows": int(c)} for (op, b, t, s), c in counts.items()]


def _print_table(rows: list[dict], file=sys.stdout) -> None:
    if not rows:
        print("(none)", file=file)
        return
    cols = list(rows[0])
    widths = [max(len(str(c)), *(len(str(r[c])) for r in rows)) for c in cols]
    print("  ".join(str(c).ljust(w) for c, w in zip(cols, widths)), file=file)
    for r in rows:
        print("  ".join(str(r[c]).ljust(w) for c, w in zip(cols, widths)), file=file)


def _parser() -> argparse.ArgumentParser:
    from kernelcast.collect.cli import finite_float, gpus_arg, positive_int, positive_seconds
    from kernelcast.collect.shard import DEFAULT_CHUNK
    from kernelcast.collect.worker import DEFAULT_TIMEOUT_S, TIMERS

    p = argparse.ArgumentParser(description="kernelcast GPU job: the plan over local GPUs, then an ncu batch")
    p.add_argument("--sweeps", default="smoke", help="comma-separated sweep names (collect/sweeps/*.toml)")
    p.add_argument("--plan", help="an existing plan file (instead of --sweeps)")
    p.add_argument("--out", required=True, help="output folder (resumable: rerun with the same --out)")
    p.add_argument("--gpus", type=gpus_arg, default=[0], help="comma-separated GPU indices, one worker process each")
    p.add_argument(
        "--gpu-name", default=None, help="GPU name for the descriptions (default: what nvidia-smi calls the first GPU)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--datasets", default="datasets", help="datasets root whose files.toml lists the passes already measured"
    )
    p.add_argument("--again", action="store_true", help="measure a sweep and seed the card lists for this GPU again")
    p.add_argument("--timer", choices=sorted(TIMERS), default="cupti", help="measuring backend (default cupti)")
    p.add_argument("--cache", default="cold", choices=("cold", "warm"))
    p.add_argument("--repeats", type=positive_int, default=None, help="timed calls per config (default: the timer's)")
    p.add_argument("--chunk", type=positive_int, default=DEFAULT_CHUNK, help="configs per measuring call")
    p.add_argument(
        "--timeout", type=positive_seconds, default=DEFAULT_TIMEOUT_S, help="seconds per config before a restart"
    )
    p.add_argument("--warmup-s", type=finite_float, default=3.0)
    p.add_argument("--retry-failed", action="store_true", help="measure again the configs recorded as failed")
    p.add_argument("--ncu-count", type=int, default=0, help="plan entries also profiled with ncu")
    p.add_argument(
        "--budget-s", type=finite_float, default=480.0, help="start no batch (CUPTI or ncu) after this many seconds"
    )
    p.add_argument("--ncu-chunk", type=positive_int, default=NCU_CHUNK, help="descriptions per ncu process")
    p.add_argument("--no-cupti", action="store_true", help="skip the CUPTI sweep (e.g. an ncu-only call)")
    p.add_argument(
        "--precompile-workers",
        type=int,
        default=0,
        help="compile the plan's Triton configs in this many processes while the GPU measures (collect.precompile)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def _write_plan(args, out: Path) -> None:
    """Build (or copy) the plan once; a rerun with the same --out reuses it (resume). Tags travel in the plan."""
    from kernelcast.collect.plan import build_plan, load_plan, save_plan
    from kernelcast.features.gpu import resolve_gpu_name

    if (out / "plan.jsonl").exists():
        return
    sweeps = [s for s in args.sweeps.split(",") if s]
    if args.plan:
        plan = load_plan(args.plan)
    else:
        gpu = args.gpu_name or local_gpu(args.gpus)
        if not args.again:
            _refuse_measured_pass(args.datasets, resolve_gpu_name(gpu), sweeps, args.seed)
        plan = build_plan(sweeps, gpu, args.seed)
    save_plan(plan, out / "plan.jsonl")


def _refuse_measured_pass(datasets: str, gpu: str, sweeps: Sequence[str], seed: int) -> None:
    """A ValueError where the card already lists one of ``sweeps`` at ``seed`` on ``gpu``: the plan would draw the
    descriptions measured then (a queued device script run twice re-measures its first call's rows)."""
    from kernelcast.collect.dataset import card_pass_file, read_card

    card = read_card(datasets)
    if card is None:
        print(f"gpu_job: no {datasets}/files.toml here: passes already measured are not checked", file=sys.stderr)
        return
    for sweep in sweeps:
        done = card_pass_file(card, gpu, sweep, seed)
        if done:
            raise ValueError(
                f"--sweeps {sweep} at --seed {seed} on {gpu} is already measured ({datasets}/files.toml lists "
                f"{done}): draw another --seed, or pass --again to measure the same descriptions again"
            )


def local_gpu(gpus: Sequence[int]) -> str:
    """The GPU table's name for the first of ``gpus``, from nvidia-smi (``--gpu-name`` where it names none)."""
    from kernelcast.collect.dataset import query
    from kernelcast.features.gpu import resolve_gpu_name

    name = query(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", str(gpus[0])])
    if name is None:
        raise ValueError(f"--gpu-name is needed: nvidia-smi names no GPU {gpus[0]} on this host")
    return resolve_gpu_name(name)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpus = [str(g) for g in args.gpus]
    args.deadline = time.time() + args.budget_s
    try:
        _write_plan(args, out)
        run = None if args.no_cupti else run_cupti(args, gpus)
        start = time.perf_counter()
        if args.ncu_count > 0 and not (run and run["interrupted"]):
            run_ncu(args, gpus)
    except ValueError as exc:
        parser.exit(2, f"gpu_job: error: {exc}\n")
    result = {
        "run": run,
        "ncu_wall_s": round(time.perf_counter() - start, 1),
        "rates": rates(out),
        "rows": summary(out),
    }
    (out / "summary.json").write_text(json.dumps(result, indent=1))
    if args.json:
        print(json.dumps(result))
    else:
        _print_table(result["rows"])
        _print_table(result["rates"])
        if run:
            print(
                f"measured {run['measured']} in {run['elapsed_s']} s, {run['left']} left, "
                f"{run['restarts']} worker restarts{' (interrupted)' if run['interrupted'] else ''}"
            )
    return {None: 0, "SIGTERM": 143}.get(run["signal"], 130) if run else 0


if __name__ == "__main__":
    sys.exit(main())
