"""MLflow: tracking URI, one experiment per op family, run logging, the registered model and its champion alias."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kernelcast.training.data import REPO


def tracking_uri() -> str:
    """MLFLOW_TRACKING_URI if set, else sqlite:///<repo>/mlruns/mlflow.db."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{REPO / 'mlruns' / 'mlflow.db'}"


def artifact_root(uri: str) -> Path | None:
    """Artifacts beside a sqlite store (<dir>/artifacts); None for servers (they choose)."""
    if uri.startswith("sqlite:///"):
        return Path(uri.removeprefix("sqlite:///")).parent / "artifacts"
    return None


#: tracking URIs that are a database MLflow opens itself (no server): their artifacts need a place we name
DATABASE_SCHEMES = ("postgresql", "mysql", "mssql")


def artifact_location_root(uri: str) -> Path | None:
    """Where new experiments keep artifacts: beside a sqlite store; ``<repo>/mlruns/artifacts`` for a database URI
    used without a server (else MLflow writes ``./mlruns`` under whatever folder the command runs in); None for a
    server (it chooses)."""
    if uri.split(":", 1)[0].split("+", 1)[0] in DATABASE_SCHEMES:
        return REPO / "mlruns" / "artifacts"
    return artifact_root(uri)


@contextlib.contextmanager
def store_lock(uri: str):
    """An exclusive lock beside a sqlite store (none for servers): two processes creating or migrating one
    store, or creating one experiment, take turns instead of racing (sqlite migrations are not concurrent)."""
    root = artifact_root(uri)
    if root is None:
        yield
        return
    root.mkdir(parents=True, exist_ok=True)
    with open(root.parent / ".mlflow.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def setup() -> Any:
    """Point MLflow at our store (creating and migrating a sqlite store under ``store_lock``); return the client."""
    import mlflow

    uri = tracking_uri()
    mlflow.set_tracking_uri(uri)
    with store_lock(uri):
        client = mlflow.MlflowClient()
        client.search_experiments(max_results=1)  # a fresh sqlite store is created here, once
    return client


def experiment_name(op: str) -> str:
    return f"kernelcast-{op}"


def experiment_id(op: str) -> str:
    """The op's experiment, created with an explicit artifact location when missing."""
    client = setup()
    with store_lock(tracking_uri()):
        exp = client.get_experiment_by_name(experiment_name(op))
        if exp is not None:
            return exp.experiment_id
        root = artifact_location_root(tracking_uri())
        location = (root / experiment_name(op)).as_uri() if root is not None else None
        return client.create_experiment(experiment_name(op), artifact_location=location)


def git_revision() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def log_run(
    op: str,
    run_name: str,
    params: Mapping[str, Any],
    tags: Mapping[str, str],
    metrics: Mapping[str, float],
    figures: Mapping[str, Any],
    tables: Mapping[str, Any],
    files: Mapping[str, Path] = (),
    log_model: Callable[[str], str] | None = None,
) -> tuple[str, str | None]:
    """One MLflow run: params, tags, metrics, figures, tables, files (artifact dir -> local path) and, when
    ``log_model`` is given, what it logs and registers as ``kernelcast-<op>`` (called with that name inside the
    run, it returns the model version); returns (run_id, model version)."""
    import matplotlib.pyplot as plt
    import mlflow

    version = None
    with mlflow.start_run(experiment_id=experiment_id(op), run_name=run_name) as run:
        mlflow.set_tags({"git_revision": git_revision(), **tags})
        mlflow.log_params({k: str(v)[:6000] for k, v in params.items()})
        items = list(metrics.items())
        for i in range(0, len(items), 900):
            mlflow.log_metrics(dict(items[i : i + 900]))
        for name, fig in figures.items():
            mlflow.log_figure(fig, name)
            plt.close(fig)
        for name, table in tables.items():
            mlflow.log_table(table, artifact_file=name)
        for folder, path in dict(files).items():
            log = mlflow.log_artifacts if Path(path).is_dir() else mlflow.log_artifact
            log(str(path), artifact_path=folder)
        if log_model is not None:
            version = log_model(experiment_name(op))
        return run.info.run_id, version


#: the artifacts holding the model a run's frozen-split figures are from, in order: ``fold`` where the run refitted its
#: shipped model (``training.run.train``), else ``shipped``
SCORED = ("fold", "shipped")


def champion_files(op: str, dest: Path, name: str | None = None, artifacts: tuple = ("shipped",)) -> Path | None:
    """Download the champion run's files (boosters + manifest) into ``dest``: the first of ``artifacts`` the run has
    (``SCORED`` for the model that scored its frozen split); None without a champion or any of them. ``name``: another
    registered model of the op (default ``kernelcast-<op>``; the GNN's is ``kernelcast-<op>-gnn``)."""
    import mlflow

    client = setup()
    try:
        mv = client.get_model_version_by_alias(name or experiment_name(op), "champion")
    except Exception:  # noqa: BLE001 — MLflow raises MlflowException (or RestException) when absent
        return None
    present = {f.path for f in client.list_artifacts(mv.run_id)}
    artifact = next((a for a in artifacts if a in present), None)
    if artifact is None:
        return None
    return Path(mlflow.artifacts.download_artifacts(run_id=mv.run_id, artifact_path=artifact, dst_path=str(dest)))


def promote(op: str, version: str, name: str | None = None) -> None:
    setup().set_registered_model_alias(name or experiment_name(op), "champion", version)


def tag_run(run_id: str, key: str, value: str) -> None:
    setup().set_tag(run_id, key, value)


def search(ops) -> Any:
    """All finished runs of the given ops' experiments (pandas frame from mlflow.search_runs)."""
    import mlflow
    import pandas as pd

    client = setup()
    found = [e for e in (client.get_experiment_by_name(experiment_name(op)) for op in ops) if e is not None]
    if not found:  # no experiment yet: nothing to search (and none is created by looking)
        return pd.DataFrame()
    runs = mlflow.search_runs(
        experiment_ids=[e.experiment_id for e in found],
        filter_string="attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
    )
    return runs.assign(experiment_name=runs["experiment_id"].map({e.experiment_id: e.name for e in found}))
