"""Fan-out: the night's shard tasks on Slurm (one ``sbatch --array`` per submission, a chained job) or locally.

Slurm: the array's tasks are the shards still missing rows; ``--requeue`` lets Slurm rerun a task whose node
failed, and the runner's per-shard lock and resume make a rerun measure only what is left. A chained job
(``--dependency=afterany``) runs ``kernelcast nightly`` for the same night: it merges and goes on, or, when
a task was cancelled and left rows missing, submits the missing shards again (up to ``fanout.attempts``).
Plain ``sbatch``/``squeue``/``scancel``; no accounting database is needed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kernelcast.collect.shard import RunConfig, run_shard
from kernelcast.pipeline.farm import FarmConfig
from kernelcast.pipeline.plans import ShardTask


def run_config(cfg: FarmConfig, gpus: int, progress: bool) -> RunConfig:
    run = cfg.run
    return RunConfig(
        gpus=tuple(range(max(gpus, 1))),
        timer=run.timer,
        cache=run.cache,
        repeats=run.repeats,
        chunk=run.chunk,
        timeout_s=run.timeout_s,
        warmup_s=run.warmup_s,
        progress=progress,
    )


def run_local(cfg: FarmConfig, todo: list[ShardTask], progress: bool) -> list[dict[str, Any]]:
    """Run each task here, one after another, over ``fanout.local_workers`` worker processes."""
    config = run_config(cfg, cfg.fanout.local_workers, progress)
    return [run_shard(t.plan, t.i, t.n, t.out, config) for t in todo]


def _runner_command(cfg: FarmConfig, task: ShardTask) -> list[str]:
    run, gpus = cfg.run, max(cfg.fanout.gpus_per_task, 1)
    cmd = [sys.executable, "-m", "kernelcast.collect.cli", "collect", "run", "--plan", str(task.plan)]
    cmd += ["--shard", f"{task.i}/{task.n}", "--out", str(task.out), "--gpus", ",".join(map(str, range(gpus)))]
    cmd += ["--measure" if ":" in run.timer else "--timer", run.timer, "--cache", run.cache, "--chunk", str(run.chunk)]
    cmd += ["--warmup-s", str(run.warmup_s), "--timeout", str(run.timeout_s), "--json"]
    return cmd + (["--repeats", str(run.repeats)] if run.repeats else [])


def array_script(cfg: FarmConfig, tasks: list[ShardTask], path: Path) -> Path:
    """The array job's script: task id -> its runner command (all tasks, so task ids stay stable)."""
    cases = "\n".join(f"  {k}) exec {shlex.join(_runner_command(cfg, t))} ;;" for k, t in enumerate(tasks))
    text = (
        "#!/bin/bash\n# kernelcast nightly array job: one shard of the night per task (written by the pipeline)\n"
        f'set -euo pipefail\ncase "$SLURM_ARRAY_TASK_ID" in\n{cases}\n'
        '  *) echo "no task $SLURM_ARRAY_TASK_ID" >&2; exit 2 ;;\nesac\n'
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _sbatch(args: list[str]) -> str:
    try:
        done = subprocess.run(["sbatch", "--parsable", *args], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise ValueError("fanout.mode is 'slurm' but sbatch is not on PATH (use mode = 'local' on one host)") from None
    if done.returncode != 0:
        raise RuntimeError(f"sbatch {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip().split(";")[0]


def submit(
    cfg: FarmConfig, night: str, farm_file: Path, tasks: list[ShardTask], todo: list[int], attempt: int
) -> dict[str, Any]:
    """One ``sbatch --array`` over the task ids in ``todo`` and the chained rest-of-night job."""
    fan, slurm = cfg.fanout, cfg.night_dir(night) / "slurm"
    script = array_script(cfg, tasks, slurm / "array.sh")
    name = f"kc-{cfg.name}-{night}"
    common = [f"--time={fan.time_limit}"] + ([f"--partition={fan.partition}"] if fan.partition else [])
    array = [f"--array={','.join(map(str, todo))}%{fan.concurrency}", f"--job-name={name}-a{attempt}", "--requeue"]
    array += [f"--output={slurm}/%A_%a.out", "--cpus-per-task=1"]
    array += [f"--gres=gpu:{fan.gpus_per_task}"] if fan.gpus_per_task else []
    array_id = _sbatch(array + common + [str(script)])
    rest = [sys.executable, "-m", "kernelcast", "nightly", "--farm", str(farm_file), "--night", night, "--no-wait"]
    chain = [f"--dependency=afterany:{array_id}", f"--job-name={name}-chain{attempt}", "--cpus-per-task=1"]
    chain += [f"--output={slurm}/chain_%j.out", f"--wrap={shlex.join(rest)}"]
    chain_id = _sbatch(chain + common)
    return {"attempt": attempt, "array": array_id, "chain": chain_id, "tasks": todo, "submitted": time.time()}


def in_queue(job_ids: list[str]) -> list[str]:
    """The given jobs (array tasks included) still pending or running; a purged job id counts as gone."""
    if not job_ids:
        return []
    done = subprocess.run(
        ["squeue", "-h", "--array", "-j", ",".join(job_ids), "-o", "%i %T"], capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0 and "Invalid job id" not in done.stderr:
        raise RuntimeError(f"squeue failed: {done.stderr.strip()}")
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def wait_for(job_ids: list[str], poll_s: float, say=None) -> None:
    """Return once none of ``job_ids`` is in the queue."""
    shown = None
    while queued := in_queue(job_ids):
        if say is not None and len(queued) != shown:
            say(f"waiting on {len(queued)} Slurm job(s): {' '.join(queued[:8])}")
            shown = len(queued)
        time.sleep(poll_s)


def this_job() -> str | None:
    """The Slurm job id this process runs in (a chained job), None outside Slurm."""
    return os.environ.get("SLURM_JOB_ID")
