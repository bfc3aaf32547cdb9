"""No row lost or doubled at any kill point: the real runner (cpu timer) killed at random, resumed, compared.

Parent and workers, SIGKILL and SIGTERM, at start-up and while measuring (tests/kill_trials.py);
then two runs of one shard at once measure each config once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import kill_trials
import pytest

TESTS = Path(__file__).resolve().parent


@pytest.mark.slow
def test_killed_runs_resume_to_exactly_one_clean_run(tmp_path):
    result = kill_trials.run_trials(tmp_path, count=4, seed=20261201)
    kills = [k for t in result["trials"] for k in t["kills"] if k["hit"]]
    assert {(k["target"], k["signal"]) for k in kills} == {
        (t, s) for t in ("parent", "worker") for s in ("SIGKILL", "SIGTERM")
    }
    assert [t.get("stderr") for t in result["trials"]] == [None] * len(result["trials"])  # no crash, only kills
    assert result["missing"] == [] and result["duplicated"] == [] and result["unexpected"] == []
    assert result["rows"] == result["clean_rows"] == 198
    statuses = Counter(r["status"] for r in kill_trials.rows(tmp_path / "killed"))
    assert statuses == {"ok": 198}  # no false cuda_fatal from an outside kill


def test_two_runs_of_one_shard_at_once_measure_each_config_once(tmp_path):
    plan = kill_trials.write_plan(tmp_path / "plan.jsonl", count=20)
    calls = tmp_path / "calls.txt"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        "KC_FAKE_CALLS": str(calls),
    }
    cmd = [
        sys.executable,
        "-m",
        "kernelcast.collect.cli",
        "collect",
        "run",
        "--plan",
        str(plan),
        "--out",
        str(tmp_path / "out"),
        "--measure",
        "fake_measure:fixed",
        "--chunk",
        "2",
        "--json",
    ]
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert sorted(r["measured"] for r in results) == [0, 22]  # the second waited, then found all done
    assert len(calls.read_text().split()) == 22
    assert sorted(r["plan_index"] for r in kill_trials.rows(tmp_path / "out")) == list(range(22))
