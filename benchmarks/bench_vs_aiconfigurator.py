"""Speed side by side in one run: aiconfigurator-core's own per-op GEMM query beside kernelcast's learned
``predict_latency`` and ``predict_many``.

kernelcast paths: ``compiled`` (the trees walked in C, what serving uses), ``fallback`` (the same process with the
compiled walker switched off: the trees walked in numpy, as without a C compiler) and, with
``--baseline-python``, ``baseline``: this script's kernelcast part run by another interpreter, whose installed
kernelcast is an older revision (e.g. a checkout of main before this change), once before and once after the
in-process part (the mean of the two is reported, both are in the JSON). aiconfigurator:
``GEMM(name, 1, n, k, GEMMQuantMode.bfloat16)._engine_query(db, x=m)`` on its H200 TRT-LLM database, the op built
in the call as a kernelcast description is. Blocks of 100 calls of each path in turn, so load on the machine falls
on all alike. Shapes: bf16 H200 GEMMs with m log-uniform in [1, 8192] and n, k from real layer sizes, all covered by
the learned model (``backend="cublas"``). Batches: a 200,000-row mixed GEMM frame (the aiconfigurator import's
covered rows: many GPUs, dtypes and backends), median of three calls.
Usage: python benchmarks/bench_vs_aiconfigurator.py [--calls 2000] [--rows 200000] [--baseline-python PY]
Prints a table with ratios; writes JSON (default benchmarks/results/bench_vs_aiconfigurator.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from bench_learned import _median_s, covered_rows  # noqa: E402

from kernelcast import parse_desc, predict_latency, predict_many  # noqa: E402
from kernelcast.features.vector import build_features  # noqa: E402
from kernelcast.predictors.learned import feature_matrix, load_model  # noqa: E402

#: calls of one path in a row (aiconfigurator's engine keeps threads busy for a while after a call: calls
#: interleaved one by one would pay for each other's), and warm-up calls per path, not kept
BLOCK, WARM = 100, 50
SIZES = (1024, 2048, 4096, 5120, 7168, 8192, 14336, 18432, 28672)


def shapes(calls: int, seed: int = 0) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(seed)
    m = np.exp(rng.uniform(0, np.log(8192), calls)).astype(int) + 1
    n, k = rng.choice(SIZES, calls), rng.choice(SIZES, calls)
    return [(int(a), int(b), int(c)) for a, b, c in zip(m, n, k)]


def desc(m: int, n: int, k: int) -> dict:
    return {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "cublas", "m": m, "n": n, "k": k}


def aiconfigurator_query():
    """A callable (m, n, k) -> latency in µs, through aiconfigurator-core's per-op GEMM query, or None."""
    try:
        from aiconfigurator_core.sdk import common, perf_database
        from aiconfigurator_core.sdk.operations.gemm import GEMM
    except ImportError:
        return None
    version = perf_database.get_latest_database_version("h200_sxm", "trtllm")
    db = perf_database.get_database("h200_sxm", "trtllm", version)
    bf16 = common.GEMMQuantMode.bfloat16
    return lambda m, n, k: float(GEMM("gemm", 1, n, k, bf16)._engine_query(db, x=m)) * 1000.0


def _stats(us: list[float]) -> dict:
    a = np.asarray(us)
    return {"p50_us": float(np.median(a)), "p90_us": float(np.percentile(a, 90)), "calls": len(a)}


def time_kernelcast(calls: int, rows: int, with_aiconfigurator: bool, baseline: bool = False) -> dict:
    """p50/p90 of one call and predict_many rows/s per path (``compiled`` and ``fallback`` where this kernelcast has a
    compiled walker; for a ``baseline`` run its serving path alone), with aiconfigurator's query beside them when
    asked."""
    model = load_model("gemm")
    todo = [s for s in shapes(calls * 2) if predict_latency(desc(*s)).model == model.name][:calls]
    compiled = getattr(model, "compiled", None)
    paths = {"compiled": compiled, "fallback": None} if compiled is not None else {"baseline": None}
    if baseline:
        paths = {"baseline": compiled}
    query = aiconfigurator_query() if with_aiconfigurator else None
    calls_of = dict(paths) | ({"aiconfigurator": None} if query else {})
    times: dict[str, list[float]] = {p: [] for p in calls_of}
    answers: dict[str, list[float]] = {p: [] for p in calls_of}
    for start in range(0, len(todo), BLOCK):  # blocks of each path in turn: load drifts over all alike
        for path, walker in calls_of.items():
            if path != "aiconfigurator" and compiled is not None:
                model.compiled = walker
            one = query if path == "aiconfigurator" else (lambda m, n, k: predict_latency(desc(m, n, k)).latency_us)
            for shape in todo[:WARM] if start == 0 else ():  # warm-up calls, not kept
                one(*shape)
            for shape in todo[start : start + BLOCK]:
                t0 = time.perf_counter()
                value = one(*shape)
                times[path].append((time.perf_counter() - t0) * 1e6)
                answers[path].append(value)
    out = {"one_call": {p: _stats(t) for p, t in times.items()}, "shapes": len(todo)}
    if compiled is not None:  # the compiled tree walk of one row alone, on these shapes' feature rows
        frame = pd.DataFrame([parse_desc(desc(*s)).to_row() for s in todo[:200]])
        features = build_features(frame, "gemm")
        # a --baseline-python kernelcast from before route columns has no LearnedModel.matrix: its input is the features
        x = model.matrix(features) if hasattr(model, "matrix") else feature_matrix(features, "gemm")
        one_rows = [np.ascontiguousarray(x[i : i + 1]) for i in range(len(x))]
        best = min(timeit.repeat(lambda: [compiled.predict(r) for r in one_rows], number=5, repeat=5))
        out["walk_one_row_us"] = best / 5 / len(one_rows) * 1e6
    if "fallback" in paths:
        a, b = np.asarray(answers["compiled"]), np.asarray(answers["fallback"])
        out["max_rel_diff_compiled_vs_fallback"] = float(np.max(np.abs(a - b) / b))
    frame = covered_rows("gemm", model, rows)
    predict_many(frame.head(5000))  # warm-up
    out["predict_many"] = {}
    for path, walker in paths.items():
        if compiled is not None:
            model.compiled = walker
        seconds, result = _median_s(lambda: predict_many(frame))
        out["predict_many"][path] = {"rows": len(frame), "rows_per_s": len(frame) / seconds}
    if compiled is not None:
        model.compiled = compiled
    out["predict_many_learned_share"] = float((result["model"] == model.name).mean())
    return out


