"""A night's plans and shard tasks: this night's seeded draws plus the fixed sentinels, and the test set's own pass."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelcast.collect.dataset import atomic_path
from kernelcast.collect.plan import load_plan, make_plan, save_plan, shard, shard_tag
from kernelcast.collect.shard import measured_statuses, output_files
from kernelcast.collect.sweeps import expand_tagged
from kernelcast.features.gpu import resolve_gpu_name
from kernelcast.pipeline.farm import FarmConfig

PLAN = "plan.jsonl"  # the night's plan (draws + sentinels)
TEST_PLAN = "test_plan.jsonl"  # the independent test set's plan (its first night only)
SENTINELS = "sentinels.json"  # desc keys of the sentinel set


@dataclass(frozen=True)
class ShardTask:
    """One array task: shard ``i/n`` of a plan, rows written under ``out``."""

    plan: Path
    i: int
    n: int
    out: Path

    @property
    def name(self) -> str:
        return f"{self.plan.stem}:{shard_tag(self.i, self.n)}"


def night_seed(cfg: FarmConfig, night: str) -> int:
    """The night's draw seed: the farm's seed plus the night's number (nights are yyyymmdd or any integer)."""
    if not night.isdigit():
        raise ValueError(f"night must be digits (yyyymmdd or a counter); got {night!r}")
    return cfg.seed + int(night)


def make_night_plans(cfg: FarmConfig, night: str) -> dict[str, Any]:
    """Write the night's plan (and the test set's plan when the farm has none yet); idempotent."""
    folder = cfg.night_dir(night)
    gpu = resolve_gpu_name(cfg.gpu)
    seed = night_seed(cfg, night)
    drawn = [dt for name in cfg.sweeps for dt in expand_tagged(name, gpu, seed)]
    sentinels = expand_tagged(cfg.sentinels, gpu, cfg.sentinel_seed)
    tags = {d.key(): t for d, t in drawn + sentinels if t}
    plan = make_plan(
        [d for d, _ in drawn + sentinels],
        seed,
        cfg.repeat_share,
        sweeps=(*cfg.sweeps, cfg.sentinels),
        gpu=gpu,
        tags=tags,
    )
    out = {"plan": _save_once(plan, folder / PLAN), "sentinels": len({d.key() for d, _ in sentinels})}
    with atomic_path(folder / SENTINELS) as tmp:
        tmp.write_text(json.dumps(sorted({d.key() for d, _ in sentinels})))
    if not (cfg.testset / "files.toml").exists():
        test = expand_tagged(cfg.test_sweep, gpu, cfg.test_seed)
        test_plan = make_plan([d for d, _ in test], cfg.test_seed, cfg.repeat_share, sweeps=(cfg.test_sweep,), gpu=gpu)
        out["test_plan"] = _save_once(test_plan, folder / TEST_PLAN)
    return out


def _save_once(plan, path: Path) -> dict[str, Any]:
    """Save ``plan`` unless the same plan (same id) is there already; another plan at ``path`` is an error."""
    if path.exists():
        found = load_plan(path).plan_id()
        if found != plan.plan_id():
            raise ValueError(f"{path} holds plan {found}, not this night's plan {plan.plan_id()}: remove the night")
    else:
        save_plan(plan, path)
    return {"path": str(path), "plan_id": plan.plan_id(), "entries": len(plan.entries)}


def tasks(cfg: FarmConfig, night: str, shards: int) -> list[ShardTask]:
    """The night's shard tasks: ``shards`` of the plan, then the test plan (when there is one) in one shard."""
    folder = cfg.night_dir(night)
    out = [ShardTask(folder / PLAN, i, shards, folder / "shards") for i in range(shards)]
    if (folder / TEST_PLAN).exists():
        out.append(ShardTask(folder / TEST_PLAN, 0, 1, folder / "test_shards"))
    return out


def missing(task: ShardTask) -> int:
    """Entries of the task's shard with no row yet (failed entries have rows: they count as done)."""
    plan = load_plan(task.plan)
    done = measured_statuses(output_files(task.out, plan.plan_id(), shard_tag(task.i, task.n)))
    return sum(e.index not in done for e in shard(plan, task.i, task.n))


def sentinel_keys(cfg: FarmConfig, night: str) -> set[str]:
    return set(json.loads((cfg.night_dir(night) / SENTINELS).read_text()))
