"""Two processes opening one fresh MLflow sqlite store at once: both get the same experiment, neither dies."""

import multiprocessing
import os

import pytest

pytest.importorskip("mlflow")


def _open(uri: str, queue) -> None:
    os.environ["MLFLOW_TRACKING_URI"] = uri
    from kernelcast.training import tracking

    try:
        queue.put(("ok", tracking.experiment_id("gemm")))
    except Exception as exc:  # the race shows as any MLflow/sqlalchemy error
        queue.put(("error", repr(exc)))


@pytest.mark.slow
def test_two_processes_create_one_store_and_one_experiment(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_open, args=(uri, queue)) for _ in range(3)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [r[0] for r in results] == ["ok"] * 3, results
    assert len({r[1] for r in results}) == 1
