"""The local multi-GPU job is the one runner too: tagged rows, resume, timing log (cpu timer: real CPU GEMMs)."""

from __future__ import annotations

import json

from kernelcast.collect import gpu_job
from kernelcast.collect.dataset import read_dataset
from kernelcast.collect.plan import make_plan, save_plan

GEMM = {"op": "gemm", "gpu": "H200", "dtype": "fp32", "backend": "cublas", "n": 64, "k": 64}


def test_local_job_runs_the_plan_through_the_runner_with_model_tags(tmp_path, capsys):
    descs = [{**GEMM, "m": m} for m in range(1, 13)]
    tagged = make_plan(descs, 0).entries[0].desc.key()
    plan = save_plan(make_plan(descs, 0, tags={tagged: {"model": "llama3_8b", "tp": 2}}), tmp_path / "plan.jsonl")
    args = [
        "--plan",
        str(plan),
        "--out",
        str(tmp_path / "out"),
        "--gpus",
        "0,1",
        "--timer",
        "cpu",
        "--chunk",
        "4",
        "--warmup-s",
        "0",
        "--repeats",
        "2",
        "--json",
    ]
    assert gpu_job.main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["run"]["measured"] == 14 and result["run"]["status_counts"] == {"ok": 14}
    rows = read_dataset(tmp_path / "out", "gemm")
    assert sorted(rows.plan_index) == list(range(14)) and set(rows.timer) == {"cpu"}
    assert set(rows.source) == {"kernelcast-cpu"} and set(rows.method) == {"cpu"}
    assert (
        set(rows[rows.desc_key == tagged].model) == {"llama3_8b"} and rows[rows.desc_key != tagged].model.isna().all()
    )
    assert [r["timer"] for r in result["rates"]] == ["cpu"] and result["rates"][0]["configs"] == 14
    assert gpu_job.main(args) == 0  # a rerun resumes: nothing left
    assert json.loads(capsys.readouterr().out)["run"]["already_done"] == 14
