"""The nightly pipeline in local mode, for real: the cpu timer's torch GEMMs, parquet, an ``mlflow server`` on
127.0.0.1. A driver SIGKILLed after each stage resumes; a drifted night is quarantined until accepted."""

from __future__ import annotations

import json
import signal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from farm_services import Unavailable, mlflow_server
from nightly_helpers import driver, finish, plan_entries, rows, state, wait_until, write_farm

from kernelcast.pipeline.farm import load_farm
from kernelcast.pipeline.state import STAGES
from kernelcast.pipeline.validate import drift, idle_share, noise, repeat_pairs


@pytest.fixture(scope="module")
def mlflow_url(tmp_path_factory):
    """One server for the module (a team's): each test's farm has its own name, so its own runs."""
    try:
        with mlflow_server(tmp_path_factory.mktemp("mlflow")) as url:
            yield url
    except Unavailable as exc:
        pytest.skip(str(exc))


def _mlflow_runs(url: str, farm: str) -> list:
    import mlflow

    client = mlflow.MlflowClient(url)
    exp = client.get_experiment_by_name("kernelcast-nightly")
    return client.search_runs([exp.experiment_id], f"tags.farm = '{farm}'") if exp else []


@pytest.mark.slow
def test_a_night_killed_after_each_stage_resumes_and_measures_nothing_twice(tmp_path, mlflow_url):
    farm = write_farm(tmp_path, mlflow_url, name="killed")
    for stage in STAGES[:-1]:
        proc = driver(farm, "20261201")
        done = lambda stage=stage, proc=proc: stage in state(farm, "20261201")["stages"] or proc.poll() is not None
        wait_until(done, 240, stage, 0.01)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    result = finish(driver(farm, "20261201"))
    assert result["status"] == "done" and set(result["stages"]) == set(STAGES)
    shard_rows = rows(tmp_path / "farm" / "nights" / "20261201" / "shards")
    assert sorted(r["plan_index"] for r in shard_rows) == list(range(plan_entries(farm, "20261201")))
    test_rows = rows(tmp_path / "farm" / "nights" / "20261201" / "test_shards")
    assert sorted(r["plan_index"] for r in test_rows) == list(range(plan_entries(farm, "20261201", "test_plan.jsonl")))
    published = rows(tmp_path / "farm" / "datasets")
    assert len(published) == len(shard_rows) and all(r["timer"] == "cpu" for r in published)
    [run] = _mlflow_runs(mlflow_url, "killed")  # one run for the night, however often it was restarted
    assert run.data.tags["quarantined"] == "false" and "gemm.independent.candidate.mape" in run.data.metrics
    _champion_predicts(mlflow_url, tmp_path / "farm" / "models")


def _champion_predicts(mlflow_url: str, models) -> None:
    """The night's registered model is the kernelcast pyfunc: it answers descriptions as the exported files do."""
    import mlflow

    from kernelcast.predictors.dispatch import predict_many

    mlflow.set_tracking_uri(mlflow_url)
    served = mlflow.pyfunc.load_model("models:/kernelcast-gemm@champion")
    frame = pd.DataFrame([{"gpu": "H200", "dtype": "bf16", "backend": "cublas", "m": m, "n": 256, "k": 256}
                          for m in (16, 128)])  # fmt: skip
    got = served.predict(frame)
    pd.testing.assert_frame_equal(got, predict_many(frame.assign(op="gemm"), model_dir=models))
    assert got["model"].str.startswith("learned:gemm@").all()  # the night's CPU-timer GEMMs cover these shapes


def _set_torch(folder, version: str) -> None:
    """Rewrite the torch column of a night's merged rows: the night before ran another torch."""
    for path in folder.rglob("*.parquet"):
        table = pq.read_table(path)
        column = pa.array([version] * table.num_rows, pa.string())
        table = table.set_column(table.schema.get_field_index("torch"), "torch", column)
        pq.write_table(table.replace_schema_metadata(table.schema.metadata), path)


@pytest.mark.slow
def test_a_drifted_night_is_quarantined_until_accepted(tmp_path, mlflow_url):
    clean = write_farm(tmp_path, mlflow_url, name="drift")
    finish(driver(clean, "1"))
    _set_torch(tmp_path / "farm" / "nights" / "1" / "merged", "2.12.0")
    before = len(rows(tmp_path / "farm" / "datasets"))
    slowed = write_farm(tmp_path, mlflow_url, timer="cpu_seams:measure_many", name="drift")
    night = finish(driver(slowed, "2", extra_env={"KC_SCALE": "3"}))
    [check] = night["since_last_night"]["drift"]
    assert night["quarantined"] and check["flagged"] and 2.0 < check["median_ratio"] < 4.5
    assert check["versions_changed"]["torch"]["last"] == ["2.12.0"]
    assert len(rows(tmp_path / "farm" / "datasets")) == before  # merged under its own tag, not trained on
    assert state(slowed, "2")["stages"]["retrain"]["result"] == {"skipped": "quarantined"}
    accepted = finish(driver(slowed, "2", "accept"))
    assert accepted["accepted"] and accepted["status"] == "done" and accepted["evaluate"]["gemm"]["scores"]
    assert len(rows(tmp_path / "farm" / "datasets")) > before
    tags = {r.data.tags["night"]: r.data.tags["quarantined"] for r in _mlflow_runs(mlflow_url, "drift")}
    assert tags == {"1": "false", "2": "false"}
    assert (tmp_path / "farm" / "reports" / "dashboard.png").stat().st_size > 1000


