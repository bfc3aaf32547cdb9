"""A night's state file (``nights/<night>/state.json``): which stages are done, with what result; written atomically.

A stage is recorded once it has finished; a rerun of the night skips recorded stages, so a night killed
anywhere resumes at the first stage not recorded. The night's lock (``nights/<night>/.lock_night``)
keeps two drivers (a login-node driver and the Slurm chain job) from running stages at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kernelcast.collect.dataset import atomic_path, file_lock, utc_now

STAGES = ("plan", "fanout", "merge", "validate", "publish", "retrain", "evaluate", "register", "report")
STATE_FORMAT = "kernelcast.night/1"


class NightState:
    """The state of one night: stage records, Slurm submissions, quarantine; ``save`` after each change."""

    def __init__(self, path: Path, data: dict[str, Any]):
        self.path, self.data = path, data

    @classmethod
    def load(cls, night_dir: Path, night: str, farm: str) -> NightState:
        path = night_dir / "state.json"
        if not path.exists():
            return cls(path, {"format": STATE_FORMAT, "night": night, "farm": farm, "stages": {}, "submissions": []})
        data = json.loads(path.read_text())
        if data.get("format") != STATE_FORMAT or data.get("night") != night or data.get("farm") != farm:
            raise ValueError(
                f"{path} is not the state of night {night!r} of farm {farm!r} "
                f"(format {data.get('format')!r}, night {data.get('night')!r}, farm {data.get('farm')!r})"
            )
        return cls(path, data)

    def save(self) -> None:
        with atomic_path(self.path) as tmp:
            tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True, default=str) + "\n")

    def done(self, stage: str) -> bool:
        return stage in self.data["stages"]

    def result(self, stage: str) -> dict[str, Any]:
        return self.data["stages"][stage]["result"]

    def record(self, stage: str, started: float, result: dict[str, Any]) -> None:
        """Mark ``stage`` done with its result and how long it took; saved at once."""
        now = time.time()
        self.data["stages"][stage] = {
            "finished": utc_now(),
            "started_at": started,
            "finished_at": now,
            "seconds": round(now - started, 3),
            "result": result,
        }
        self.save()

    def forget(self, *stages: str) -> None:
        """Drop stage records so they run again (``accept`` reopens a quarantined night's later stages)."""
        for stage in stages:
            self.data["stages"].pop(stage, None)
        self.save()


@contextmanager
def night_lock(night_dir: Path) -> Iterator[None]:
    """Hold the night's lock for the block (waits for another holder)."""
    night_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(night_dir / ".lock_night"):
        yield
