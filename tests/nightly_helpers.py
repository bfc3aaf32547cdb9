"""Farm files, drivers and row checks shared by the nightly tests (real runs: cpu timer, parquet, MLflow server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

TESTS = Path(__file__).resolve().parent
#: a night small enough for two shared CPU cores, with the CI sweeps (collect/sweeps/nightly_cpu*.toml)
BASE = """name = "{name}"
root = "farm"
tracking_uri = "{uri}"
gpu = "H200"
sweeps = ["nightly_cpu"]
sentinels = "nightly_cpu_sentinel"
test_sweep = "nightly_cpu_test"
repeat_share = 0.25

[run]
timer = "{timer}"
cache = "warm"
chunk = {chunk}
warmup_s = 0.2
timeout_s = 30

[fanout]
mode = "{mode}"
shards = 3
concurrency = 2
gpus_per_task = 0
local_workers = 2
poll_s = 0.5

[validate]
min_drift = 0.5

[train]
ops = ["gemm"]
params = {{ n_estimators = 30, max_depth = 4, quantile_estimators = 10, quantile_depth = 3 }}
"""


def write_farm(folder: Path, uri: str, mode: str = "local", timer: str = "cpu", name: str = "ci", chunk: int = 8):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"farm_{timer.replace(':', '_')}.toml"
    path.write_text(BASE.format(name=name, uri=uri, mode=mode, timer=timer, chunk=chunk))
    return path


def env(**extra: str) -> dict[str, str]:
    """The environment of a driver: the tests' seams importable (Slurm tasks inherit it through sbatch)."""
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, **extra}


def driver(farm: Path, night: str, *action: str, extra_env: dict | None = None) -> subprocess.Popen:
    """``kernelcast nightly`` for the night (``action`` "accept": accept it instead), JSON on stdout."""
    which = [*action, night] if action else ["--night", night]
    cmd = [sys.executable, "-m", "kernelcast", "nightly", *which, "--farm", str(farm), "--json"]
    return subprocess.Popen(
        cmd, env=env(**(extra_env or {})), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(proc: subprocess.Popen, timeout: float = 300) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"nightly exited {proc.returncode}: {err[-3000:]}"
    return json.loads(out)


def state(farm: Path, night: str) -> dict:
    path = farm.parent / "farm" / "nights" / night / "state.json"
    return json.loads(path.read_text()) if path.exists() else {"stages": {}, "submissions": []}


def wait_until(check, timeout: float, what: str, poll: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def rows(folder: Path) -> list[dict]:
    """Every row under a folder of parquet files (shard outputs or a datasets root)."""
    out = []
    for path in sorted(folder.rglob("*.parquet")):
        if not path.name.startswith("."):
            out += pq.read_table(path).to_pylist()
    return out


def plan_entries(farm: Path, night: str, name: str = "plan.jsonl") -> int:
    path = farm.parent / "farm" / "nights" / night / name
    return json.loads(path.read_text().splitlines()[0])["count"]


def chunks_of(farm: Path, night: str, tag: str) -> int:
    """Measuring calls logged so far by the shard ``tag`` (e.g. s001of003)."""
    log = farm.parent / "farm" / "nights" / night / "shards" / "timing.jsonl"
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text().splitlines() if '"t_end"' in line and f'"shard": "{tag}"' in line)
