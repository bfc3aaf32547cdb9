"""MLflow for the night: one run per night (found again by its tags on a rerun), counts, drift and accuracy per
architecture as metrics; a promoted candidate registered as ``kernelcast-<op>`` with the ``champion`` alias;
the dashboard plot of accuracy per architecture across nights.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from kernelcast.collect.dataset import atomic_path
from kernelcast.pipeline.farm import FarmConfig
from kernelcast.training import tracking


def use_server(cfg: FarmConfig) -> str:
    """Point ``training.tracking`` at the farm's MLflow server (the farm file's, else MLFLOW_TRACKING_URI)."""
    uri = cfg.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{cfg.root / 'mlflow.db'}"
    os.environ["MLFLOW_TRACKING_URI"] = uri
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"  # stdout carries the summary (--json)
    return uri


def _experiment(client, name: str) -> str:
    with tracking.store_lock(tracking.tracking_uri()):
        exp = client.get_experiment_by_name(name)
        return exp.experiment_id if exp is not None else client.create_experiment(name)


def night_run(cfg: FarmConfig, night: str) -> str:
    """The night's run id: the one tagged with this farm and night, or a new one."""
    client = tracking.setup()
    exp = _experiment(client, cfg.experiment)
    found = client.search_runs([exp], f"tags.farm = '{cfg.name}' and tags.night = '{night}'", max_results=1)
    if found:
        return found[0].info.run_id
    run = client.create_run(exp, tags={"farm": cfg.name, "night": night, "mlflow.runName": f"night-{night}"})
    params = {"gpu": cfg.gpu, "sweeps": ",".join(cfg.sweeps), "sentinels": cfg.sentinels, "timer": cfg.run.timer}
    params |= {"mode": cfg.fanout.mode, "shards": cfg.fanout.shards, "train_ops": ",".join(cfg.train.ops)}
    for key, value in params.items():
        client.log_param(run.info.run_id, key, str(value))
    return run.info.run_id


def flat_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """The night's numbers as MLflow metrics: counts, noise, drift, and scores per set, model and architecture."""
    out = {}
    counts = summary["counts"]
    out["rows"] = counts.get("rows", 0)
    for status, n in counts.get("by_status", {}).items():
        out[f"status.{status}"] = n
    for group, v in summary["validate"]["noise"].items():
        out[f"noise.{group.replace('|', '.')}.p90"] = v["p90"]
    for r in summary["validate"]["drift"]:
        out[f"drift.{r['gpu']}.{r['backend']}"] = r["drift"]
    for op, result in (summary.get("evaluate") or {}).items():
        for name, scores in result["scores"].items():
            for model, values in scores.items():
                for key, value in (values or {}).items():
                    out[f"{op}.{name}.{model}.{key}"] = value
    return {k: float(v) for k, v in out.items() if v == v}


def _register(client, run_id: str, op: str, candidate: Path) -> str:
    """The run's model version of ``kernelcast-<op>`` (created once per run), set as champion: the candidate's files
    logged in the night's run as the kernelcast pyfunc (``training.pyfunc``), as `kernelcast train` registers it."""
    import json

    import mlflow

    from kernelcast.training import pyfunc

    name = tracking.experiment_name(op)
    found = client.search_registered_models(f"name = '{name}'")
    mine = [v for v in client.search_model_versions(f"name = '{name}'") if v.run_id == run_id] if found else []
    if mine:
        version = mine[0].version
    else:
        manifest = json.loads((candidate / f"{op}.json").read_text())
        with mlflow.start_run(run_id=run_id):  # the night's run, resumed; register() ends it
            version = pyfunc.log_model(op, candidate, manifest, name)
    client.set_registered_model_alias(name, "champion", str(version))
    return str(version)


def export(candidate: Path, op: str, dest: Path) -> list[str]:
    """Copy the candidate's files of ``op`` into the farm's model folder (each atomically, manifest last)."""
    files = sorted(candidate.glob(f"{op}.*"), key=lambda p: p.suffix == ".json")
    for path in files:
        with atomic_path(dest / path.name) as tmp:
            shutil.copyfile(path, tmp)
    return [str(dest / p.name) for p in files]


def register(cfg: FarmConfig, night: str, summary: dict[str, Any], candidate: Path) -> dict[str, Any]:
    """Log the night run; register and export each candidate the evaluate stage promotes."""
    uri = use_server(cfg)
    client = tracking.setup()
    run_id = night_run(cfg, night)
    quarantined = summary["validate"]["quarantine"] and not summary.get("accepted")
    client.set_tag(run_id, "quarantined", str(quarantined).lower())
    for key, value in flat_metrics(summary).items():
        client.log_metric(run_id, key, value)
    promoted = {}
    for op, result in (summary.get("evaluate") or {}).items():
        if not result["promote"]:
            continue
        client.log_artifacts(run_id, str(candidate), artifact_path="shipped")
        version = _register(client, run_id, op, candidate)
        promoted[op] = {"version": version, "exported": export(candidate, op, cfg.models)}
    client.set_terminated(run_id)
    return {"tracking_uri": uri, "run_id": run_id, "promoted": promoted, "quarantined": quarantined}


def dashboard(cfg: FarmConfig, run_id: str, path: Path) -> dict[str, Any]:
    """Plot each op's candidate MAPE per architecture on the independent test set across nights; write it to
    ``path`` and log it to the night's run ``run_id``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    client = tracking.setup()
    exp = _experiment(client, cfg.experiment)
    runs = client.search_runs([exp], f"tags.farm = '{cfg.name}'", max_results=1000)
    runs = sorted(runs, key=lambda r: r.data.tags.get("night", ""))
    series: dict[str, list[tuple[str, float]]] = {}
    for run in runs:
        for key, value in run.data.metrics.items():
            parts = key.split(".")
            if len(parts) == 6 and parts[1:3] == ["independent", "candidate"] and parts[3] == "arch":
                series.setdefault(f"{parts[0]} {parts[4]}", []).append((run.data.tags["night"], value))
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, points in sorted(series.items()):
        ax.plot([n for n, _ in points], [100 * v for _, v in points], marker="o", label=label)
    ax.set(xlabel="night", ylabel="MAPE on the independent test set (%)", title=f"farm {cfg.name}: accuracy per night")
    if series:
        ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    client.log_artifact(run_id, str(path))
    return {"path": str(path), "nights": len(runs), "series": {k: len(v) for k, v in series.items()}}
