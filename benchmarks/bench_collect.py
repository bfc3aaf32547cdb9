"""Collector throughput: configs measured per GPU-minute, of the shard path and the local multi-GPU path, or from logs.

    # on a GPU host: one plan, measured by `collect run --shard 0/1` and by `gpu_job`, same GPUs, same chunk
    python3 benchmarks/bench_collect.py --compare --sweep gemm_cublas --count 2000 --gpus 0 --out DIR
    python3 benchmarks/bench_collect.py --compare ... --chunks 1,8,32,100   # the shard path at each chunk size too
    python3 benchmarks/bench_collect.py OUT            # summarise OUT/timing.jsonl (written by either path)
    python3 benchmarks/bench_collect.py benchmarks/results/collect_h200x2_20261129_cupti.jsonl   # a saved log

``--compare`` runs each path as its own process (the commands a user types), so start-up, warm-up
and writing are in the end-to-end figure; "busy" counts only the measuring calls. Results go to
a table and to ``--json-out`` (default OUT/bench_collect.json).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from kernelcast.collect.gpu_job import _print_table, rates


def write_plan(sweep: str, count: int, gpu: str, path: Path) -> Path:
    """A plan of the first ``count`` descriptions of ``sweep`` (plus the usual re-measure share)."""
    from kernelcast.collect.plan import make_plan, save_plan
    from kernelcast.collect.sweeps import expand

    return save_plan(make_plan(expand(sweep, gpu)[:count], seed=0, sweeps=[sweep], gpu=gpu), path)


def _path_commands(plan: Path, out: Path, gpus: str, timer: str, chunk: int, warmup_s: float) -> dict[str, list[str]]:
    common = ["--timer", timer, "--chunk", str(chunk), "--warmup-s", str(warmup_s), "--json"]
    return {
        "shard": [
            sys.executable,
            "-m",
            "kernelcast.collect.cli",
            "collect",
            "run",
            "--plan",
            str(plan),
            "--shard",
            "0/1",
            "--out",
            str(out),
            "--gpus",
            gpus,
            *common,
        ],
        "local": [
            sys.executable,
            "-m",
            "kernelcast.collect.gpu_job",
            "--plan",
            str(plan),
            "--out",
            str(out),
            "--gpus",
            gpus,
            "--budget-s",
            "86400",
            *common,
        ],
    }


def run_path(name: str, cmd: list[str], out: Path, gpus: int, chunk: int) -> dict:
    """Run one path to completion; its configs per GPU-minute, busy (measuring calls) and end to end."""
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{name} path failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    busy = rates(out)
    configs = sum(r["configs"] for r in busy)
    return {
        "path": name,
        "chunk": chunk,
        "gpus": gpus,
        "configs": configs,
        "ok": sum(r["ok"] for r in busy),
        "busy_gpu_s": round(sum(r["gpu_seconds"] for r in busy), 1),
        "busy_per_gpu_min": round(60 * configs / max(1e-9, sum(r["gpu_seconds"] for r in busy)), 1),
        "wall_s": round(wall, 1),
        "end_to_end_per_gpu_min": round(60 * configs / (wall * gpus), 1),
    }


def compare(args) -> list[dict]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plan = write_plan(args.sweep, args.count, args.gpu_name, out / "plan.jsonl")
    ngpu = len(args.gpus.split(","))
    table = []
    for r in range(args.rounds):  # ABBA order: the first run on a cold GPU favours neither path
        for name in ("shard", "local") if r % 2 == 0 else ("local", "shard"):
            folder = out / f"{name}_c{args.chunk}_r{r}_{int(time.time())}"
            cmd = _path_commands(plan, folder, args.gpus, args.timer, args.chunk, args.warmup_s)[name]
            table.append(run_path(name, cmd, folder, ngpu, args.chunk))
    for chunk in [int(c) for c in args.chunks.split(",") if c] if args.chunks else []:
        folder = out / f"shard_c{chunk}_{int(time.time())}"
        cmd = _path_commands(plan, folder, args.gpus, args.timer, chunk, args.warmup_s)["shard"]
        table.append(run_path("shard", cmd, folder, ngpu, chunk))
    return table


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", nargs="?", help="a run's output folder, or a timing.jsonl it wrote (without --compare)")
    p.add_argument("--compare", action="store_true", help="measure the shard path and the local path now")
    p.add_argument("--out", dest="out_dir", help="work folder for --compare")
    p.add_argument("--sweep", default="gemm_cublas", help="sweep the plan is drawn from (default gemm_cublas)")
    p.add_argument("--count", type=int, default=2000, help="descriptions in the plan (default 2000)")
    p.add_argument("--gpus", default="0", help="GPU indices for both paths (default 0)")
    p.add_argument("--gpu-name", default="H200")
    p.add_argument("--timer", default="cupti", help="cupti on a GPU host; cpu for the CPU seam")
    p.add_argument("--chunk", type=int, default=32, help="configs per measuring call for both paths (default 32)")
    p.add_argument("--chunks", default="", help="also the shard path at these chunk sizes, e.g. 1,8,100")
    p.add_argument("--rounds", type=int, default=2, help="runs of each path, in ABBA order (default 2)")
    p.add_argument("--warmup-s", type=float, default=3.0)
    p.add_argument("--json-out", help="where the JSON goes (default OUT/bench_collect.json with --compare)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = p.parse_args(argv)
    if args.compare:
        if not args.out_dir:
            p.error("--compare needs --out DIR")
        args.out = args.out_dir
        table = compare(args)
        record = {
            "host": socket.gethostname(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "sweep": args.sweep,
            "count": args.count,
            "timer": args.timer,
            "rows": table,
        }
        target = Path(args.json_out or Path(args.out_dir) / "bench_collect.json")
        target.write_text(json.dumps(record, indent=1))
    elif args.out:
        table = rates(args.out)
        target = None
    else:
        p.error("give an output folder (OUT) or --compare --out DIR")
    if args.json:
        print(json.dumps(table))
    else:
        _print_table(table, sys.stdout)
        if target:
            print(f"JSON: {target}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