def baseline(python: str, calls: int, rows: int) -> dict:
    """This script's kernelcast part under another interpreter (another kernelcast revision installed there)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "baseline.json"
        cmd = [python, __file__, "--calls", str(calls), "--rows", str(rows), "--kernelcast-only", str(path)]
        subprocess.run(cmd, check=True)
        result = json.loads(path.read_text())
    result["revision"] = installed_revision(python)
    return result


def installed_revision(python: str) -> str:
    """``folder@commit`` of the kernelcast checkout ``python`` imports (the folder's name, not its path)."""
    where = "import kernelcast, pathlib; print(pathlib.Path(kernelcast.__file__).resolve().parents[1])"
    folder = subprocess.run(
        [python, "-P", "-c", where],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    head = subprocess.run(["git", "-C", folder, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return f"{Path(folder).name}@{head.stdout.strip() or 'unknown'}"


def table(result: dict) -> str:
    one, many = result["one_call"], result["predict_many"]
    ref = one.get("aiconfigurator", {}).get("p50_us")
    lines = [f"{'path':>16} {'p50 µs':>9} {'p90 µs':>9} {'p50 / aiconfigurator':>21} {'predict_many rows/s':>20}"]
    for path, s in one.items():
        ratio = f"{s['p50_us'] / ref:.2f}" if ref else "-"
        rps = f"{many[path]['rows_per_s']:,.0f}" if path in many else "-"
        lines.append(f"{path:>16} {s['p50_us']:>9.1f} {s['p90_us']:>9.1f} {ratio:>21} {rps:>20}")
    if "compiled" in many and "baseline" in many:
        speedup = one["baseline"]["p50_us"] / one["compiled"]["p50_us"]
        lines.append(
            f"compiled vs baseline: one call {speedup:.2f}× faster, predict_many "
            f"{many['compiled']['rows_per_s'] / many['baseline']['rows_per_s']:.2f}×"
        )
    if "walk_one_row_us" in result:
        lines.append(f"the compiled walk of one row alone: {result['walk_one_row_us']:.1f} µs")
        if "walk_one_row_us_baseline" in result:
            lines[-1] += f" (baseline {result['walk_one_row_us_baseline']:.1f} µs)"
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--baseline-python", help="an interpreter whose installed kernelcast is the old revision")
    parser.add_argument(
        "--baseline-label", help="what the baseline is, for the JSON (default: its checkout's git HEAD)"
    )
    parser.add_argument("--kernelcast-only", metavar="JSON", help=argparse.SUPPRESS)  # the baseline's own run
    parser.add_argument("--json-out", default=str(Path(__file__).with_name("results") / "bench_vs_aiconfigurator.json"))
    args = parser.parse_args()
    if args.kernelcast_only:
        Path(args.kernelcast_only).write_text(json.dumps(time_kernelcast(args.calls, args.rows, False, baseline=True)))
        return
    runs = [baseline(args.baseline_python, args.calls, args.rows)] if args.baseline_python else []
    result = time_kernelcast(args.calls, args.rows, True)
    if args.baseline_python:  # before and after this run (load on a shared machine drifts): the mean of the two
        runs.append(baseline(args.baseline_python, args.calls, args.rows))
        result["baseline_runs"] = runs
        result["baseline_revision"] = args.baseline_label or runs[0]["revision"]
        result["one_call"]["baseline"] = {
            k: float(np.mean([r["one_call"]["baseline"][k] for r in runs])) for k in ("p50_us", "p90_us", "calls")
        }
        rps = np.mean([r["predict_many"]["baseline"]["rows_per_s"] for r in runs])
        walks = [r["walk_one_row_us"] for r in runs if "walk_one_row_us" in r]
        if walks:
            result["walk_one_row_us_baseline"] = float(np.mean(walks))
        result["predict_many"]["baseline"] = {"rows": args.rows, "rows_per_s": float(rps)}
    print(table(result))
    result["meta"] = {"cpus": os.cpu_count(), "python": platform.python_version(), "machine": platform.machine()}
    if os.getloadavg:
        result["meta"]["load_average_1min"] = os.getloadavg()[0]
    Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.json_out).with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, args.json_out)
    print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()
