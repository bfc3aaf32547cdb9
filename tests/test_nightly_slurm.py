"""A night on a real single-node Slurm (Debian's slurmctld, slurmd, munge; started here when absent, skipped with
the reason where it cannot start) with real array jobs of the cpu timer, and an ``mlflow server`` on 127.0.0.1.

Faults: an array task scancel'd mid-shard and another requeued mid-shard lose and double no row; a config that
crashes its worker is recorded once; slurmd killed and restarted mid-night.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from farm_services import Unavailable, mlflow_server, slurm_node, start_slurmd
from nightly_helpers import chunks_of, driver, finish, plan_entries, rows, state, wait_until, write_farm

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


@pytest.fixture(scope="module")
def slurm():
    try:
        with slurm_node() as procs:
            yield procs
    except Unavailable as exc:
        pytest.skip(f"no single-node Slurm here: {exc}")


@pytest.fixture(scope="module")
def mlflow_url(tmp_path_factory):
    try:
        with mlflow_server(tmp_path_factory.mktemp("mlflow")) as url:
            yield url
    except Unavailable as exc:
        pytest.skip(str(exc))


def _pending(job: str) -> bool:
    out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True, timeout=30).stdout
    return out.strip() == "PENDING"


def _complete(farm: Path, night: str) -> list[dict]:
    """The night's shard rows: every plan entry exactly once."""
    shard_rows = rows(farm.parent / "farm" / "nights" / night / "shards")
    assert sorted(r["plan_index"] for r in shard_rows) == list(range(plan_entries(farm, night)))
    return shard_rows


def test_cancelled_and_requeued_tasks_lose_no_row_and_a_crashing_config_is_recorded_once(tmp_path, slurm, mlflow_url):
    farm = write_farm(tmp_path, mlflow_url, mode="slurm", timer="cpu_seams:measure_many", name="slurm", chunk=3)
    started = time.monotonic()
    proc = driver(farm, "1", extra_env={"KC_SLOW_S": "0.15", "KC_CRASH_M": "63", "KC_CRASH_N": "256"})
    array = wait_until(lambda: state(farm, "1")["submissions"], 120, "the array job")[0]["array"]
    wait_until(lambda: chunks_of(farm, "1", "s001of003") >= 1, 120, "shard 1's first chunk")
    subprocess.run(["scancel", f"{array}_1"], check=True, timeout=30)
    wait_until(lambda: chunks_of(farm, "1", "s002of003") >= 1, 120, "shard 2's first chunk")
    subprocess.run(["scontrol", "requeue", f"{array}_2"], check=True, timeout=30)
    # Slurm holds a requeued job back (BeginTime, ~2 min); an operator in a hurry releases it, as here
    wait_until(lambda: _pending(f"{array}_2"), 60, "the requeued task to pend", 0.2)
    subprocess.run(["scontrol", "update", f"JobId={array}_2", "StartTime=now"], check=True, timeout=30)
    result = finish(proc, 280)
    assert result["status"] == "done" and time.monotonic() - started < 300
    subs = result["where"]["slurm_jobs"]
    assert len(subs) == 2 and subs[1]["tasks"] == [1]  # the cancelled task went again; the requeued one in place
    shard_rows = _complete(farm, "1")
    fatal = [r for r in shard_rows if r["status"] == "cuda_fatal"]
    assert fatal and all((r["m"], r["n"]) == (63, 256) for r in fatal)
    assert len({r["plan_index"] for r in fatal}) == len(fatal)
    merged = rows(tmp_path / "farm" / "nights" / "1" / "merged")
    assert sum(r["status"] == "cuda_fatal" and r["repeat_of"] is None for r in merged) == 1
    assert result["counts"]["by_status"]["cuda_fatal"] == len(fatal)
    assert result["evaluate"]["gemm"]["scores"]["independent"]["candidate"]["n"] > 0


def test_a_night_goes_on_through_slurmd_killed_and_restarted(tmp_path, slurm, mlflow_url):
    farm = write_farm(tmp_path, mlflow_url, mode="slurm", timer="cpu_seams:measure_many", name="slurmd", chunk=3)
    proc = driver(farm, "1", extra_env={"KC_SLOW_S": "0.1"})
    wait_until(lambda: chunks_of(farm, "1", "s000of003") >= 1, 120, "shard 0's first chunk")
    os.kill(int(Path("/run/slurmd.pid").read_text()), signal.SIGKILL)
    time.sleep(2)
    slurm.append(start_slurmd())
    result = finish(proc, 280)
    assert result["status"] == "done"
    _complete(farm, "1")
