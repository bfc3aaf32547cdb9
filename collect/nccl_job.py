"""The multi-GPU collective job: one process per GPU, the sweep timed with CUDA graphs, rows + NCCL logs out.

``python -m kernelcast.collect.nccl_job --out DIR [--preset smoke|full] [--budget-s S] [--json]``
spawns one process per visible GPU (or joins torchrun/Slurm when RANK and WORLD_SIZE are set).
Rank 0 writes each case's row the moment it is measured, through the dataset writer every
collection path uses (``DIR/collective/kernelcast_<gpu>_<yyyymmdd>_s000of001w<id>p<n>.parquet``,
a file per run; a rerun resumes). SIGTERM (Slurm preemption) ends the sweep after the case in
flight, its row written. Also ``DIR/topo.txt``, ``DIR/nccl.<host>.<pid>.log`` and a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from kernelcast.collect import dataset
from kernelcast.collect.workloads import collective as W
from kernelcast.features.gpu import get_gpu, resolve_gpu_name
from kernelcast.features.ops.collective import COLLECTIVES, CollectiveDesc

#: columns collective rows carry beyond the common schema
EXTRA_COLUMNS = dataset.OP_EXTRA_COLUMNS["collective"]
TAG = "s000of001"
METHOD = (
    "torch.distributed NCCL; graph_calls back-to-back calls captured in a CUDA graph, replays timed "
    "with CUDA events after a 4-byte all_reduce aligns the ranks; per-call time, max over ranks, "
    "median over replays"
)
PRESETS = {
    "smoke": {"collectives": COLLECTIVES, "dtypes": ("bf16",), "sizes": [1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 28]},
    "full": {"collectives": COLLECTIVES, "dtypes": ("bf16", "fp32", "fp16", "int8"), "sizes": W.sizes()},
}


@dataclass(frozen=True)
class JobConfig:
    out: Path  # output folder
    preset: str = "full"  # which grid (PRESETS)
    budget_s: float = 240.0  # no new case starts after this many seconds of sweeping
    repeat_every: int = 10  # re-measure every n-th case at the end (noise floor); 0 = none


def _files(cfg: JobConfig) -> list[Path]:
    root = cfg.out / "collective"
    return dataset.parquet_files([root]) if root.is_dir() else []


def _rows(cfg: JobConfig) -> list[dict]:
    files = _files(cfg)
    return dataset.read_table(files).to_pylist() if files else []


def _plan(cfg: JobConfig, world: int, gpu: str) -> list[tuple[int, CollectiveDesc, int | None]]:
    """(plan index, description, repeat_of): each dtype's grid, then every n-th case of it again."""
    grid = PRESETS[cfg.preset]
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world))  # torchrun / Slurm: GPUs per node
    descs = W.sweep(grid["collectives"], grid["dtypes"], grid["sizes"], world, gpu, local)
    plan, repeats = [], len(descs)
    for dtype in grid["dtypes"]:
        block = [(i, d, None) for i, d in enumerate(descs) if d.dtype == dtype]
        again = block[:: cfg.repeat_every] if cfg.repeat_every else []
        plan += block + [(repeats + j, d, i) for j, (i, d, _) in enumerate(again)]
        repeats += len(again)
    return plan


def _sm_clock_hz() -> float | None:
    import torch

    try:
        return float(torch.cuda.clock_rate()) * 1e6
    except Exception:  # pynvml missing or NVML refused: not recorded
        return None


