"""What Triton makes of a kernelcast Triton config for a GPU, found on any host (no GPU needed): per kernel of
the call, the shared memory a CTA needs, registers per thread and the stack frame (where spilled registers go).

A config's latency is set by these more than by its numbers: a tile whose accumulators and pointers do not fit
255 registers spills to local memory; operand loads that cannot vectorize are not multi-buffered, so
``num_stages`` buys no shared memory (and no pipelining) there. Each compile class (``backend.compile_key``) is
built on meta tensors, as ``collect.precompile`` does, under a target-only Triton driver for the GPU's
architecture; ``JITFunction.warmup`` compiles it as the real call would be compiled. Registers and stack come
from ``cuobjdump -res-usage`` on the cubin (the tool ships with Triton). A config whose shared memory exceeds
the GPU's per-block limit compiles here; on the GPU it is the ``OutOfResources`` row::

    python -m kernelcast.collect.compile_facts --datasets datasets/gemm --backend triton --gpu H200 \\
        --workers 2 --out facts_h200.jsonl

Resumable: classes already in ``--out`` are skipped; one JSON line per class, appended as each finishes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kernelcast.features.desc import Desc, from_row

_RESOURCE = re.compile(r"\b(REG|STACK|SHARED|LOCAL):(\d+)")


def _cuobjdump() -> str:
    import triton

    bundled = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    found = bundled if os.path.exists(bundled) else shutil.which("cuobjdump")
    if not found:
        raise FileNotFoundError("cuobjdump: not bundled with this triton and not on PATH")
    return found


def resource_usage(cubin: bytes) -> dict[str, int]:
    """REG, STACK, SHARED (static), LOCAL of the one function in ``cubin``, as ``cuobjdump -res-usage`` prints them."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        out = subprocess.run([_cuobjdump(), "-res-usage", fh.name], capture_output=True, text=True, check=True).stdout
    usage = {k.lower(): int(v) for k, v in _RESOURCE.findall(out)}
    if "reg" not in usage:
        raise ValueError(f"cuobjdump -res-usage printed no REG line: {out[:200]!r}")
    return usage


@contextlib.contextmanager
def _recording() -> Iterator[list]:
    """Every kernel ``JITFunction.warmup`` returns while open, with its function's name."""
    from triton.runtime.jit import JITFunction

    seen: list = []
    original = JITFunction.warmup

    def warmup(self, *args, **kwargs):
        kernel = original(self, *args, **kwargs)
        seen.append((self.__name__, kernel))
        return kernel

    JITFunction.warmup = warmup
    try:
        yield seen
    finally:
        JITFunction.warmup = original


def capability(gpu_name: str) -> int:
    """The CUDA compute capability of a database GPU as Triton names targets (sm_90a -> 90)."""
    from kernelcast.features.gpu import get_gpu

    spec = get_gpu(gpu_name)
    if spec.cuda_capability is None:
        raise ValueError(f"gpu: compile facts need an NVIDIA target; {spec.name!r} has target {spec.target!r}")
    major, minor = spec.cuda_capability
    return major * 10 + minor


def facts_of(desc: Desc, gpu_name: str) -> list[dict[str, Any]]:
    """One record per kernel ``desc``'s call compiles to on ``gpu_name``: name, shared bytes, registers, stack."""
    from kernelcast.collect.workloads import get_backend
    from kernelcast.features.gpu import get_gpu
    from kernelcast.features.inductor import triton_target

    limit = int(get_gpu(gpu_name).shared_memory_per_block_bytes)
    start = time.perf_counter()
    with triton_target(capability(gpu_name)), _recording() as seen:
        get_backend(desc.op, desc.backend).compile_only(desc)
    out = []
    for name, kernel in seen:
        usage = resource_usage(kernel.asm["cubin"])
        shared = int(kernel.metadata.shared)
        out.append(
            {
                "kernel": name,
                "shared_bytes": shared,
                "fits_shared": shared <= limit,
                "registers": usage["reg"],
                "stack_bytes": usage.get("stack", 0),
                "local_bytes": usage.get("local", 0),
                "num_warps": int(kernel.metadata.num_warps),
            }
        )
    if not out:
        raise RuntimeError(f"{desc.key()}: the call compiled no Triton kernel")
    out[0]["seconds"] = round(time.perf_counter() - start, 3)
    return out


def with_config(row: dict) -> Desc:
    """The description of a row or description dict with its config as given, even one the shared-memory rule
    refuses (compile facts are how that rule is checked): read with one pipeline stage, then the real config set."""
    config = row["config"]
    config = json.loads(config) if isinstance(config, str) else config
    desc = from_row({**row, "config": {**config, "num_stages": 1}})
    object.__setattr__(desc, "config", tuple(sorted(config.items())))
    return desc


