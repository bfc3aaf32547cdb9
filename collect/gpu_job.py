"""The GPU job: warm up, measure a plan over the given GPUs (one process each, restarted on a crash), run an ncu batch, write parquet + logs.

    python3 -m kernelcast.collect.gpu_job --sweeps gemm_cublas,gemm_triton,attention,moe \
        --out DIR --gpus 0,1 --budget-s 480          # rerun with the same --out to resume
    python3 -m kernelcast.collect.gpu_job --out DIR --gpus 0,1 --no-cupti --ncu-count 1000

Resumable: rows already in ``OUT/<op>/*.parquet`` for this plan are skipped; a batch that
kills its process is re-run one description at a time, and a description that kills it
alone is recorded ``cuda_fatal``. ``OUT/timing.jsonl`` records wall seconds per batch and timer.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

SOURCE = "kernelcast"
CHUNK = 100                  # descriptions per profiler session
MAX_RESTARTS = 20


def _out_file(out: Path, op: str, timer: str, gpu: str, tag: str) -> Path:
    from kernelcast.collect.dataset import dataset_filename, utc_now

    return out / op / dataset_filename(f"{SOURCE}-{timer}", gpu, utc_now()[:10].replace("-", ""), tag)


def _done_indices(out: Path, timer: str, tag: str) -> set[int]:
    import pyarrow.parquet as pq

    done: set[int] = set()
    for path in out.glob(f"*/{SOURCE}-{timer}_*_{tag}.parquet"):
        done |= set(pq.read_table(path, columns=["plan_index"]).column(0).to_pylist())
    return done


def _write(out: Path, entries, rows, prov: dict, timer: str, tag: str) -> None:
    from kernelcast.collect.dataset import append_rows

    by_op: dict[str, list[dict]] = {}
    for e, row in zip(entries, rows):
        key = e.desc.key()
        full = {**e.desc.to_row(), **row, **prov, "desc_key": key, "plan_index": e.index, "repeat_of": e.repeat_of,
                "model": _tags(out).get(key, {}).get("model")}
        by_op.setdefault(e.desc.op, []).append(full)
    for op, op_rows in by_op.items():
        append_rows(_out_file(out, op, timer, op_rows[0]["gpu"], tag), op, op_rows)


@functools.cache
def _tags(out: Path) -> dict:
    """desc_key -> sweep tags (model, tp, layer) written beside the plan."""
    path = out / "tags.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _log(out: Path, record: dict) -> None:
    with open(out / "timing.jsonl", "a") as fh:
        fh.write(json.dumps(record) + "\n")


def _measure_chunk(out: Path, entries, args, prov: dict, tag: str, inflight: Path) -> None:
    from kernelcast.collect.measure import measure_many

    inflight.write_text(json.dumps([e.index for e in entries]))
    start = time.perf_counter()
    rows = measure_many([e.desc for e in entries], args.cache, args.repeats)
    wall = time.perf_counter() - start
    _write(out, entries, rows, prov, "cupti", tag)
    inflight.unlink()
    ops = Counter(f"{e.desc.op}/{e.desc.backend}" for e in entries)
    _log(out, {"timer": "cupti", "shard": tag, "wall_s": wall, "configs": len(entries), "by_backend": dict(ops),
               "ok": sum(r["status"] == "ok" for r in rows)})


def child(args) -> None:
    """One GPU's shard: warm-up, then chunks (skipping what is done; the crashed chunk one by one)."""
    from kernelcast.collect.dataset import provenance
    from kernelcast.collect.measure import failure_row
    from kernelcast.collect.plan import load_plan, parse_shard, shard, shard_tag
    from kernelcast.collect.timers import warm_up

    i, n = parse_shard(args.shard)
    tag = shard_tag(i, n)
    out = Path(args.out)
    prov = provenance(SOURCE, "cupti")
    entries = [e for e in shard(load_plan(out / "plan.jsonl"), i, n)]
    by_index = {e.index: e for e in entries}
    inflight = out / f".inflight_{tag}.json"
    solo: list[int] = []
    if inflight.exists():
        crashed = json.loads(inflight.read_text())
        inflight.unlink()
        if len(crashed) == 1:
            row = failure_row("cuda_fatal", "the process died measuring this description", args.cache)
            _write(out, [by_index[crashed[0]]], [row], prov, "cupti", tag)
        else:
            solo = crashed
    _log(out, {"event": "warm_up", "shard": tag, **warm_up(args.warmup_s)})
    done = _done_indices(out, "cupti", tag)
    todo = [e for e in entries if e.index not in done]
    batches = [[by_index[j]] for j in solo if j not in done]
    solo_set = set(solo)
    rest = [e for e in todo if e.index not in solo_set]
    batches += [rest[k:k + args.chunk] for k in range(0, len(rest), args.chunk)]
    for batch in batches:
        if time.time() > args.deadline:
            _log(out, {"event": "deadline", "shard": tag, "left": sum(map(len, batches))})
            break
        _measure_chunk(out, batch, args, prov, tag, inflight)


