"""The local multi-GPU job is the one runner too: tagged rows, resume, timing log (cpu timer: real CPU GEMMs)."""

from __future__ import annotations

import json

import pytest

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


def test_a_pass_the_card_lists_for_this_gpu_is_refused_unless_asked_again(tmp_path, capsys):
    """A queued device script run a second time would re-measure its first call's descriptions: the card
    (files.toml, a real one written here) names the pass, and the job stops before it plans or measures anything."""
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    (datasets / "files.toml").write_text(
        '[[file]]\npath = "gemm/kernelcast_h200_sxm_20261207_x.parquet"\nrole = "train"\nsweeps = ["smoke"]\n'
        "seeds = [5]\n"
    )

    def job(out: str, seed: int, gpu: str = "H200", *extra: str) -> list[str]:
        return ["--sweeps", "smoke", "--seed", str(seed), "--gpu-name", gpu, "--out", str(tmp_path / out),
                "--datasets", str(datasets), "--no-cupti", "--json", *extra]  # fmt: skip

    with pytest.raises(SystemExit) as exc:
        gpu_job.main(job("same", 5))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--sweeps smoke at --seed 5 on h200_sxm" in err
    assert "gemm/kernelcast_h200_sxm_20261207_x.parquet" in err and "--again" in err
    assert not (tmp_path / "same" / "plan.jsonl").exists()
    passes = (("other_seed", 6, "H200", ()), ("other_gpu", 5, "H100", ()), ("again", 5, "H200", ("--again",)))
    for out, seed, gpu, extra in passes:
        assert gpu_job.main(job(out, seed, gpu, *extra)) == 0
        assert (tmp_path / out / "plan.jsonl").stat().st_size > 0
    capsys.readouterr()
    (datasets / "files.toml").unlink()  # a device call that left the card behind: it says so, and measures
    assert gpu_job.main(job("no_card", 5)) == 0
    assert "files.toml here: passes already measured are not checked" in capsys.readouterr().err
    assert (tmp_path / "no_card" / "plan.jsonl").exists()
