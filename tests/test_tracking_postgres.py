"""MLflow on PostgreSQL, as a team runs it: a throwaway PostgreSQL cluster (Debian's postgresql; installed with apt
when absent and root, skipped with the reason where it cannot start) behind an ``mlflow server`` on 127.0.0.1, and
``MLFLOW_TRACKING_URI`` naming that server. The real tracking path (`kernelcast train`: log the run, register
``kernelcast-<op>``, move ``champion`` only on improvement) runs on the committed H200 copy rows; what MlflowClient
reads back is what psql finds in the database's own tables.
"""

from __future__ import annotations

import pytest
from farm_services import Unavailable, mlflow_server, postgres

pytest.importorskip("xgboost")
pytest.importorskip("mlflow")

pytestmark = [pytest.mark.services, pytest.mark.slow]

#: small and quick: the copy op's ~5k committed rows, a few trees
SMALL = {"n_estimators": 30, "quantile_estimators": 10, "max_depth": 4}
WORSE = {**SMALL, "n_estimators": 1, "learning_rate": 0.01}


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory):
    """(the cluster, the URL of an mlflow server whose backend store is its database)."""
    try:
        with postgres() as pg, mlflow_server(tmp_path_factory.mktemp("mlflow_pg"), backend=pg.uri) as url:
            yield pg, url
    except Unavailable as exc:
        pytest.skip(f"no PostgreSQL-backed mlflow server here: {exc}")


def test_train_registers_and_moves_champion_only_on_improvement_in_postgres(pg_server, tmp_path, monkeypatch):
    from mlflow import MlflowClient

    from kernelcast.training import run, tracking

    pg, url = pg_server
    monkeypatch.setenv("MLFLOW_TRACKING_URI", url)
    cfg = run.RunConfig("copy", sources=("kernelcast",), params=SMALL, model_dir=tmp_path / "models")
    first = run.train(cfg)
    assert first["champion"] is True and first["model_version"] == "1" and first["exported"]
    worse = run.train(run.RunConfig(**{**run.config_dict(cfg), "params": WORSE, "model_dir": tmp_path / "models"}))
    assert worse["champion"] is False and worse["model_version"] == "2" and worse["exported"] == []

    client = MlflowClient(url)
    assert client.get_model_version_by_alias("kernelcast-copy", "champion").version == "1"
    good, bad = (client.get_run(r["run_id"]).data.metrics for r in (first, worse))
    assert good["random.learned.mape"] < bad["random.learned.mape"]
    assert bad["random.champion_before.mape"] == pytest.approx(good["random.learned.mape"])  # same test rows
    runs = tracking.search(["copy"])
    assert set(runs["run_id"]) == {first["run_id"], worse["run_id"]}
    assert tracking.champion_files("copy", tmp_path / "champion") is not None  # artifacts through the server

    # the same facts in PostgreSQL's tables, read by psql over its own connection
    [[schema]] = pg.query("select version_num from alembic_version")
    assert schema  # MLflow migrated this database
    [[exp_id]] = pg.query("select experiment_id from experiments where name = 'kernelcast-copy'")
    stored = pg.query(f"select run_uuid, status from runs where experiment_id = {int(exp_id)} order by start_time")
    assert stored == [[first["run_id"], "FINISHED"], [worse["run_id"], "FINISHED"]]
    assert pg.query("select name from registered_models") == [["kernelcast-copy"]]
    versions = pg.query("select version, run_id from model_versions where name = 'kernelcast-copy' order by version")
    assert versions == [["1", first["run_id"]], ["2", worse["run_id"]]]
    assert pg.query("select alias, version from registered_model_aliases") == [["champion", "1"]]
    for trained, metrics in ((first, good), (worse, bad)):
        [[value]] = pg.query(
            f"select value from latest_metrics where run_uuid = '{trained['run_id']}' and key = 'random.learned.mape'"
        )
        assert float(value) == pytest.approx(metrics["random.learned.mape"])


def test_a_database_uri_without_a_server_keeps_artifacts_in_the_repo(pg_server, monkeypatch):
    """``MLFLOW_TRACKING_URI=postgresql://…`` straight at the database: new experiments put their artifacts under
    <repo>/mlruns/artifacts, not in ./mlruns of whatever folder the command ran in."""
    from mlflow import MlflowClient

    from kernelcast.training import tracking

    pg, _ = pg_server
    monkeypatch.setenv("MLFLOW_TRACKING_URI", pg.uri)
    exp = MlflowClient(pg.uri).get_experiment(tracking.experiment_id("elementwise"))
    assert exp.artifact_location == (tracking.REPO / "mlruns" / "artifacts" / exp.name).as_uri()