def _spawn(args, gpu: str, i: int, n: int) -> subprocess.Popen:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu, "NCCL_NVLS_ENABLE": "0",
           "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    cmd = [sys.executable, "-m", "kernelcast.collect.gpu_job", "--child", "--shard", f"{i}/{n}", "--out", args.out,
           "--cache", args.cache, "--repeats", str(args.repeats), "--chunk", str(args.chunk),
           "--warmup-s", str(args.warmup_s), "--deadline", str(args.deadline)]
    log = open(Path(args.out) / f"worker_{i}.log", "a")
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)


def run_cupti(args, gpus: Sequence[str]) -> float:
    """Run every shard to completion, restarting a process that dies; returns wall seconds."""
    start = time.perf_counter()
    n = len(gpus)
    procs = {i: _spawn(args, g, i, n) for i, g in enumerate(gpus)}
    restarts = 0
    while procs:
        time.sleep(1.0)
        for i, p in list(procs.items()):
            if p.poll() is None:
                continue
            del procs[i]
            if p.returncode != 0 and restarts < MAX_RESTARTS and time.time() < args.deadline:
                restarts += 1
                _log(Path(args.out), {"event": "restart", "shard": i, "returncode": p.returncode})
                procs[i] = _spawn(args, gpus[i], i, n)
    return time.perf_counter() - start


#: not profiled with ncu: hundreds of kernels per call, each replayed once per metric pass
NCU_SKIP = {("moe", "torch")}
NCU_CHUNK = 200              # default descriptions per ncu process (progress is written after each)


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
    return {"latency_us": t, "p10_us": t, "p90_us": t, "repeats": 1, "kernel_count": int(metrics["ncu__kernel_count"]),
            "kernel_names": None, "timer": "ncu", "cache": "cold",
            "sm_clock_hz": metrics.get("ncu__sm__cycles_elapsed.avg.per_second"), "status": "ok", "error": None, **extra}


