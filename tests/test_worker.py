"""Worker isolation and shard runs with SYNTHETIC fake batch measure functions (tests/fake_measure.py).

A poisoned config kills or wedges only its worker: the chunk is re-run one by one, the config
that alone kills its process twice is recorded ``cuda_fatal``, and the run goes on; a resumed
run measures exactly what is missing.
"""

from __future__ import annotations

import fake_measure as fake
import pyarrow.parquet as pq
import pytest

from kernelcast.collect.plan import load_plan, make_plan, save_plan, shard_tag
from kernelcast.collect.shard import RunConfig, output_files, plan_status, run_shard
from kernelcast.collect.worker import Unsupported, classify, load_measure

GEMM = {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "cublas", "n": 256, "k": 512}
POISON = {
    fake.KILL: "cuda_fatal",
    fake.STICKY: "cuda_fatal",
    fake.HANG: "cuda_fatal",
    fake.FATAL_ROW: "cuda_fatal",
    fake.UNSUPPORTED: "unsupported",
    fake.OOM: "oom",
}


def plan_file(tmp_path, ms, name="plan.jsonl"):
    return save_plan(make_plan([{**GEMM, "m": m} for m in ms], seed=0), tmp_path / name)


def rows(out_dir):
    files = sorted(out_dir.glob("gemm/*.parquet"))
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def calls(path):
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def cfg(measure, **kw):
    return RunConfig(**{"gpus": (0,), "timer": f"fake_measure:{measure}", "progress": False, **kw})


