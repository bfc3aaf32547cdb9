"""Nsight Compute runner: a batch of descriptions in ONE ncu process, an NVTX range per config, raw CSV parsed
into ``ncu__`` columns.

``run_batch`` writes a plan, runs ``ncu ... python -m kernelcast.collect.ncu --child --plan P``
(each config's call inside ``kc<index>``), exports ``ncu -i rep --csv --page raw --print-units
base`` and aggregates per config: durations and bytes summed, percentages and the SM clock
duration-weighted, launch facts of the longest kernel. Clocks are never touched
(``--clock-control none``); ncu's default cache control flushes caches between passes.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

NCU = os.environ.get("KERNELCAST_NCU", "/usr/local/cuda/bin/ncu")
METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
)
#: always present in --page raw output (launch facts), taken from the config's longest kernel
LAUNCH = (
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block",
    "launch__grid_size",
    "launch__block_size",
    "launch__cluster_size",
    "launch__waves_per_multiprocessor",
)
SUMMED = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum")
WEIGHTED = tuple(m for m in METRICS if m not in SUMMED)
NVTX_RE = re.compile(r"(?:^|[:\s\"])kc(\d+)(?=[:/\"\s]|$)")
DURATION = "gpu__time_duration.sum"


def _number(text: str) -> float | None:
    """A CSV cell as a number: thousands separators stripped; None when not numeric."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_raw_csv(text: str) -> list[dict[str, Any]]:
    """``--csv --page raw`` output -> one dict per kernel launch: index (from NVTX), name, metrics in base units.

    Lines before the header (``==PROF==``, the app's stdout) are skipped; the units row is read
    so that a non-base unit is an error instead of a silently scaled number.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        raise ValueError('ncu raw CSV has no header row starting with "ID"')
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, units = rows[0], rows[1]
    nvtx_cols = [i for i, h in enumerate(header) if "Push/Pop_Range" in h]
    wanted = {name: header.index(name) for name in METRICS + LAUNCH if name in header}
    scale = {"ns": 1.0, "byte": 1.0, "hz": 1.0, "%": 1.0, "": 1.0}
    for name, col in wanted.items():
        if units[col] not in scale and not units[col].startswith(("register", "byte/", "block", "thread", "warp")):
            raise ValueError(f"ncu column {name!r} is in unit {units[col]!r}; export with --print-units base")
    out = []
    for row in rows[2:]:
        if len(row) != len(header):
            continue
        match = next((m for c in nvtx_cols if (m := NVTX_RE.search(row[c]))), None)
        out.append(
            {
                "index": int(match.group(1)) if match else None,
                "name": row[header.index("Kernel Name")],
                **{name: _number(row[col]) for name, col in wanted.items()},
            }
        )
    return out


def aggregate(kernels: Sequence[dict[str, Any]], calls: int = 1) -> dict[str, float]:
    """One config's ``ncu__`` columns from its kernels (over ``calls`` profiled calls)."""
    total = sum(k.get(DURATION) or 0.0 for k in kernels)
    out: dict[str, float] = {"ncu__kernel_count": len(kernels) / calls}
    for name in SUMMED:
        values = [k.get(name) for k in kernels]
        out[f"ncu__{name}"] = (
            sum(v for v in values if v is not None) / calls if any(v is not None for v in values) else None
        )
    for name in WEIGHTED:
        pairs = [(k.get(name), k.get(DURATION) or 0.0) for k in kernels if k.get(name) is not None]
        weight = sum(w for _, w in pairs)
        out[f"ncu__{name}"] = sum(v * w for v, w in pairs) / weight if weight > 0 else None
    longest = max(kernels, key=lambda k: k.get(DURATION) or 0.0)
    for name in LAUNCH:
        out[f"ncu__{name}"] = longest.get(name)
    out["ncu__time_us"] = total / calls / 1e3
    return out


def group_by_config(kernels: Iterable[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    groups: dict[int, list[dict[str, Any]]] = {}
    for k in kernels:
        if k["index"] is not None:
            groups.setdefault(k["index"], []).append(k)
    return groups


def _child(plan_path: str, calls: int) -> None:
    """Inside ncu: run each config (untimed warm-up first) ``calls`` times in NVTX range ``kc<index>``."""
    import torch

    from kernelcast.collect.measure import _checked
    from kernelcast.collect.workloads import get_backend
    from kernelcast.features.desc import parse_desc

    for index, raw in enumerate(json.loads(Path(plan_path).read_text())):
        try:
            desc = parse_desc(raw)
            backend = get_backend(desc.op, desc.backend)
            if backend.supports(desc, None):
                continue
            _checked(backend, desc)
            call = backend.prepare(desc)
            call()
            torch.cuda.synchronize()
            for _ in range(calls):
                torch.cuda.nvtx.range_push(f"kc{index}")
                call()
                torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - a config that fails has no ncu rows; say so, go on
            print(f"kc{index}: {type(exc).__name__}: {exc}", file=sys.stderr)
            if "illegal" in str(exc) or "launch failure" in str(exc):
                raise


def ncu_command(plan: Path, report: Path, calls: int, nvtx_filter: bool = True) -> list[str]:
    cmd = [NCU, "--clock-control", "none", "--target-processes", "all", "--nvtx", "--metrics", ",".join(METRICS)]
    if nvtx_filter:
        cmd += ["--nvtx-include", "regex:kc[0-9]+/"]
    return cmd + [
        "-f",
        "-o",
        str(report),
        sys.executable,
        "-m",
        "kernelcast.collect.ncu",
        "--child",
        "--plan",
        str(plan),
        "--calls",
        str(calls),
    ]


def run_batch(
    descs: Sequence[Any],
    work: str | os.PathLike,
    calls: int = 1,
    timeout_s: float = 3600,
    env: dict[str, str] | None = None,
) -> list[dict[str, Any] | None]:
    """Profile ``descs`` in one ncu process; per desc its ``ncu__`` columns (None when it produced no kernel)."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    plan, report = work / "ncu_plan.json", work / "ncu_report"
    plan.write_text(json.dumps([d.to_dict() for d in descs]))
    for nvtx_filter in (True, False):  # without the include filter when a driver ignores it
        log = subprocess.run(
            ncu_command(plan, report, calls, nvtx_filter), capture_output=True, text=True, timeout=timeout_s, env=env
        )
        (work / "ncu_log.txt").write_text(log.stdout[-200000:] + log.stderr[-200000:])
        csv_text = subprocess.run(
            [NCU, "-i", f"{report}.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        ).stdout
        groups = group_by_config(parse_raw_csv(csv_text)) if '"ID",' in csv_text else {}
        if groups:
            break
    (work / "ncu_raw.csv").write_text(csv_text)
    Path(f"{report}.ncu-rep").unlink(missing_ok=True)  # large; the CSV holds what we use
    return [aggregate(groups[i], calls) if i in groups else None for i in range(len(descs))]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the ncu child: run a plan's configs inside NVTX ranges")
    parser.add_argument("--child", action="store_true", required=True)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--calls", type=int, default=1)
    args = parser.parse_args(argv)
    _child(args.plan, args.calls)


if __name__ == "__main__":
    main()