def _measure(desc: CollectiveDesc, rank: int, world: int, model_us: float) -> dict:
    """One case on this rank; every decision that changes the call sequence is agreed by all ranks."""
    import torch
    import torch.distributed as dist

    calls, replays = W.plan_calls(model_us)
    row = {"status": "ok", "error": None, "graph_calls": calls}
    try:
        call = W.build_call(desc, rank, world)
        error = W.check_result(call)
        flag = torch.tensor([1.0 if error else 0.0], device="cuda")
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item():
            return {**row, "status": "error", "error": error or "output check failed on another rank"}
        timing = W.time_case(call.fn, calls, replays)
        row.update(W.summarize(timing.samples_us), host_loop_us=timing.host_loop_us)
    except torch.cuda.OutOfMemoryError as exc:
        row.update(status="oom", error=str(exc).splitlines()[0])
    except RuntimeError as exc:  # e.g. a capture torch refuses: recorded, sweep goes on
        row.update(status="error", error=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    finally:
        call = None
        if desc.bytes >= 1 << 28:
            torch.cuda.empty_cache()
    return row


RUN, SKIP, STOP = 0.0, 1.0, 2.0


def _agree(decision: float) -> float:
    """Rank 0's decision for the next case (run / skip: already measured / stop: budget spent), for all ranks."""
    import torch
    import torch.distributed as dist

    flag = torch.tensor([decision], device="cuda")
    dist.broadcast(flag, src=0)
    return float(flag.item())


def run_rank(rank: int, world: int, cfg: JobConfig) -> None:
    """The sweep on one rank; rank 0 writes each row as it is measured; SIGTERM stops after the case in flight."""
    import torch
    import torch.distributed as dist

    from kernelcast.features.nccl_model import nccl_time_for_gpu

    stop = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    os.environ.setdefault("RANK", str(rank))
    os.environ.setdefault("WORLD_SIZE", str(world))
    env = W.check_env()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", local))
    gpu = resolve_gpu_name(torch.cuda.get_device_name(local))
    writer = dataset.RowWriter(cfg.out, TAG, {"kernelcast.method": METHOD}) if rank == 0 else None
    done = {(r["desc_key"], r["repeat_of"]) for r in _rows(cfg) if r["status"] == "ok"} if rank == 0 else set()
    prov = dataset.provenance("kernelcast", METHOD) if rank == 0 else {}
    topo = (cfg.out / "topo.txt").read_text() if (cfg.out / "topo.txt").exists() else ""
    deadline = time.time() + cfg.budget_s
    plan = _plan(cfg, world, gpu)
    for i, desc, repeat_of in tqdm(plan, disable=rank != 0, file=sys.stderr, mininterval=5, desc="collectives"):
        late = stop or time.time() > deadline
        decision = _agree(STOP if late else SKIP if (desc.key(), repeat_of) in done else RUN)
        if decision == STOP:
            break
        if decision == SKIP:
            continue
        model_us = float(
            nccl_time_for_gpu(desc.collective, desc.bytes, desc.ranks, desc.ranks_per_node, get_gpu(gpu)).time_us
        )
        result = _measure(desc, rank, world, model_us)
        if writer is not None:
            writer.write(
                [
                    {
                        **desc.to_row(),
                        "kernel_count": None,
                        "kernel_names": None,
                        "timer": "cuda_graph",
                        "cache": "warm",
                        "sm_clock_hz": _sm_clock_hz(),
                        **result,
                        **prov,
                        "time": dataset.utc_now(),
                        "desc_key": desc.key(),
                        "plan_index": i,
                        "repeat_of": repeat_of,
                        "nccl_model_us": model_us,
                        "topology": W.topology_summary(topo),
                        "nccl_env": W.env_json(env),
                    }
                ]
            )
    dist.barrier()
    dist.destroy_process_group()


def _annotate_from_logs(cfg: JobConfig, world: int) -> dict:
    """Add NCCL's logged (algo, proto, channels) to the rows; return the log facts for the summary."""
    text = "".join(p.read_text(errors="replace") for p in sorted(cfg.out.glob("nccl.*.log")))
    chosen = W.parse_tuning_log(text, world)
    table_lines = [ln.split("NCCL INFO", 1)[1] for ln in text.splitlines() if "NCCL INFO" in ln and "|" in ln]
    for path in _files(cfg):
        meta = dataset.read_schema(path).metadata
        rows = dataset.read_parquet(path).to_pylist()
        for r in rows:
            algo, proto, channels = chosen.get((r["collective"], r["bytes"]), (None, None, None))
            r.update(nccl_algo=algo, nccl_proto=proto, nccl_channels=channels)
        table = dataset.table_from_rows(rows, dataset.row_schema("collective", extra_columns=EXTRA_COLUMNS), str(path))
        with dataset.file_lock(path.parent):
            dataset.write_atomic(table.replace_schema_metadata(meta), path)
    return {"tuning_lines": len(chosen), "nccl_tuning_table": table_lines[:80]}


def _prepare(cfg: JobConfig) -> None:
    cfg.out.mkdir(parents=True, exist_ok=True)
    W.check_env()
    os.environ.setdefault("NCCL_DEBUG", "INFO")
    os.environ.setdefault("NCCL_DEBUG_SUBSYS", "INIT,GRAPH,TUNING,ENV")
    os.environ.setdefault("NCCL_DEBUG_FILE", str(cfg.out / "nccl.%h.%p.log"))
    try:
        topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        topo = f"nvidia-smi topo -m failed: {exc}"
    (cfg.out / "topo.txt").write_text(topo)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="full")
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--repeat-every", type=int, default=10)
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)
    cfg = JobConfig(args.out, args.preset, args.budget_s, args.repeat_every)
    _prepare(cfg)
    start = time.time()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        run_rank(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), cfg)
        if os.environ["RANK"] != "0":
            return 0
        world = int(os.environ["WORLD_SIZE"])
    else:
        import torch
        import torch.multiprocessing as mp

        world = torch.cuda.device_count()
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
        ranks = mp.spawn(run_rank, args=(world, cfg), nprocs=world, join=False)
        signal.signal(signal.SIGTERM, lambda signum, frame: [p.terminate() for p in ranks.processes])
        while not ranks.join():
            pass
    summary = {
        "host": socket.gethostname(),
        "world": world,
        "seconds": round(time.time() - start, 1),
        **_annotate_from_logs(cfg, world),
    }
    rows = _rows(cfg)
    summary["rows"] = len(rows)
    summary["status"] = {s: sum(r["status"] == s for r in rows) for s in {r["status"] for r in rows}}
    (cfg.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(
        json.dumps(summary, indent=1)
        if args.json
        else f"{summary['rows']} rows in {summary['seconds']} s, status {summary['status']}",
        file=sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
