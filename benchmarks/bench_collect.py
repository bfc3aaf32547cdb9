"""Collector throughput: configs measured per GPU-minute per timer, from a gpu_job output folder or a live run.

    python3 benchmarks/bench_collect.py OUT            # read OUT/timing.jsonl (written by gpu_job)
    python3 benchmarks/bench_collect.py benchmarks/results/collect_h200x2_20261129_cupti.jsonl   # a saved log
    python3 benchmarks/bench_collect.py --live gemm_cublas --count 500 --out OUT   # time measure_many now
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kernelcast.collect.gpu_job import _log, _print_table, rates


def live(sweep: str, count: int, out: Path, chunk: int) -> None:
    """Measure the first ``count`` descriptions of ``sweep`` with the CUPTI timer, logging each batch."""
    from kernelcast.collect.measure import measure_many
    from kernelcast.collect.sweeps import expand
    from kernelcast.collect.timers import warm_up

    out.mkdir(parents=True, exist_ok=True)
    descs = expand(sweep, "H200")[:count]
    warm_up(3.0)
    for k in range(0, len(descs), chunk):
        batch = descs[k:k + chunk]
        start = time.perf_counter()
        rows = measure_many(batch)
        _log(out, {"timer": "cupti", "shard": f"live-{sweep}", "wall_s": time.perf_counter() - start,
                   "configs": len(batch), "ok": sum(r["status"] == "ok" for r in rows)})


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", nargs="?", help="a gpu_job output folder, or a timing.jsonl it wrote")
    p.add_argument("--live", help="a sweep to time now (needs a GPU)")
    p.add_argument("--count", type=int, default=500)
    p.add_argument("--chunk", type=int, default=100)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if not args.out:
        p.error("give an output folder (OUT)")
    if args.live:
        live(args.live, args.count, Path(args.out), args.chunk)
    table = rates(args.out)
    if args.json:
        print(json.dumps(table))
    else:
        _print_table(table, sys.stdout)


if __name__ == "__main__":
    main()
