"""One night, stage by stage: plan → fanout (→ wait) → merge → validate → publish → retrain → evaluate → register →
report. Each stage is recorded in the night's state file when it finishes; a rerun skips recorded stages, and
the runner's resume means a shard rerun measures only what has no row yet.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelcast.collect.dataset import atomic_path, utc_now
from kernelcast.pipeline import datasets, fanout, models, plans, register, validate
from kernelcast.pipeline.farm import FarmConfig
from kernelcast.pipeline.state import STAGES, NightState, night_lock


@dataclass
class Night:
    """What the stages share: the farm, the night, its state, the farm file (for chained Slurm jobs)."""

    cfg: FarmConfig
    night: str
    state: NightState
    farm_file: Path
    progress: bool
    say: Callable[[str], None]


@dataclass(frozen=True)
class Waiting:
    """The fan-out is in Slurm's hands: these jobs must leave the queue before the night can go on."""

    jobs: tuple[str, ...]


class Stopped(RuntimeError):
    """The night was stopped (SIGTERM/Ctrl-C of a local fan-out); rerun to resume."""


def _tasks(n: Night) -> list[plans.ShardTask]:
    return plans.tasks(n.cfg, n.night, n.cfg.fanout.shards if n.cfg.fanout.mode == "slurm" else 1)


def _plan(n: Night) -> dict:
    return plans.make_night_plans(n.cfg, n.night)


def _fanout(n: Night) -> dict | Waiting:
    cfg, data = n.cfg, n.state.data
    if "fanout_started" not in data:
        data["fanout_started"] = time.time()
        n.state.save()
    tasks, runs = _tasks(n), []
    todo = [k for k, t in enumerate(tasks) if plans.missing(t)]
    if todo and cfg.fanout.mode == "local":
        runs = fanout.run_local(cfg, [tasks[k] for k in todo], n.progress)
        if any(r["interrupted"] for r in runs):
            raise Stopped(f"night {n.night}: the local fan-out was interrupted; rerun to resume")
        todo = [k for k, t in enumerate(tasks) if plans.missing(t)]
    if todo and cfg.fanout.mode == "slurm":
        subs = data["submissions"]
        if subs and fanout.in_queue([subs[-1]["array"]]):
            return Waiting((subs[-1]["array"], subs[-1]["chain"]))
        if len(subs) >= cfg.fanout.attempts:
            names = ", ".join(tasks[k].name for k in todo)
            raise RuntimeError(f"night {n.night}: shards {names} still miss rows after {len(subs)} submissions")
        sub = fanout.submit(cfg, n.night, n.farm_file, tasks, todo, len(subs) + 1)
        subs.append(sub)
        n.state.save()
        n.say(f"submitted array job {sub['array']} (tasks {sub['tasks']}) and chained job {sub['chain']}")
        return Waiting((sub["array"], sub["chain"]))
    if todo:
        raise RuntimeError(f"night {n.night}: shards {', '.join(tasks[k].name for k in todo)} still miss rows")
    slots = cfg.fanout.local_workers if cfg.fanout.mode == "local" else _slurm_slots(cfg, len(tasks))
    idle = validate.idle_share([t.out for t in tasks], data["fanout_started"], slots)
    keep = ("shard", "measured", "already_done", "status_counts", "restarts", "elapsed_s", "rows_per_min")
    runs = [{"plan": Path(r["plan"]).name, **{k: r[k] for k in keep}} for r in runs]
    return {"tasks": [t.name for t in tasks], "submissions": len(data["submissions"]), "idle": idle, "runs": runs}


def _slurm_slots(cfg: FarmConfig, tasks: int) -> int:
    return min(cfg.fanout.concurrency, tasks) * max(cfg.fanout.gpus_per_task, 1)


def _merge(n: Night) -> dict:
    return datasets.merge_night(n.cfg, n.night)


def last_published(cfg: FarmConfig, night: str) -> str | None:
    """The latest earlier night whose rows were published (clean, or accepted): the drift baseline."""
    folder = cfg.root / "nights"
    earlier = sorted((p.name for p in folder.iterdir() if p.name.isdigit() and int(p.name) < int(night)), key=int)
    for name in reversed(earlier):
        state = NightState.load(folder / name, name, cfg.name)
        if state.done("publish") and state.result("publish").get("published"):
            return name
    return None


def _validate(n: Night) -> dict:
    baseline = last_published(n.cfg, n.night)
    tonight = datasets.night_rows(n.cfg, n.night)
    last = datasets.night_rows(n.cfg, baseline) if baseline else None
    result = validate.validate_night(n.cfg, tonight, last, plans.sentinel_keys(n.cfg, n.night))
    return {**result, "baseline_night": baseline, "counts": datasets.row_counts(tonight)}


def _quarantined(n: Night) -> bool:
    return n.state.result("validate")["quarantine"] and not n.state.data.get("accepted")


def _publish(n: Night) -> dict:
    if _quarantined(n):
        flagged = ", ".join(n.state.result("validate")["flagged"])
        n.say(f"night {n.night} QUARANTINED: sentinel drift on {flagged}; `kernelcast nightly accept {n.night}`")
        return {"published": False, "quarantined": True}
    return {"published": True, **datasets.publish(n.cfg, n.night)}


def _retrain(n: Night) -> dict:
    if not n.state.result("publish")["published"]:
        return {"skipped": "quarantined"}
    return {"ops": models.retrain(n.cfg, n.night)}