def _frame(latency: dict[str, float], repeats: dict[str, float], torch: str) -> pd.DataFrame:
    base = {"gpu": "h200_sxm", "backend": "cublas", "cache": "warm", "timer": "cpu", "status": "ok", "torch": torch}
    out = [{**base, "desc_key": k, "latency_us": v, "repeat_of": None, "time": "t0"} for k, v in latency.items()]
    out += [{**base, "desc_key": k, "latency_us": v, "repeat_of": 0, "time": "t1"} for k, v in repeats.items()]
    return pd.DataFrame(out)


def test_drift_is_flagged_only_beyond_the_noise_floor():
    keys = {f"k{i}": 100.0 + i for i in range(6)}
    last = _frame(keys, {}, "2.12.0")
    noisy = _frame({k: v * 1.2 for k, v in keys.items()}, {k: v * 1.2 * 1.3 for k, v in keys.items()}, "2.13.0")
    floor = noise(repeat_pairs(noisy))
    [record] = drift(noisy, last, set(keys), floor, min_drift=0.05)
    assert record["threshold"] == pytest.approx(0.3) and not record["flagged"]  # 20% inside a 30% noise floor
    quiet = _frame({k: v * 1.2 for k, v in keys.items()}, {k: v * 1.2 * 1.01 for k, v in keys.items()}, "2.13.0")
    [record] = drift(quiet, last, set(keys), noise(repeat_pairs(quiet)), min_drift=0.05)
    assert record["flagged"] and record["drift"] == pytest.approx(0.2)
    assert record["versions_changed"] == {"torch": {"last": ["2.12.0"], "tonight": ["2.13.0"]}}


def test_idle_share_counts_startup_and_tail_as_idle(tmp_path):
    log = [{"t_end": 110.0, "wall_s": 5.0}, {"t_end": 120.0, "wall_s": 10.0}, {"t_end": 90.0, "wall_s": 1.0}]
    (tmp_path / "timing.jsonl").write_text("\n".join(json.dumps(r) for r in log) + "\n")
    result = idle_share([tmp_path], start=100.0, slots=2)  # the chunk that ended before the start is not this run's
    assert result["idle_share"] == pytest.approx(1 - 15 / 40) and result["chunks"] == 2


@pytest.mark.parametrize(
    "text, message",
    [
        ('[fanout]\nmode = "pbs"', r"farm\['fanout.mode'\] must be one of slurm, local; got 'pbs'"),
        ("[fanout]\nshards = 0", r"farm\['fanout.shards'\] must be an integer >= 1; got 0"),
        ("[fanout]\nshard = 2", r"farm\['fanout.shard'\] must be absent: \[fanout\] takes mode, shards"),
        ('[train]\nops = ["gemmm"]', r"farm\['train.ops'\] must be among gemm, .*; got 'gemmm'"),
        ('[run]\ntimer = "cupt"', r"timer must be one of cupti, cpu or a batch function"),
    ],
)
def test_farm_errors_name_the_key_the_value_and_what_is_allowed(tmp_path, text, message):
    head = 'name = "x"\nroot = "f"\ngpu = "H200"\nsweeps = ["nightly_cpu"]\n'
    head += 'sentinels = "nightly_cpu_sentinel"\ntest_sweep = "nightly_cpu_test"\n'
    (tmp_path / "farm.toml").write_text(head + text + "\n")
    with pytest.raises(ValueError, match=message):
        load_farm(tmp_path / "farm.toml")


def test_host_timer_rows_never_go_to_the_committed_datasets(tmp_path):
    from kernelcast.pipeline.farm import REPO

    text = f'name = "x"\nroot = "{REPO / "datasets" / "nightly"}"\ngpu = "H200"\nsweeps = ["nightly_cpu"]\n'
    (tmp_path / "farm.toml").write_text(
        text + 'sentinels = "nightly_cpu_sentinel"\ntest_sweep = "nightly_cpu_test"\n[run]\ntimer = "cpu"\n'
    )
    with pytest.raises(ValueError, match=r"farm\['root'\] must be outside .*datasets \(timer 'cpu' times the host\)"):
        load_farm(tmp_path / "farm.toml")