def class_id(desc: Desc) -> str:
    """A stable text name of ``desc``'s compile class (the join key of a facts file)."""
    from kernelcast.collect.precompile import compile_key

    return json.dumps(compile_key(desc), default=list)


def _one(args: tuple[dict, str]) -> dict[str, Any]:
    desc_dict, gpu_name = args
    desc = with_config(desc_dict)
    record = {"class": class_id(desc), "gpu": gpu_name, "desc": desc_dict}
    try:
        record["kernels"] = facts_of(desc, gpu_name)
    except Exception as exc:  # noqa: BLE001 - recorded once per class, the run goes on
        record["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    return record


def collect_facts(
    descs: Iterable[Desc], gpu_name: str, out: str | os.PathLike, workers: int = 2, done: Iterable[str] = ()
) -> dict[str, Any]:
    """Compile facts for every compile class of ``descs`` not yet in ``out`` (JSON lines, appended) nor in ``done``
    (class ids compiled elsewhere, e.g. a facts table's ``class_id``); a summary."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    done = set(done)
    if os.path.exists(out):
        with open(out) as fh:
            done |= {json.loads(line)["class"] for line in fh if line.strip()}
    todo: dict[str, Desc] = {}
    for desc in descs:
        cid = class_id(desc)
        if cid not in done and cid not in todo:
            todo[cid] = desc
    start, failed = time.perf_counter(), 0
    with open(out, "a") as fh, ProcessPoolExecutor(max(1, workers), mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(_one, (d.to_dict(), gpu_name)) for d in todo.values()]
        for i, fut in enumerate(as_completed(futures), 1):
            rec = fut.result()
            failed += "error" in rec
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            print(f"\rcompile facts {i}/{len(futures)} ({failed} failed)", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return {
        "classes": len(todo),
        "already": len(done),
        "failed": failed,
        "wall_s": round(time.perf_counter() - start, 1),
        "out": str(out),
    }


#: the kernel of each op's call whose resources the facts table keeps (the largest figures where a call runs it twice)
MAIN_KERNELS = ("kc_gemm_kernel", "kc_attn_fwd", "kc_moe_gemm")


def facts_table(jsonl: str | os.PathLike) -> Any:
    """One row per compiled class of a facts file: its description's fields and config, and the main kernel's
    shared bytes, fit, registers, stack and local bytes (the largest over its launches); failed classes left out."""
    import pandas as pd

    rows = []
    with open(jsonl) as fh:
        for line in filter(str.strip, fh):
            rec = json.loads(line)
            kernels = [k for k in rec.get("kernels", []) if k["kernel"] in MAIN_KERNELS]
            if not kernels:
                continue
            row = {k: v for k, v in rec["desc"].items() if k != "config"} | rec["desc"].get("config", {})
            row |= {"class_id": rec["class"], "gpu": rec["gpu"], "fits_shared": all(k["fits_shared"] for k in kernels)}
            row |= {c: max(k[c] for k in kernels) for c in ("shared_bytes", "registers", "stack_bytes", "local_bytes")}
            rows.append(row)
    return pd.DataFrame(rows)


def write_serving_table(table: Any, kernel: str, folder: str | os.PathLike) -> str:
    """The columns ``features.compiled`` reads (its ``KEYS`` and ``VALUES``) of a facts table's classes, one CSV per
    architecture in ``folder`` (``features/compiled/``), written atomically; returns the paths."""
    from kernelcast.features.compiled import FLAGS, KEYS, VALUES, table_name

    keys, written = list(KEYS[kernel]), []
    for gpu, mine in key_columns(table, kernel).groupby("gpu"):
        frame = mine[[*keys, *VALUES, "triton"]].drop_duplicates(keys).sort_values(keys)
        frame = frame.assign(**{k: frame[k].astype(int) for k in keys if k in FLAGS})
        path = os.path.join(folder, table_name(kernel, capability(str(gpu))))
        frame.to_csv(f"{path}.{os.getpid()}.tmp", index=False)
        os.replace(f"{path}.{os.getpid()}.tmp", path)
        written.append(f"{path} ({len(frame)} classes)")
    return ", ".join(written)


def _descs_of(paths: Sequence[str], backend: str) -> list[Desc]:
    import glob

    import pandas as pd

    files = [f for p in paths for f in (sorted(glob.glob(os.path.join(p, "*.parquet"))) if os.path.isdir(p) else [p])]
    if not files:
        raise FileNotFoundError(f"--datasets: no parquet files under {', '.join(paths)}")
    frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    return [with_config(row) for row in frame[frame["backend"] == backend].to_dict("records")]


def space_rows(kernel: str, gpu_name: str) -> list[dict]:
    """One description per key of ``kernel``'s whole table space (``features.compiled.SPACE``) on ``gpu_name``."""
    import itertools

    from kernelcast.features.compiled import SPACE, SPACE_CALL

    if kernel not in SPACE:
        raise ValueError(f"--space must be one of {', '.join(SPACE)}; got {kernel!r}")
    names, config_keys = list(SPACE[kernel]), ("block_m", "block_n", "block_k", "group_m", "num_warps", "num_stages")
    rows = []
    for values in itertools.product(*SPACE[kernel].values()):
        key = dict(zip(names, values))
        if kernel == "triton_gemm":
            if key["block_m"] * key["block_n"] / key["num_warps"] > GEMM_MAX_WARP_TILE:
                continue
            # the key's flags as a call: split_k 2 or 1 (group_m 8), n and k 4,096 or 4,095
            key |= {"group_m": 8, "split_k": 2 if key.pop("split") else 1}
            key |= {d: 4096 if key.pop(f"{d}16") else 4095 for d in ("n", "k")}
        config = {k: v for k, v in key.items() if k in config_keys or k == "split_k"}
        rest = {k: v for k, v in key.items() if k not in config}
        rows.append({**SPACE_CALL[kernel], **rest, "gpu": gpu_name, "config": config})
    return _fitting(rows, gpu_name) if kernel == "triton_gemm" else rows


def _fitting(rows: list[dict], gpu_name: str) -> list[dict]:
    """The Triton GEMM rows whose A and B pipeline buffers fit the GPU's shared memory per block (the others never
    run: ``features.ops.gemm``'s shared-memory rule refuses them)."""
    import numpy as np

    from kernelcast.features.gpu import get_gpu
    from kernelcast.features.ops.gemm import triton_gemm_operands

    cols = {c: np.array([r[c] for r in rows]) for c in ("m", "n", "k", "batch")}
    cols["layout"] = np.array([r["layout"] for r in rows], dtype=object)
    cols["gpu"] = np.array([gpu_name] * len(rows), dtype=object)
    tiles = ("block_m", "block_n", "block_k", "num_warps", "num_stages")
    cfg = {c: np.array([r["config"][c] for r in rows], dtype=float) for c in tiles}
    smem = triton_gemm_operands(cols, cfg, 2.0).smem_bytes  # bf16 operands
    limit = get_gpu(gpu_name).shared_memory_per_block_bytes
    return [r for r, b in zip(rows, smem) if b <= limit]


#: the Triton GEMM sweeps' pool bound (``pool_max``: block_m·block_n / num_warps, the accumulators a warp holds)
GEMM_MAX_WARP_TILE = 8192


def key_columns(table: Any, kernel: str) -> Any:
    """A facts table with ``kernel``'s key flags as columns (``features.compiled.KEYS``): Triton GEMM's split, n16
    and k16 from its description's split_k, n and k."""
    if kernel != "triton_gemm":
        return table
    return table.assign(split=table["split_k"] > 1, n16=table["n"] % 16 == 0, k16=table["k"] % 16 == 0)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="compile facts (shared memory, registers, stack) of Triton configs")
    p.add_argument("--datasets", nargs="+", help="parquet files or folders of measured rows")
    p.add_argument("--space", help="instead: every key of this kernel's table space (features.compiled.SPACE)")
    p.add_argument("--serving", help="with --table: also write features.compiled's CSV for --space into this folder")
    p.add_argument("--backend", default="triton")
    p.add_argument("--gpu", default="H200")
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2)))
    p.add_argument("--out", required=True, help="JSON lines, appended (resumable)")
    p.add_argument("--table", help="also write the facts as one parquet row per class (datasets/compile_facts/)")
    p.add_argument("--skip-table", help="a facts table (parquet) whose classes are compiled already: skipped")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    if bool(args.datasets) == bool(args.space):
        p.error("give --datasets or --space (one of them)")
    if args.serving and not (args.space and args.table):
        p.error("--serving needs --space and --table")
    descs = [with_config(r) for r in space_rows(args.space, args.gpu)] if args.space else None
    skip = ()
    if args.skip_table:
        import pandas as pd

        skip = pd.read_parquet(args.skip_table, columns=["class_id"])["class_id"]
    summary = collect_facts(descs or _descs_of(args.datasets, args.backend), args.gpu, args.out, args.workers, skip)
    if args.table:
        import triton

        table = facts_table(args.out).assign(triton=triton.__version__)
        tmp = f"{args.table}.{os.getpid()}.tmp"
        table.to_parquet(tmp, index=False)
        os.replace(tmp, args.table)
        summary["table"] = f"{args.table} ({len(table)} classes)"
        if args.serving:
            summary["serving"] = write_serving_table(table, args.space, args.serving)
    print(json.dumps(summary) if args.json else ", ".join(f"{k}: {v}" for k, v in summary.items()))


if __name__ == "__main__":
    main()