def _evaluate(n: Night) -> dict:
    if not n.state.result("publish")["published"]:
        return {"skipped": "quarantined"}
    return {"ops": models.evaluate_night(n.cfg, n.night)}


def _register(n: Night) -> dict:
    summary = {
        "counts": n.state.result("validate")["counts"],
        "validate": n.state.result("validate"),
        "accepted": n.state.data.get("accepted"),
        "evaluate": n.state.result("evaluate").get("ops"),
    }
    return register.register(n.cfg, n.night, summary, models.candidate_dir(n.cfg, n.night))


def _report(n: Night) -> dict:
    run_id = n.state.result("register")["run_id"]
    board = register.dashboard(n.cfg, run_id, n.cfg.root / "reports" / "dashboard.png")
    text = json.dumps({**summary(n.cfg, n.state), "status": "done"}, indent=1, sort_keys=True, default=str)
    for path in (n.cfg.root / "reports" / f"{n.night}.json", n.cfg.night_dir(n.night) / "summary.json"):
        with atomic_path(path) as tmp:
            tmp.write_text(text + "\n")
    return {"dashboard": board, "summary": str(n.cfg.root / "reports" / f"{n.night}.json")}


STAGE_FUNCS = {
    "plan": _plan,
    "fanout": _fanout,
    "merge": _merge,
    "validate": _validate,
    "publish": _publish,
    "retrain": _retrain,
    "evaluate": _evaluate,
    "register": _register,
    "report": _report,
}


def advance(cfg: FarmConfig, farm_file: Path, night: str, progress: bool, say) -> Waiting | NightState:
    """Run the night's unrecorded stages in order, under the night's lock, until done or waiting on Slurm."""
    folder = cfg.night_dir(night)
    register.use_server(cfg)  # evaluate reads the champion from MLflow too
    with night_lock(folder):
        state = NightState.load(folder, night, cfg.name)
        n = Night(cfg, night, state, farm_file, progress, say)
        for stage in STAGES:
            if state.done(stage):
                continue
            started = time.time()
            result = STAGE_FUNCS[stage](n)
            if isinstance(result, Waiting):
                return result
            state.record(stage, state.data.get("fanout_started", started) if stage == "fanout" else started, result)
            say(f"night {night}: {stage} done in {time.time() - started:.1f}s")
        return state


def run_night(cfg: FarmConfig, farm_file: Path, night: str, wait: bool = True, progress: bool = True) -> dict:
    """Advance the night; with ``wait``, until every stage is done (polling Slurm between advances)."""
    say = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else (lambda msg: None)
    while True:
        outcome = advance(cfg, farm_file, night, progress, say)
        if isinstance(outcome, NightState):
            return summary(cfg, outcome)
        if not wait:
            return {"night": night, "farm": cfg.name, "status": "waiting", "jobs": list(outcome.jobs)}
        mine = fanout.this_job()
        fanout.wait_for([j for j in outcome.jobs if j != mine], cfg.fanout.poll_s, say)


def accept(cfg: FarmConfig, farm_file: Path, night: str, progress: bool = True) -> dict:
    """Accept a quarantined night: its rows are published and trained on, and its later stages run again."""
    folder = cfg.night_dir(night)
    with night_lock(folder):
        state = NightState.load(folder, night, cfg.name)
        if not state.done("validate"):
            raise ValueError(f"night {night!r} has not been validated yet; run `kernelcast nightly` for it first")
        if not state.result("validate")["quarantine"]:
            raise ValueError(f"night {night!r} is not quarantined (no sentinel drift); nothing to accept")
        if not state.data.get("accepted"):
            state.data["accepted"] = utc_now()
            state.forget("publish", "retrain", "evaluate", "register", "report")
    return run_night(cfg, farm_file, night, wait=False, progress=progress)


def summary(cfg: FarmConfig, state: NightState) -> dict[str, Any]:
    """What ran, where, how long, and what changed since the last night."""
    stages = state.data["stages"]
    get = lambda stage, key, default=None: stages.get(stage, {}).get("result", {}).get(key, default)
    checks = get("validate", "drift", [])
    return {
        "night": state.data["night"],
        "farm": cfg.name,
        "status": "done" if len(stages) == len(STAGES) else "partial",
        "where": {"mode": cfg.fanout.mode, "host": socket.gethostname(), "slurm_jobs": state.data["submissions"]},
        "stages": {s: stages[s]["seconds"] for s in STAGES if s in stages},
        "seconds": round(
            max(v["finished_at"] for v in stages.values()) - min(v["started_at"] for v in stages.values()), 3
        )
        if stages
        else 0.0,
        "counts": get("validate", "counts"),
        "merged": get("merge", "night"),
        "idle": get("fanout", "idle"),
        "noise": get("validate", "noise"),
        "outliers": get("validate", "outliers"),
        "since_last_night": {
            "baseline": get("validate", "baseline_night"),
            "drift": checks,
            "versions_changed": {f"{r['gpu']}|{r['backend']}": r["versions_changed"] for r in checks},
        },
        "quarantined": bool(get("publish", "quarantined", False)),
        "accepted": state.data.get("accepted"),
        "published": get("publish", "added"),
        "evaluate": get("evaluate", "ops"),
        "promoted": get("register", "promoted"),
        "mlflow": {"tracking_uri": get("register", "tracking_uri"), "run_id": get("register", "run_id")},
    }
