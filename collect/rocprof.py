"""AMD profilers: rocprofv3 and legacy rocprof command lines, their CSV files, dispatches -> Measurement.

Layouts per shared/reference/tool-formats.md §2; every file is parsed by column name, so both the
ROCm 6.2 and the current rocprofv3 headers, and both legacy rocprof dialects, are read.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kernelcast.collect.api import CACHE_STATES, Measurement

_COUNTER_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\[\d+\])?(:device=\d+)?$")
#: legacy rocprof results.csv columns that are not counters
_LEGACY_FIXED = (
    "Index",
    "KernelName",
    "gpu-id",
    "queue-id",
    "queue-index",
    "pid",
    "tid",
    "grd",
    "wgr",
    "lds",
    "scr",
    "arch_vgpr",
    "accum_vgpr",
    "sgpr",
    "wave_size",
    "sig",
    "obj",
    "DispatchNs",
    "BeginNs",
    "EndNs",
    "CompleteNs",
    "DurationNs",
)


@dataclass(frozen=True)
class Dispatch:
    """One kernel dispatch: name, device timestamps (ns), launch geometry (work-items), resources."""

    kernel_name: str
    start_ns: int | None
    end_ns: int | None
    dispatch_id: int | None = None
    correlation_id: int | None = None
    grid_size: int | None = None  # work-items, x*y*z
    workgroup_size: int | None = None  # work-items per workgroup, x*y*z
    grid: tuple[int, int, int] | None = None
    workgroup: tuple[int, int, int] | None = None
    lds_bytes: int | None = None
    scratch_bytes: int | None = None
    vgpr: int | None = None
    accum_vgpr: int | None = None
    sgpr: int | None = None
    counters: Mapping[str, float] = field(default_factory=dict)

    @property
    def duration_ns(self) -> int | None:
        return None if self.start_ns is None or self.end_ns is None else self.end_ns - self.start_ns


@dataclass(frozen=True)
class KernelStat:
    """One line of ``*_kernel_stats.csv`` / ``results.stats.csv`` (Min/Max/StdDev only from rocprofv3)."""

    name: str
    calls: int
    total_ns: float
    average_ns: float
    percentage: float
    min_ns: float | None = None
    max_ns: float | None = None
    stddev_ns: float | None = None


def _num(value: str | None) -> int | float | None:
    """CSV cell -> int (exact, for ns timestamps) or float; empty -> None."""
    if value is None or value.strip() == "":
        return None
    text = value.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


def _int(row: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        if name in row and row[name] not in (None, ""):
            return int(_num(row[name]))
    return None


def _rows(path: str | os.PathLike, required: Sequence[str]) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in required if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(
                f"{path}: not the expected layout: missing column(s) {', '.join(missing)}; "
                f"header has {', '.join(reader.fieldnames or ())}"
            )
        return list(reader)


def _xyz(row: Mapping[str, str], prefix: str) -> tuple[int, int, int] | None:
    dims = tuple(_int(row, f"{prefix}_{a}") for a in "XYZ")
    return None if None in dims else dims


def parse_kernel_trace(path: str | os.PathLike) -> list[Dispatch]:
    """rocprofv3 ``*_kernel_trace.csv`` (ROCm 6.2 or current header), sorted by start time."""
    out = []
    for row in _rows(path, ("Kernel_Name", "Dispatch_Id", "Start_Timestamp", "End_Timestamp")):
        grid, wg = _xyz(row, "Grid_Size"), _xyz(row, "Workgroup_Size")
        out.append(
            Dispatch(
                kernel_name=row["Kernel_Name"],
                start_ns=_int(row, "Start_Timestamp"),
                end_ns=_int(row, "End_Timestamp"),
                dispatch_id=_int(row, "Dispatch_Id"),
                correlation_id=_int(row, "Correlation_Id"),
                grid_size=None if grid is None else grid[0] * grid[1] * grid[2],
                workgroup_size=None if wg is None else wg[0] * wg[1] * wg[2],
                grid=grid,
                workgroup=wg,
                lds_bytes=_int(row, "LDS_Block_Size", "Group_Segment_Size"),
                scratch_bytes=_int(row, "Scratch_Size", "Private_Segment_Size"),
                vgpr=_int(row, "VGPR_Count"),
                accum_vgpr=_int(row, "Accum_VGPR_Count"),
                sgpr=_int(row, "SGPR_Count"),
            )
        )
    return sorted(out, key=lambda d: (d.start_ns or 0, d.dispatch_id or 0))


def parse_counter_collection(path: str | os.PathLike) -> list[Dispatch]:
    """rocprofv3 ``*_counter_collection.csv`` (long: one row per dispatch x counter) -> one Dispatch each."""
    by_id: dict[int, dict] = {}
    for row in _rows(path, ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")):
        d = by_id.setdefault(
            _int(row, "Dispatch_Id"),
            {
                "kernel_name": row["Kernel_Name"],
                "start_ns": _int(row, "Start_Timestamp"),
                "end_ns": _int(row, "End_Timestamp"),
                "dispatch_id": _int(row, "Dispatch_Id"),
                "correlation_id": _int(row, "Correlation_Id"),
                "grid_size": _int(row, "Grid_Size"),
                "workgroup_size": _int(row, "Workgroup_Size"),
                "lds_bytes": _int(row, "LDS_Block_Size"),
                "scratch_bytes": _int(row, "Scratch_Size"),
                "vgpr": _int(row, "VGPR_Count"),
                "accum_vgpr": _int(row, "Accum_VGPR_Count"),
                "sgpr": _int(row, "SGPR_Count"),
                "counters": {},
            },
        )
        d["counters"][row["Counter_Name"]] = d["counters"].get(row["Counter_Name"], 0) + float(row["Counter_Value"])
    return [Dispatch(**d) for _, d in sorted(by_id.items())]


def parse_kernel_stats(path: str | os.PathLike) -> list[KernelStat]:
    """rocprofv3 ``*_kernel_stats.csv`` or legacy ``results.stats.csv``, in file order."""
    out = []
    for row in _rows(path, ("Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage")):
        opt = {
            k: (None if row.get(c) in (None, "") else float(row[c]))
            for k, c in (("min_ns", "MinNs"), ("max_ns", "MaxNs"), ("stddev_ns", "StdDev"))
        }
        out.append(
            KernelStat(
                row["Name"],
                int(row["Calls"]),
                float(row["TotalDurationNs"]),
                float(row["AverageNs"]),
                float(row["Percentage"]),
                **opt,
            )
        )
    return out


def parse_rocprof_results(path: str | os.PathLike) -> list[Dispatch]:
    """Legacy rocprof ``results.csv``, either dialect (plain: unquoted header; --stats: quoted + DurationNs)."""
    out = []
    for row in _rows(path, ("Index", "KernelName")):
        start, end = _int(row, "BeginNs"), _int(row, "EndNs")
        if end is None and start is not None and _int(row, "DurationNs") is not None:
            end = start + _int(row, "DurationNs")
        counters = {k: float(v) for k, v in row.items() if k not in _LEGACY_FIXED and v not in (None, "")}
        out.append(
            Dispatch(
                kernel_name=row["KernelName"],
                start_ns=start,
                end_ns=end,
                dispatch_id=_int(row, "Index"),
                grid_size=_int(row, "grd"),
                workgroup_size=_int(row, "wgr"),
                lds_bytes=_int(row, "lds"),
                scratch_bytes=_int(row, "scr"),
                vgpr=_int(row, "arch_vgpr"),
                accum_vgpr=_int(row, "accum_vgpr"),
                sgpr=_int(row, "sgpr"),
                counters=counters,
            )
        )
    return out


def _check_app(app: Sequence[str]) -> list[str]:
    if isinstance(app, str) or not app or not all(isinstance(a, str) and a for a in app):
        raise ValueError(f"app must be a non-empty list of command-line words; got {app!r}")
    return list(app)


def _check_counters(counters: Iterable[str]) -> list[str]:
    out = list(counters)
    for c in out:
        if not isinstance(c, str) or not _COUNTER_RE.match(c):
            raise ValueError(f"counter must be a hardware counter name like SQ_WAVES; got {c!r}")
    return out


def rocprofv3_command(
    app: Sequence[str],
    out_dir: str | os.PathLike,
    out_file: str = "kernelcast",
    counters: Iterable[str] = (),
    stats: bool = False,
) -> list[str]:
    """``rocprofv3 --kernel-trace [--pmc C...] [--stats] --output-format csv -d DIR -o FILE -- app...``.

    CSV is asked for explicitly (the current SDK defaults to rocpd SQLite); files land as
    ``DIR/FILE_kernel_trace.csv`` etc. (see ``rocprofv3_outputs``).
    """
    cmd = ["rocprofv3", "--kernel-trace"]
    pmc = _check_counters(counters)
    if pmc:
        cmd += ["--pmc", *pmc]
    if stats:
        cmd.append("--stats")
    return cmd + ["--output-format", "csv", "-d", str(out_dir), "-o", out_file, "--", *_check_app(app)]


def rocprofv3_outputs(out_dir: str | os.PathLike, out_file: str = "kernelcast") -> dict[str, Path]:
    """Where ``rocprofv3_command``'s CSV files appear: ``<dir>/<file>_<domain>.csv``."""
    return {d: Path(out_dir) / f"{out_file}_{d}.csv" for d in ("kernel_trace", "counter_collection", "kernel_stats")}


