"""Throughput through the nightly pipeline against the bare collector, on the same plans, in local mode.

    python3 benchmarks/bench_nightly.py                       # the CI farm's sweeps, cpu timer, 2 workers, 2 rounds
    python3 benchmarks/bench_nightly.py --timer cupti --workers 2 --cache cold   # on a GPU host (GPUs 0, 1)

Each round runs one night (``kernelcast nightly``, MLflow on a sqlite store in the scratch folder), then the
bare collector (``kernelcast collect run --shard 0/1``) on copies of that night's two plans (draws + sentinels,
the test set's pass), alternating so a busy machine slows both alike. Throughput is rows per minute of the
measuring part (the pipeline's fan-out stage; the collector's two runs); the worker idle share comes from the
runner's per-chunk timestamps. A table goes to stdout, JSON to benchmarks/results/bench_nightly.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FARM = """name = "bench"
root = "farm"
gpu = "H200"
sweeps = ["nightly_cpu"]
sentinels = "nightly_cpu_sentinel"
test_sweep = "nightly_cpu_test"
repeat_share = 0.25
[run]
timer = "{timer}"
cache = "{cache}"
chunk = 8
warmup_s = 0.2
[fanout]
mode = "local"
local_workers = {workers}
[train]
ops = ["gemm"]
params = {{ n_estimators = 30, max_depth = 4, quantile_estimators = 10, quantile_depth = 3 }}
"""


def _kernelcast(*args: str, env: dict) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "kernelcast", *args, "--json"], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(f"kernelcast {' '.join(args)} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def night(folder: Path, night_id: str, env: dict) -> dict:
    start = time.perf_counter()
    result = _kernelcast("nightly", "--farm", str(folder / "farm.toml"), "--night", night_id, env=env)
    wall = time.perf_counter() - start
    state = json.loads((folder / "farm" / "nights" / night_id / "state.json").read_text())
    merged = state["stages"]["merge"]["result"]
    rows = merged["night"]["rows_in"] + merged.get("test", {}).get("rows_in", 0)
    fanout_s = state["stages"]["fanout"]["seconds"]
    runner_s = sum(r["elapsed_s"] for r in state["stages"]["fanout"]["result"]["runs"])
    return {
        "path": "pipeline",
        "rows": rows,
        "measure_s": fanout_s,
        "rows_per_min": round(60 * rows / fanout_s, 1),
        "runner_rows_per_min": round(60 * rows / runner_s, 1),
        "idle_share": result["idle"]["idle_share"],
        "night_wall_s": round(wall, 2),
        "stages_s": result["stages"],
    }


def bare(folder: Path, night_id: str, args, env: dict) -> dict:
    """The collector alone on copies of the night's plans, one run each, the same workers and settings."""
    from kernelcast.pipeline.validate import idle_share

    plans = folder / "farm" / "nights" / night_id
    out_root, rows, runner_s = folder / f"bare_{night_id}", 0, 0.0
    start, wall = time.time(), time.perf_counter()
    for name in ("plan.jsonl", "test_plan.jsonl"):
        if not (plans / name).exists():
            continue
        plan = out_root / name
        plan.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(plans / name, plan)
        cmd = ["collect", "run", "--plan", str(plan), "--out", str(out_root / name.split(".")[0]), "--timer"]
        cmd += [args.timer, "--cache", args.cache, "--chunk", "8", "--warmup-s", "0.2"]
        cmd += ["--gpus", ",".join(map(str, range(args.workers)))]
        summary = _kernelcast(*cmd, env=env)
        rows, runner_s = rows + summary["measured"], runner_s + summary["elapsed_s"]
    measure_s = time.perf_counter() - wall
    idle = idle_share([out_root / "plan", out_root / "test_plan"], start, args.workers)
    return {
        "path": "collector",
        "rows": rows,
        "measure_s": round(measure_s, 3),
        "rows_per_min": round(60 * rows / measure_s, 1),
        "runner_rows_per_min": round(60 * rows / runner_s, 1),
        "idle_share": idle["idle_share"],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--timer", default="cpu")
    p.add_argument("--cache", default="cold")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json-out", default=str(REPO / "benchmarks" / "results" / "bench_nightly.json"))
    args = p.parse_args(argv)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "farm.toml").write_text(FARM.format(timer=args.timer, cache=args.cache, workers=args.workers))
        env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}"}
        for r in range(args.rounds):
            night_id = str(r + 1)
            records.append({"round": r + 1, **night(folder, night_id, env)})
            records.append({"round": r + 1, **bare(folder, night_id, args, env)})
    head = f"{'round':>5}  {'path':<9}  {'rows':>5}  {'measure s':>9}  {'rows/min':>8}  {'runner rows/min':>15}"
    print(f"{head}  {'idle':>6}  night wall s")
    for rec in records:
        idle = "—" if rec["idle_share"] is None else f"{100 * rec['idle_share']:.1f}%"
        print(
            f"{rec['round']:>5}  {rec['path']:<9}  {rec['rows']:>5}  {rec['measure_s']:>9.2f}  "
            f"{rec['rows_per_min']:>8.1f}  {rec['runner_rows_per_min']:>15.1f}  {idle:>6}  "
            f"{rec.get('night_wall_s', '')}"
        )
    ratios = {}
    for key in ("rows_per_min", "runner_rows_per_min"):
        rate = {path: sum(r[key] for r in records if r["path"] == path) for path in ("pipeline", "collector")}
        ratios[key] = round(rate["pipeline"] / rate["collector"], 4)
    print(
        f"pipeline / collector: {ratios['rows_per_min']:.3f} (measuring window), "
        f"{ratios['runner_rows_per_min']:.3f} (inside the runner)"
    )
    result = {
        "command": "python3 benchmarks/bench_nightly.py " + " ".join(argv or sys.argv[1:]),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "timer": args.timer,
        "cache": args.cache,
        "workers": args.workers,
        "records": records,
        "pipeline_over_collector": ratios,
        "gpu_idle_share": "unmeasured: no 2-GPU host was lent; the pipeline reports it per night (fanout.idle)",
    }
    Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json_out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
