"""Eager kernels timed inside their call (``collect/eager_job.py``) as training rows of the eager families.

For each measured graph the same function runs on meta tensors through ``predict_module``'s capture and lowering
(``graphs.predict.kernel_descs``: one description per kernel, warm-aware families with the bytes of their reads an
earlier kernel left in L2), and the measured device activities are grouped into the kernels those descriptions
stand for: a ``Memset`` opens the reduction after it (its semaphores; the harness's label of a reduction counts it
too), PyTorch's two-kernel layer norm (``RowwiseMoments`` then ``LayerNormForward``, for rows whose length is not a
multiple of 4) is one ``layer_norm``. A graph is used only when the groups and the descriptions agree one to one
(count, and each reduction on a non-elementwise kernel, each elementwise description on an elementwise kernel);
the rest are counted by reason. Labels: the group's summed median over the call's repeats (p10/p90 likewise).

``datasets/<op>/kernelcast_h200_sxm_<day>_<tag>.parquet``: rows in the family's schema, ``method`` = ``cupti in
call`` (the harness's rows say ``cupti``), ``repeat_of`` empty; a kernel whose description a file of the other role
(``--role``: training rows, or an independent test set's) holds is dropped.

Usage: ``python -m kernelcast.pipeline.ingraph RAW.jsonl.gz --datasets datasets --day 20261203 --tag ingraph``.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import multiprocessing as mp
import sys
from collections.abc import Sequence
from pathlib import Path

from kernelcast.collect.dataset import card_keys, plain_key, row_schema, table_from_rows, write_atomic
from kernelcast.features.desc import op_fields

GPU = "h200_sxm"
PROVENANCE = {  # the lent H200 of 2026-12-03 (benchmarks/results/collect_h200_20261203_s12_call.log)
    "gpu_name": "NVIDIA H200",
    "driver": "580.159.04",
    "cuda": "13.0",
    "torch": "2.11.0",
    "triton": "3.6.0",
    "timer": "cupti",
    "cache": "cold",
    "source": "kernelcast",
    "method": "cupti in call",
}
#: device activities that belong to the kernel launched after them
OPENERS = ("Memset", "RowwiseMomentsCUDAKernel")


def group_events(kernels: Sequence[Sequence]) -> list[list]:
    """[name, median, p10, p90] per device activity -> one entry per kernel a description stands for."""
    out, pending = [], None
    for name, med, lo, hi in kernels:
        opens = name.startswith(OPENERS[0]) or OPENERS[1] in name
        if pending is not None:
            name, med, lo, hi = pending[0] + ";" + name, pending[1] + med, pending[2] + lo, pending[3] + hi
            pending = None
        if opens:
            pending = [name, med, lo, hi]
        else:
            out.append([name, med, lo, hi])
    if pending is not None:
        out.append(pending)
    return out


def _agrees(family: str, name: str) -> bool:
    last = name.split(";")[-1]
    if family == "elementwise":
        return "elementwise_kernel" in last
    if family == "reduction":
        return "elementwise_kernel" not in last
    return True


def graph_rows(raw: dict) -> tuple[list[tuple[str, dict]], str]:
    """(op, row) per kernel of one measured graph, or no rows and the reason."""
    import torch

    from kernelcast.collect.fusion_graphs import TORCH_DTYPE, compile_source
    from kernelcast.graphs.capture import CaptureError, capture
    from kernelcast.graphs.predict import kernel_descs

    if "error" in raw:
        return [], "measurement failed"
    inputs = tuple(
        torch.empty(shape, dtype=getattr(torch, TORCH_DTYPE[dt].removeprefix("torch.")), device="meta")
        for shape, dt in raw["inputs"]
    )
    try:
        table, _, _ = kernel_descs(capture(compile_source(raw["source"]), inputs), GPU)
    except (CaptureError, ValueError) as exc:
        return [], f"not lowered: {type(exc).__name__}"
    groups = group_events(raw["kernels"])
    if table["desc"].isna().any():
        return [], "a kernel without a description"
    if len(groups) != len(table):
        return [], "kernel count differs"
    if not all(_agrees(f, g[0]) for f, g in zip(table["family"], groups)):
        return [], "kernel kinds differ"
    out = []
    for key, (name, med, lo, hi) in zip(table["desc"], groups):
        desc = json.loads(key)
        op = desc["op"]
        row = {k: v for k, v in desc.items() if k in op_fields(op) or k == "op"}
        row.update(
            latency_us=float(med),
            p10_us=float(lo),
            p90_us=float(hi),
            repeats=len(raw["eager_device_us"]),
            kernel_count=name.count(";") + 1,
            kernel_names=name[:2000],
            status="ok",
            desc_key=key,
            **PROVENANCE,
        )
        out.append((op, row))
    return out, "used"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelcast.pipeline.ingraph", description=__doc__.splitlines()[0])
    p.add_argument("raw", nargs="+", help="eager_job JSON lines (.jsonl or .jsonl.gz)")
    p.add_argument("--datasets", default="datasets")
    p.add_argument("--day", required=True, help="the measuring day, YYYYMMDD")
    p.add_argument("--tag", default="ingraph", help="the files' shard tag")
    p.add_argument("--git-rev", default=None, help="the collector's revision, recorded per row")
    p.add_argument(
        "--ops",
        default="elementwise,reduction",
        help="families whose rows are written (copy's in-call rows disagree with its harness rows: not by default)",
    )
    p.add_argument(
        "--role",
        choices=("train", "test"),
        default="train",
        help="what the rows will be: kernels a file of the other role holds are dropped",
    )
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    if not (len(args.day) == 8 and args.day.isdigit()):
        raise SystemExit(f"--day must be YYYYMMDD; got {args.day!r}")
    raws = []
    for path in args.raw:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            raws += [json.loads(line) for line in f if line.strip()]
    reasons: collections.Counter = collections.Counter()
    by_op: dict[str, list[dict]] = collections.defaultdict(list)
    with mp.get_context("spawn").Pool(args.workers) as pool:
        for i, (rows, reason) in enumerate(pool.imap(graph_rows, raws, chunksize=32)):
            reasons[reason] += 1
            for op, row in rows:
                by_op[op].append(row)
            if (i + 1) % 2000 == 0 and not args.json:
                print(f"ingraph {i + 1}/{len(raws)} graphs", file=sys.stderr, flush=True)
    time = f"{args.day[:4]}-{args.day[4:6]}-{args.day[6:]}"
    written = {}
    dropped = {}
    ops = args.ops.split(",")
    for op, rows in sorted((op, rows) for op, rows in by_op.items() if op in ops):
        held = card_keys(Path(args.datasets), op, "train" if args.role == "test" else "test")
        kept = [r for r in rows if plain_key(r["desc_key"]) not in held]
        dropped[op], rows = len(rows) - len(kept), kept
        for r in rows:
            r.update(gpu=GPU, git_rev=args.git_rev, time=time)
        path = Path(args.datasets) / op / f"kernelcast_{GPU}_{args.day}_{args.tag}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(table_from_rows(rows, row_schema(op), where=str(path)), path, compression="zstd")
        written[op] = {"rows": len(rows), "dropped": dropped[op], "path": str(path)}
    summary = {"graphs": len(raws), "graphs_by_outcome": dict(reasons), "files": written}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"ingraph: {len(raws)} graphs: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
        for op, w in written.items():
            other = "a training" if args.role == "test" else "a test"
            print(f"  {op}: {w['rows']:,} rows ({w['dropped']} {other} file holds dropped) -> {w['path']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