def rocprof_input(counters: Iterable[str]) -> str:
    """Text of the legacy rocprof ``-i`` input file: ``pmc: A B``."""
    pmc = _check_counters(counters)
    if not pmc:
        raise ValueError("counters must name at least one counter for a rocprof input file; got none")
    return "pmc: " + " ".join(pmc) + "\n"


def rocprof_command(
    app: Sequence[str], output_csv: str | os.PathLike, input_file: str | os.PathLike | None = None, stats: bool = False
) -> list[str]:
    """``rocprof --timestamp on [-i pmc.txt] [--stats] -o results.csv app...`` (legacy v1)."""
    cmd = ["rocprof", "--timestamp", "on"]
    if input_file is not None:
        cmd += ["-i", str(input_file)]
    if stats:
        cmd.append("--stats")
    return cmd + ["-o", str(output_csv), *_check_app(app)]


def group_calls(
    dispatches: Sequence[Dispatch], kernels_per_call: int | None = None, separator: str | None = None
) -> list[list[Dispatch]]:
    """Split one run's dispatches (in start order) into calls.

    Either every ``kernels_per_call`` consecutive dispatches are one call, or a dispatch whose
    name matches the regex ``separator`` (e.g. the L2-flush kernel before each cold call) starts
    a call and is itself left out; dispatches before the first separator are dropped.
    """
    if (kernels_per_call is None) == (separator is None):
        raise ValueError("give exactly one of kernels_per_call or separator")
    ordered = sorted(dispatches, key=lambda d: (d.start_ns or 0, d.dispatch_id or 0))
    if kernels_per_call is not None:
        if isinstance(kernels_per_call, bool) or not isinstance(kernels_per_call, int) or kernels_per_call < 1:
            raise ValueError(f"kernels_per_call must be an integer >= 1; got {kernels_per_call!r}")
        if len(ordered) % kernels_per_call:
            raise ValueError(f"kernels_per_call={kernels_per_call} does not divide the {len(ordered)} dispatches")
        return [ordered[i : i + kernels_per_call] for i in range(0, len(ordered), kernels_per_call)]
    pattern, calls = re.compile(separator), []
    for d in ordered:
        if pattern.search(d.kernel_name):
            calls.append([])
        elif calls:
            calls[-1].append(d)
    return [c for c in calls if c]


def measurement_from_dispatches(
    dispatches: Sequence[Dispatch],
    cache: str,
    kernels_per_call: int | None = None,
    separator: str | None = None,
    skip_calls: int = 0,
) -> Measurement:
    """Device time per call = sum of its kernels' durations (µs); ``skip_calls`` warm-up calls dropped."""
    if cache not in CACHE_STATES:
        raise ValueError(f"cache must be one of {', '.join(CACHE_STATES)}; got {cache!r}")
    calls = group_calls(dispatches, kernels_per_call, separator)[skip_calls:]
    if not calls:
        raise ValueError(f"no calls left after grouping and skip_calls={skip_calls}")
    names = [tuple(d.kernel_name for d in c) for c in calls]
    if len(set(names)) > 1:
        raise ValueError(
            f"calls launch different kernels ({names[0]} vs {next(n for n in names if n != names[0])}); "
            "check the grouping"
        )
    if any(d.duration_ns is None for c in calls for d in c):
        raise ValueError("a dispatch has no timestamps: run rocprof with --timestamp on / --kernel-trace")
    samples = tuple(sum(d.duration_ns for d in c) / 1000.0 for c in calls)
    return Measurement(samples_us=samples, kernels=names[0], timer="rocprof", cache=cache)