def run_ncu(args, gpus: Sequence[str]) -> None:
    """Profile ``--ncu-count`` plan entries with ncu, one ncu process per GPU in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    from kernelcast.collect import ncu
    from kernelcast.collect.dataset import provenance
    from kernelcast.collect.plan import load_plan, shard_tag

    out = Path(args.out)
    picked = _ncu_pick(load_plan(out / "plan.jsonl"), args.ncu_count)
    done = _done_indices(out, "ncu", "*")
    picked = [e for e in picked if e.index not in done]
    prov = provenance(SOURCE, "ncu")
    parts = [picked[i::len(gpus)] for i in range(len(gpus))]

    def one(i: int) -> None:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpus[i]}
        tag = shard_tag(i, len(gpus))
        for k in range(0, len(parts[i]), args.ncu_chunk):
            if time.time() > args.deadline:
                _log(out, {"event": "deadline", "shard": tag, "timer": "ncu-skipped", "left": len(parts[i]) - k})
                return
            chunk = parts[i][k:k + args.ncu_chunk]
            start = time.perf_counter()
            metrics = ncu.run_batch([e.desc for e in chunk], out / f"ncu_{i}", env=env)
            _write(out, chunk, [_ncu_row(m) for m in metrics], prov, "ncu", tag)
            _log(out, {"timer": "ncu", "shard": tag, "wall_s": time.perf_counter() - start, "configs": len(chunk),
                       "ok": sum(m is not None for m in metrics)})

    with ThreadPoolExecutor(len(gpus)) as pool:
        list(pool.map(one, range(len(gpus))))


def rates(out: str | os.PathLike) -> list[dict[str, Any]]:
    """Configs measured per GPU-minute per timer, from a ``timing.jsonl`` (or the folder holding one)."""
    totals: dict[str, list[float]] = {}
    path = Path(out) if Path(out).is_file() else Path(out) / "timing.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        rec = json.loads(line)
        if rec.get("timer") in ("cupti", "ncu"):
            t = totals.setdefault(rec["timer"], [0.0, 0, 0])
            t[0] += rec["wall_s"]
            t[1] += rec["configs"]
            t[2] += rec["ok"]
    return [{"timer": k, "configs": v[1], "ok": v[2], "gpu_seconds": round(v[0], 1),
             "configs_per_gpu_minute": round(60 * v[1] / v[0], 1) if v[0] else None} for k, v in totals.items()]


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
    p = argparse.ArgumentParser(description="kernelcast GPU job: CUPTI sweep over GPUs, then an ncu batch")
    p.add_argument("--sweeps", default="smoke", help="comma-separated sweep names (collect/sweeps/*.toml)")
    p.add_argument("--plan", help="an existing plan file (instead of --sweeps)")
    p.add_argument("--out", required=True, help="output folder (resumable: rerun with the same --out)")
    p.add_argument("--gpus", default="0", help="comma-separated GPU indices, one worker process each")
    p.add_argument("--gpu-name", default="H200", help="GPU name for the descriptions")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", default="cold", choices=("cold", "warm"))
    p.add_argument("--repeats", type=int, default=8)
    p.add_argument("--chunk", type=int, default=CHUNK)
    p.add_argument("--warmup-s", type=float, default=3.0)
    p.add_argument("--ncu-count", type=int, default=0, help="plan entries also profiled with ncu")
    p.add_argument("--budget-s", type=float, default=480.0, help="start no batch (CUPTI or ncu) after this many seconds")
    p.add_argument("--ncu-chunk", type=int, default=NCU_CHUNK, help="descriptions per ncu process")
    p.add_argument("--no-cupti", action="store_true", help="skip the CUPTI sweep (e.g. an ncu-only call)")
    p.add_argument("--precompile-workers", type=int, default=0,
                   help="compile the plan's Triton configs in this many processes while the GPU measures (collect.precompile)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--shard", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    return p


def _write_plan(args, out: Path) -> None:
    """Build (or copy) the plan once; a rerun with the same --out reuses it (resume)."""
    from kernelcast.collect.plan import build_plan, load_plan, save_plan
    from kernelcast.collect.sweeps import expand_tagged

    if (out / "plan.jsonl").exists():
        return
    sweeps = [s for s in args.sweeps.split(",") if s]
    plan = load_plan(args.plan) if args.plan else build_plan(sweeps, args.gpu_name, args.seed)
    save_plan(plan, out / "plan.jsonl")
    tags = {d.key(): t for s in ([] if args.plan else sweeps) for d, t in expand_tagged(s, args.gpu_name, args.seed)}
    (out / "tags.json").write_text(json.dumps(tags))


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.child:
        child(args)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpus = [g.strip() for g in args.gpus.split(",") if g.strip()]
    args.deadline = time.time() + args.budget_s
    _write_plan(args, out)
    if args.precompile_workers > 0 and not args.no_cupti:   # fills TRITON_CACHE_DIR ahead of the measuring process
        subprocess.Popen([sys.executable, "-m", "kernelcast.collect.precompile", "--plan", str(out / "plan.jsonl"),
                          "--workers", str(args.precompile_workers), "--log", str(out / "precompile.jsonl")])
    cupti_s = 0.0 if args.no_cupti else run_cupti(args, gpus)
    start = time.perf_counter()
    if args.ncu_count > 0:
        run_ncu(args, gpus)
    result = {"cupti_wall_s": round(cupti_s, 1), "ncu_wall_s": round(time.perf_counter() - start, 1),
              "rates": rates(out), "rows": summary(out)}
    (out / "summary.json").write_text(json.dumps(result, indent=1))
    if args.json:
        print(json.dumps(result))
        return
    _print_table(result["rows"])
    _print_table(result["rates"])
    print(f"CUPTI wall {result['cupti_wall_s']} s, ncu wall {result['ncu_wall_s']} s")


if __name__ == "__main__":
    main()
