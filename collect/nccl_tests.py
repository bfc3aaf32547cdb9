"""nccl-tests output (text tables and ``-J`` JSON) -> dataset rows of op ``collective``, source ``nccl-tests``.

Layout from NVIDIA/nccl-tests ``src/util.cu``: a preamble ``size count type redop root`` then an
out-of-place and an in-place block of ``time algbw busbw #wrong`` (4 more per-iteration columns
``i_min i_max i_p99 i_cv%`` with ``-I``; ``cputime`` instead of ``time`` with ``-C``; a timestamp
appended with ``-S``). ``size`` is our ``bytes``; ranks = threads × GPUs × processes (one
``#  Rank`` line per rank); ranks per node = ranks / distinct hosts.

``python -m kernelcast.collect.nccl_tests FILE... --out PATH.parquet [--json]``
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernelcast.features.desc import parse_desc
from kernelcast.features.gpu import resolve_gpu_name
from kernelcast.features.ops.collective import COLLECTIVES

#: nccl-tests binary -> our collective name
PROGRAMS = {
    "all_reduce_perf": "all_reduce",
    "all_gather_perf": "all_gather",
    "reduce_scatter_perf": "reduce_scatter",
    "alltoall_perf": "all_to_all",
    "broadcast_perf": "broadcast",
    "sendrecv_perf": "send_recv",
}
#: nccl type names -> our dtypes
DTYPES = {"half": "fp16", "bfloat16": "bf16", "float": "fp32", "int8": "int8", "f8e4m3": "fp8_e4m3"}
RANK_RE = re.compile(
    r"^#\s+Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.+?)\s*$"
)
RUN_RE = re.compile(r"^# nThread (\d+) nGpus (\d+) .*?iters: (\d+) agg iters: (\d+)")
VERSION_RE = re.compile(r"nccl-library=(\d+)")


def _nccl_version(code: int | None) -> str | None:
    """NCCL_VERSION_CODE -> "2.28.9" (codes >= 2.9 are major*10000 + minor*100 + patch)."""
    if not code:
        return None
    return (
        f"{code // 10000}.{code // 100 % 100}.{code % 100}"
        if code >= 20900
        else f"{code // 1000}.{code // 100 % 10}.{code % 100}"
    )


def _collective(program: str) -> str:
    name = Path(program).name
    if name not in PROGRAMS:
        raise ValueError(
            f"nccl-tests program must be one of {', '.join(PROGRAMS)} (collectives "
            f"{', '.join(COLLECTIVES)}); got {name!r}"
        )
    return PROGRAMS[name]


def _dtype(name: str) -> str:
    if name not in DTYPES:
        raise ValueError(f"nccl-tests type must be one of {', '.join(DTYPES)}; got {name!r}")
    return DTYPES[name]


def _row(run: dict, size: int, nccl_type: str, in_place: bool, time_us: float, wrong: str | float | None) -> dict:
    """One dataset row: description, label, provenance."""
    desc = parse_desc(
        {
            "op": "collective",
            "gpu": run["gpu"],
            "dtype": _dtype(nccl_type),
            "backend": "nccl",
            "collective": run["collective"],
            "bytes": size,
            "ranks": run["ranks"],
            "ranks_per_node": run["ranks_per_node"],
            "in_place": in_place,
        }
    )
    bad = wrong not in (None, "N/A") and float(wrong) > 0
    return {
        **desc.to_row(),
        "latency_us": time_us,
        "p10_us": None,
        "p90_us": None,
        "repeats": run["repeats"],
        "kernel_count": None,
        "kernel_names": None,
        "timer": run["timer"],
        "cache": "warm",
        "sm_clock_hz": None,
        "status": "error" if bad else "ok",
        "error": f"{wrong} wrong elements" if bad else None,
        "source": "nccl-tests",
        "gpu_name": run["gpu_name"],
        "driver": None,
        "cuda": None,
        "torch": None,
        "triton": None,
        "nccl": run["nccl"],
        "collector_version": None,
        "git_rev": None,
        "host": run["host"],
        "time": run.get("time"),
        "method": run["method"],
    }


def _run_facts(
    program: str,
    ranks: list[tuple[str, str]],
    repeats: int | None,
    timer: str,
    nccl: str | None,
    start: str | None = None,
) -> dict:
    """What every row of one test shares; ``ranks`` = (host, device name) per rank."""
    if not ranks:
        raise ValueError(f"nccl-tests output of {program!r} has no '#  Rank' device lines; cannot tell ranks or GPU")
    hosts = sorted({h for h, _ in ranks})
    names = {d for _, d in ranks}
    if len(names) > 1:
        raise ValueError(f"nccl-tests run mixes GPUs {sorted(names)}; one GPU model per run is supported")
    name = names.pop()
    return {
        "collective": _collective(program),
        "ranks": len(ranks),
        "ranks_per_node": len(ranks) // len(hosts),
        "gpu": resolve_gpu_name(name),
        "gpu_name": name,
        "host": ",".join(hosts),
        "repeats": repeats,
        "timer": timer,
        "nccl": nccl,
        "time": start,
        "method": f"nccl-tests {Path(program).name}",
    }


def parse_text(text: str) -> list[dict]:
    """Rows from nccl-tests stdout (one or more tests, out-of-place and in-place blocks)."""
    rows, program, ranks, repeats, nccl, per_iter, timer = [], None, [], None, None, False, "nccl-tests"
    for line in text.splitlines():
        if line.startswith("# Collective test starting:"):
            program, ranks, per_iter, timer = line.split(":", 1)[1].strip(), [], False, "nccl-tests"
        elif (m := VERSION_RE.search(line)) and line.startswith("# nccl-tests"):
            nccl = _nccl_version(int(m.group(1)))
        elif m := RUN_RE.match(line):
            repeats = int(m.group(3)) * int(m.group(4))
        elif m := RANK_RE.match(line):
            ranks.append((m.group(4), m.group(7)))
        elif line.startswith("#") and "i_min" in line:
            per_iter = True
        elif line.startswith("#") and " cputime " in line:
            timer = "nccl-tests-cputime"
        elif line.strip() and not line.startswith("#") and program:
            rows.extend(_text_rows(line.split(), _run_facts(program, ranks, repeats, timer, nccl), per_iter))
    return rows


def _text_rows(fields: list[str], run: dict, per_iter: bool) -> list[dict]:
    width = 8 if per_iter else 4
    if len(fields) < 5 + 2 * width:
        raise ValueError(
            f"nccl-tests data line has {len(fields)} fields, expected at least {5 + 2 * width}: {' '.join(fields)!r}"
        )
    size, _count, nccl_type = int(fields[0]), fields[1], fields[2]
    out = []
    for k, in_place in ((0, False), (1, True)):
        block = fields[5 + k * width : 5 + (k + 1) * width]
        out.append(_row(run, size, nccl_type, in_place, float(block[0]), block[3]))
    return out


def parse_json(doc: dict | str) -> list[dict]:
    """Rows from an nccl-tests ``-J`` JSON file (its text or the loaded object)."""
    doc = json.loads(doc) if isinstance(doc, str) else doc
    cfg = doc.get("config") or {}
    per_process = int(cfg.get("nthreads", 1)) * int(cfg.get("ngpus", 1))
    devices = cfg.get("devices") or []
    ranks = [(d["hostname"], d["device_info"]) for d in devices for _ in range(per_process)]
    repeats = int(cfg.get("iterations", 0)) * int(cfg.get("aggregated_iterations", 1)) or None
    rows = []
    for res in doc.get("results", []):
        program = (doc.get("args") or [res.get("experiment_name") or ""])[0]
        block = res.get("out_of_place") or res.get("in_place") or {}
        timer = "nccl-tests-cputime" if "cpu_time" in block else "nccl-tests"
        run = _run_facts(program, ranks, repeats, timer, _nccl_version(doc.get("nccl_version")), doc.get("start_time"))
        for key, in_place in (("out_of_place", False), ("in_place", True)):
            if res.get(key):
                b = res[key]
                rows.append(
                    _row(
                        run,
                        int(res["size"]),
                        res["type"],
                        in_place,
                        float(b.get("time", b.get("cpu_time"))),
                        b.get("nwrong"),
                    )
                )
    return rows


def parse_file(path: str | Path) -> list[dict]:
    """Rows from one file: JSON when it parses as a JSON object, else the text table."""
    text = Path(path).read_text(errors="replace")
    return parse_json(text) if text.lstrip().startswith("{") else parse_text(text)


def main(argv: Iterable[str] | None = None) -> int:
    from kernelcast.collect.dataset import append_rows

    ap = argparse.ArgumentParser(description="Import nccl-tests outputs as collective rows (source nccl-tests).")
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--out", required=True, type=Path, help="parquet file to append to")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(list(argv) if argv is not None else None)
    rows = [r for f in args.files for r in parse_file(f)]
    total = append_rows(args.out, "collective", rows) if rows else 0
    summary: dict[str, Any] = {"files": len(args.files), "rows": len(rows), "rows_in_file": total, "out": str(args.out)}
    print(json.dumps(summary) if args.json else f"{len(rows)} rows from {len(args.files)} files -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