@pytest.mark.parametrize(
    "exc,status",
    [
        (Unsupported("no"), "unsupported"),
        (NotImplementedError("fp8"), "unsupported"),
        (RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"), "oom"),
        (RuntimeError("CUDA error: an illegal memory access was encountered"), "cuda_fatal"),
        (RuntimeError("CUDA error: unspecified launch failure"), "cuda_fatal"),
        (RuntimeError("CUDA error: misaligned address"), "cuda_fatal"),
        (ValueError("shape mismatch"), "error"),
    ],
)
def test_classify(exc, status):
    got, message = classify(exc)
    assert got == status and str(exc) in message


def test_load_measure_errors():
    with pytest.raises(ValueError, match="must be a dotted path 'module:function'; got 'nocolon'"):
        load_measure("nocolon")
    with pytest.raises(ValueError, match="cannot be imported"):
        load_measure("fake_measure:nope")


def test_poisoned_configs_restart_the_worker_and_the_run_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv("KC_FAKE_CALLS", str(tmp_path / "calls.txt"))
    plan = plan_file(tmp_path, list(range(1, 25)) + list(POISON))
    out = tmp_path / "out"
    summary = run_shard(plan, 0, 1, out, cfg("measure", gpus=(0, 1), timeout_s=1.0, chunk=4))
    got = rows(out)
    by_m = {}
    for r in got:
        by_m.setdefault(r["m"], set()).add(r["status"])
    assert {m: by_m[m] for m in POISON} == {m: {s} for m, s in POISON.items()}
    assert all(by_m[m] == {"ok"} for m in range(1, 25))
    assert sorted(r["plan_index"] for r in got) == list(range(len(got))) and len(got) == 33
    counts = {s: sum(r["status"] == s for r in got) for s in {r["status"] for r in got}}
    assert summary["status_counts"] == counts and counts["cuda_fatal"] >= 4
    assert summary["measured"] == 33 and not summary["interrupted"]
    # each poison kills its chunk once, then itself alone twice: 3 restarts each (fewer when it came alone)
    assert 2 * counts["cuda_fatal"] <= summary["restarts"] <= 3 * counts["cuda_fatal"]
    fatal = {r["m"]: r for r in got if r["status"] == "cuda_fatal"}
    assert all("alone killed its process 2 times" in r["error"] for r in fatal.values())
    assert "died (exit code 1)" in fatal[fake.KILL]["error"] and fatal[fake.KILL]["latency_us"] is None
    assert "illegal memory access" in fatal[fake.STICKY]["error"] and "timeout" in fatal[fake.HANG]["error"]
    assert "unspecified launch failure" in fatal[fake.FATAL_ROW]["error"]
    ok = [r for r in got if r["status"] == "ok"]
    assert all(r["timer"] == "synthetic" and r["ncu__gpu__time_duration.sum"] > 0 for r in ok)
    assert {r["host"] for r in got} != {None} and {r["method"] for r in got} == {"fake_measure:measure"}
    assert {r["cache"] for r in got} == {"cold"} and {r["source"] for r in got} == {"kernelcast-test"}
    before = len(calls(tmp_path / "calls.txt"))
    again = run_shard(plan, 0, 1, out, cfg("fixed"))
    assert again["measured"] == 0 and again["already_done"] == 33 and len(calls(tmp_path / "calls.txt")) == before
    assert plan_status(plan, out)["failed"] == {s: n for s, n in counts.items() if s != "ok"}
    retry = run_shard(plan, 0, 1, out, cfg("fixed", retry_failed=True))
    failed = sorted(r["m"] for r in got if r["status"] != "ok")
    assert retry["measured"] == len(failed) and sorted(calls(tmp_path / "calls.txt")[before:]) == failed
    assert plan_status(plan, out)["failed"] == {} and len(rows(out)) == 33 + len(failed)


def test_limit_then_ctrl_c_then_resume_measures_exactly_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("KC_FAKE_CALLS", str(tmp_path / "calls.txt"))
    plan = plan_file(tmp_path, list(range(1, 40)) + [fake.INTERRUPT])  # 40 originals + 4 re-measurements
    ctrl_c = next(e.index for e in load_plan(plan).entries if e.desc.m == fake.INTERRUPT)
    i = ctrl_c % 2
    out, mine, tag = tmp_path / "out", list(range(i, 44, 2)), shard_tag(i, 2)  # the shard holding Ctrl-C
    assert mine.index(ctrl_c) >= 2  # seed 0: after the limited first run
    first = run_shard(plan, i, 2, out, cfg("fixed", limit=2))
    assert first["measured"] == 2 and first["left"] == 20 and len(calls(tmp_path / "calls.txt")) == 2
    assert {r["plan_index"] for r in rows(out)} == set(mine[:2])
    second = run_shard(plan, i, 2, out, cfg("measure", chunk=1))
    assert second["interrupted"] and second["already_done"] == 2
    kept = rows(out)
    assert len(kept) == 2 + second["measured"] < 22  # Ctrl-C: every row measured is kept
    assert ctrl_c in {r["plan_index"] for r in kept}  # its chunk finished before the stop
    before = len(calls(tmp_path / "calls.txt"))
    third = run_shard(plan, i, 2, out, cfg("fixed"))
    assert third["measured"] == 22 - len(kept) == len(calls(tmp_path / "calls.txt")) - before
    assert sorted(r["plan_index"] for r in rows(out)) == mine
    assert len(output_files(out, load_plan(plan).plan_id(), tag)) == 3  # one file per run (writer)
    status = plan_status(plan, out)
    assert status["done"] == 22 and status["missing"] == 22 and status["failed"] == {}


def test_bad_row_from_measure_is_recorded_as_error(tmp_path):
    plan = plan_file(tmp_path, [1, 2, 3])
    out = tmp_path / "out"
    summary = run_shard(plan, 0, 1, out, cfg("bad_row"))
    assert summary["status_counts"] == {"error": 4}
    assert all("'made_up_column' that the schema lacks" in r["error"] for r in rows(out))


def test_run_refuses_a_folder_of_another_plan(tmp_path):
    out = tmp_path / "out"
    run_shard(plan_file(tmp_path, [1]), 0, 1, out, cfg("fixed"))
    with pytest.raises(ValueError, match="was written for plan .* use a separate --out folder per plan"):
        run_shard(plan_file(tmp_path, [2], "other.jsonl"), 0, 1, out, cfg("fixed"))


def test_bad_measure_path_fails_at_start(tmp_path):
    with pytest.raises(
        RuntimeError, match="could not start: ValueError: measure 'fake_measure:nope' cannot be imported"
    ):
        run_shard(plan_file(tmp_path, [1]), 0, 1, tmp_path / "out", cfg("nope"))


def test_cli_run_status_merge_json(tmp_path, capsys):
    import json

    from kernelcast.collect import cli

    plan, out = plan_file(tmp_path, [1, 2, 3, fake.OOM]), tmp_path / "out"
    assert (
        cli.main(
            [
                "collect",
                "run",
                "--plan",
                str(plan),
                "--shard",
                "0/1",
                "--out",
                str(out),
                "--gpus",
                "0",
                "--measure",
                "fake_measure:fixed",
                "--repeats",
                "5",
                "--json",
            ]
        )
        == 0
    )
    run = json.loads(capsys.readouterr().out)
    assert run["measured"] == 5 and run["status_counts"] == {"ok": 5} and len(run["files"]) == 1
    assert {r["repeats"] for r in rows(out)} == {5}
    assert cli.main(["collect", "status", "--plan", str(plan), "--out", str(out)]) == 0
    assert "5 entries, 5 done, failed none, 0 missing" in capsys.readouterr().out
    # synthetic rows never reach a datasets folder...
    assert cli.main(["collect", "merge", "--in", str(out), "--datasets", str(tmp_path / "datasets")]) == 2
    assert "timer 'synthetic' times the host, not a GPU" in capsys.readouterr().err
    assert (
        cli.main(
            [
                "collect",
                "merge",
                "--in",
                str(out),
                "--datasets",
                str(tmp_path / "datasets"),
                "--allow-host-timers",
                "--json",
            ]
        )
        == 0
    )  # ...unless asked, for a scratch one
    merged = json.loads(capsys.readouterr().out)
    assert merged["added"] == {"gemm": 5} and merged["noise"]["gemm"]["pairs"] == 1
    assert merged["noise"]["gemm"]["median"] == 0.0  # the synthetic fake repeats itself exactly


def test_a_plan_for_another_gpu_is_refused_before_it_is_measured():
    """Rows carry the measuring card's name (``gpu_name``) and the description's ``gpu``: an H200 plan handed to an
    H100's worker would label H100 times as the H200's, so the worker's first chunk of it raises, naming both."""
    from kernelcast.collect.pool import check_device
    from kernelcast.collect.worker import Task

    tasks = [Task(7, {**GEMM, "m": 64})]
    with pytest.raises(ValueError, match=r"kernel_desc\['gpu'\] is 'H200' \(plan index 7\).*H100 80GB HBM3.*h100_sxm"):
        check_device("NVIDIA H100 80GB HBM3", tasks)
    check_device("NVIDIA H200", tasks)  # the card it was planned for
    check_device(None, tasks)  # no GPU (a CPU timer): nothing to check
    check_device("NVIDIA Tesla K80", tasks)  # a card the GPU table does not know: nothing to check against


def test_without_gpu_name_the_job_asks_for_one_where_nvidia_smi_names_no_gpu(monkeypatch):
    from kernelcast.collect import gpu_job

    monkeypatch.setenv("PATH", "/nonexistent")  # no nvidia-smi, as on this CPU host and in CI
    with pytest.raises(ValueError, match="--gpu-name is needed: nvidia-smi names no GPU 0"):
        gpu_job.local_gpu([0])
