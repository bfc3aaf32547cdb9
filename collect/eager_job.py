"""Eager kernels inside a call: every kernel of random fusion graphs run eagerly, timed in place (issues 14, 15).

The op families' harness times one kernel alone after an L2 flush. Inside an eager call a kernel follows others:
its inputs may sit in L2 (written or read by the kernel before), the L2 holds the previous kernels' lines, and the
GPU has just run a kernel. This job measures what a kernel costs there, the label ``predict_module``'s eager totals
are compared with: each graph's eager call (``fused_job._build``: the same function and inputs the fused collector
times) between an L2 flush + synchronize and an end marker (``layer_job.time_calls``), ``--repeats`` times, and per
kernel position its name and median/p10/p90 µs. No compiling: one process on one GPU, batches of graphs per
profiler session.

One JSON line per graph in ``eager.jsonl`` (resumable: a graph already there is skipped): the task, its source and
inputs, per-kernel timings, the call's device times, or the error. ``pipeline/ingraph.py`` turns them into training
rows of the eager families (the kernel descriptions ``predict_module`` makes for the same graph, aligned by
position).

Run on a GPU host: ``python3 -m kernelcast.collect.eager_job --out DIR --graphs 0:16000 --box train --budget-s 300``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

from kernelcast.collect.fused_job import _build, _per_kernel, task_key

REPEATS = 10


def run_batch(tasks: Sequence[dict], repeats: int) -> list[dict]:
    """Each task's graph built on the GPU and its eager call timed, all in one profiler session."""
    from kernelcast.collect.layer_job import time_calls

    rows, calls = [], []
    for task in tasks:
        row = dict(task)
        try:
            _, _, eager, extra = _build(task)
            row.update(extra)
            calls.append((row, eager))
        except Exception as exc:  # noqa: BLE001 - recorded per task
            row["error"] = f"{type(exc).__name__}: {exc}"[:600]
        rows.append(row)
    if calls:
        try:
            timed = time_calls([eager for _, eager in calls], repeats=repeats)
        except Exception as exc:  # noqa: BLE001 - the batch's timing failed: recorded on each of its graphs
            for row, _ in calls:
                row["error"] = f"timing: {type(exc).__name__}: {exc}"[:600]
            return rows
        for (row, _), segs in zip(calls, timed):
            row["kernels"] = _per_kernel(segs)
            row["eager_device_us"] = [sum(e.dur_ns for e in s) / 1e3 for s in segs]
            if not row["kernels"]:
                row["error"] = "the repeats launched different kernel lists"
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from kernelcast.collect import fusion_graphs

    p = argparse.ArgumentParser(prog="python -m kernelcast.collect.eager_job", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="output folder (resumable)")
    p.add_argument("--graphs", default="0:1000", help="seed range lo:hi of random graphs")
    p.add_argument("--box", default="train", choices=tuple(fusion_graphs.BOXES))
    p.add_argument("--batch", type=int, default=64, help="graphs timed in one profiler session")
    p.add_argument("--repeats", type=int, default=REPEATS, help="timed eager calls per graph")
    p.add_argument("--budget-s", type=float, default=300.0, help="start no batch after this many seconds")
    args = p.parse_args(argv)
    lo, hi = (int(x) for x in args.graphs.split(":"))
    if not 0 <= lo < hi:
        raise SystemExit(f"--graphs must be lo:hi with 0 <= lo < hi; got {args.graphs!r}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "eager.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    done = {task_key(json.loads(line)) for line in lines if line.strip()}
    todo = [dict(kind="graph", seed=s, box=args.box, choice="default") for s in range(lo, hi)]
    todo = [t for t in todo if task_key(t) not in done]
    t0, got, errors = time.time(), 0, 0
    with path.open("a") as f:
        for i in range(0, len(todo), args.batch):
            if time.time() - t0 > args.budget_s:
                break
            for row in run_batch(todo[i : i + args.batch], args.repeats):
                f.write(json.dumps(row) + "\n")
                got += 1
                errors += "error" in row
            f.flush()
            print(f"eager {got}/{len(todo)} graphs ({errors} errors), {time.time() - t0:.0f} s", flush=True)
    print(f"eager: {got} graphs ({errors} errors) in {time.time() - t0:.0f} s, {len(todo) - got} not run", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
