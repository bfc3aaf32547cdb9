"""Compile Triton configs ahead of the GPU: a process pool fills Triton's on-disk cache while the GPU measures.

Triton compiles a kernel once per (config, dtype, layout, divisibility-by-16 class of its integer
arguments); the measuring process then finds each one in ``TRITON_CACHE_DIR`` and only loads it.
``warm_triton_cache`` takes descriptions (a plan's, in plan order), keeps one per compile class
(plus the small description of its output-check class), and compiles each in a worker process by
building the call on meta tensors (``BackendBase.compile_only``: nothing runs on the GPU)::

    python3 -m kernelcast.collect.precompile --plan OUT/plan.jsonl --workers 14 --log OUT/precompile.jsonl
    python3 -m kernelcast.collect.precompile --sweeps gemm_triton_wide --seed 1 --workers 14

Point both processes at the same ``TRITON_CACHE_DIR``. A failure to compile is logged, not raised:
the measuring process meets it again and records the row (``unsupported`` / ``error``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from kernelcast.features.desc import Desc, parse_desc


def compile_key(desc: Desc) -> tuple | None:
    """What Triton specializes a kernelcast Triton call on (None for backends with nothing to compile)."""
    from kernelcast.collect.workloads import get_backend

    return get_backend(desc.op, desc.backend).compile_key(desc)


def compile_targets(descs: Iterable[Desc]) -> list[Desc]:
    """One description per compile class, in first-seen order; each followed by its check's small one."""
    from kernelcast.collect.workloads import get_backend

    out, seen, checked = [], set(), set()
    for desc in descs:
        key = compile_key(desc)
        if key is None:
            continue
        backend = get_backend(desc.op, desc.backend)
        if backend.supports(desc, None):
            continue
        if key not in seen:
            seen.add(key)
            out.append(desc)
        ckey = backend.class_key(desc)
        if ckey not in checked:
            checked.add(ckey)
            small = backend.small(desc)
            if compile_key(small) not in seen:
                seen.add(compile_key(small))
                out.append(small)
    return out


def _compile_one(desc_dict: dict) -> dict[str, Any]:
    start = time.perf_counter()
    try:
        from kernelcast.collect.workloads import get_backend

        desc = parse_desc(desc_dict)
        get_backend(desc.op, desc.backend).compile_only(desc)
        error = None
    except Exception as exc:  # noqa: BLE001 - logged; the measuring process records the row
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    return {"seconds": round(time.perf_counter() - start, 3), "error": error}


def warm_triton_cache(descs: Iterable[Desc], workers: int = 14, log: str | os.PathLike | None = None) -> dict[str, Any]:
    """Compile every compile class of ``descs`` in ``workers`` processes into ``TRITON_CACHE_DIR``; a summary."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    targets = compile_targets(descs)
    start = time.perf_counter()
    failed, done = 0, 0
    fh = open(log, "a") if log else None
    try:
        if targets:
            with ProcessPoolExecutor(max(1, workers), mp_context=mp.get_context("spawn")) as pool:
                futures = {pool.submit(_compile_one, d.to_dict()): d for d in targets}
                for fut in as_completed(futures):
                    rec = fut.result()
                    done += 1
                    failed += rec["error"] is not None
                    if fh:
                        d = futures[fut]
                        fh.write(
                            json.dumps(
                                {
                                    "event": "compile",
                                    "op": d.op,
                                    "key": d.key(),
                                    **rec,
                                    "t": round(time.perf_counter() - start, 2),
                                }
                            )
                            + "\n"
                        )
                        fh.flush()
    finally:
        summary = {
            "event": "precompile_done",
            "classes": len(targets),
            "compiled": done - failed,
            "failed": failed,
            "workers": workers,
            "wall_s": round(time.perf_counter() - start, 1),
            "cache_dir": os.environ.get("TRITON_CACHE_DIR"),
        }
        if fh:
            fh.write(json.dumps(summary) + "\n")
            fh.close()
    return summary


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="compile a plan's Triton configs into TRITON_CACHE_DIR ahead of the GPU")
    p.add_argument("--plan", help="a plan file (gpu_job's OUT/plan.jsonl)")
    p.add_argument("--sweeps", help="comma-separated sweep names (instead of --plan), expanded as gpu_job plans them")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gpu-name", default="H200")
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    p.add_argument("--log", help="append one JSON line per compile and a summary")
    args = p.parse_args(argv)
    from kernelcast.collect.plan import build_plan, load_plan

    if bool(args.plan) == bool(args.sweeps):
        p.error("give exactly one of --plan or --sweeps")
    plan = (
        load_plan(args.plan)
        if args.plan
        else build_plan([s for s in args.sweeps.split(",") if s], args.gpu_name, args.seed)
    )
    print(json.dumps(warm_triton_cache([e.desc for e in plan.entries], args.workers, args.log)), file=sys.stderr)


if __name__ == "__main__":
    main()
