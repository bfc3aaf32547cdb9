"""The farm file (``farm.toml``): what a night measures, where it fans out, how it validates, trains and logs.

Every key is checked when the file is loaded; an error names the key, the value and what is allowed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import tomllib

MODES = ("slurm", "local")
#: host timers (cpu seam, test doubles): their rows are never committed training data
HOST_TIMERS = ("cpu",)
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class RunSection:
    """How each shard is measured (``collect.shard.RunConfig`` fields)."""

    timer: str = "cupti"  # a timer name, or a batch measure function 'module:function'
    cache: str = "cold"  # L2 state before each call
    repeats: int | None = None  # timed calls per config (None: the timer's default)
    chunk: int = 32  # descriptions per measuring call
    warmup_s: float = 3.0  # the timer's warm-up per worker start
    timeout_s: float = 120.0  # seconds per description before its worker is restarted


@dataclass(frozen=True)
class FanoutSection:
    """Where the shards run."""

    mode: str = "slurm"  # slurm: one sbatch --array per night; local: worker processes on this host
    shards: int = 8  # array tasks (Slurm) — one shard of the plan each
    gpus_per_task: int = 1  # Slurm --gres=gpu:N and the runner's --gpus 0..N-1 (0: CPU tasks, one worker)
    concurrency: int = 8  # Slurm array cap (--array=0-K%concurrency)
    local_workers: int = 1  # local mode: worker processes (one per local GPU; CPU: this many)
    partition: str = ""  # Slurm partition ("" = the default one)
    time_limit: str = "04:00:00"  # Slurm --time per array task
    attempts: int = 3  # submissions of the shards still missing before the night gives up
    poll_s: float = 5.0  # seconds between squeue polls


@dataclass(frozen=True)
class ValidateSection:
    """What a night is checked against."""

    min_drift: float = 0.03  # sentinel drift must exceed max(this, the night's noise p90) to be flagged
    outlier_factor: float = 3.0  # a re-measurement off its original by more than this × noise p90 is an outlier


@dataclass(frozen=True)
class TrainSection:
    """The night's retraining."""

    ops: tuple[str, ...] = ("gemm",)  # op families retrained each night
    params: dict = field(default_factory=dict)  # LatencyRegressor overrides (a tiny model for CI nights)


@dataclass(frozen=True)
class FarmConfig:
    """One farm: the file's top-level keys plus its sections."""

    name: str
    root: Path  # night folders, the farm's datasets, test set, models and reports
    gpu: str  # the GPU the descriptions name
    sweeps: tuple[str, ...]  # this night's sweeps, drawn with the night's seed
    sentinels: str  # the sentinel sweep (fixed seed), re-measured every night
    test_sweep: str  # the independent test set's sweep, measured once in its own pass
    seed: int = 0  # night seed = seed + the night's number (yyyymmdd)
    sentinel_seed: int = 0
    test_seed: int = 1_000_003
    repeat_share: float = 0.1  # share re-measured in the same night: the noise floor
    tracking_uri: str = ""  # the MLflow server ("" = MLFLOW_TRACKING_URI)
    experiment: str = "kernelcast-nightly"  # MLflow experiment of the night runs
    run: RunSection = RunSection()
    fanout: FanoutSection = FanoutSection()
    validate: ValidateSection = ValidateSection()
    train: TrainSection = TrainSection()

    @property
    def datasets(self) -> Path:
        return self.root / "datasets"

    @property
    def testset(self) -> Path:
        return self.root / "testset"

    @property
    def models(self) -> Path:
        return self.root / "models"

    def night_dir(self, night: str) -> Path:
        return self.root / "nights" / night


SECTIONS = {"run": RunSection, "fanout": FanoutSection, "validate": ValidateSection, "train": TrainSection}
_KINDS = {"str": str, "int": int, "float": (int, float), "tuple[str, ...]": list, "dict": dict, "int | None": int}


def _bad(key: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"farm[{key!r}] must be {allowed}; got {value!r}")


def _check_type(key: str, kind: str, value: Any) -> Any:
    want = _KINDS.get(kind)
    if want is None:
        return value
    if isinstance(value, bool) or not isinstance(value, want):
        raise _bad(key, value, f"a {kind.replace('tuple[str, ...]', 'list of strings')}")
    if kind == "tuple[str, ...]":
        if not value or not all(isinstance(v, str) and v for v in value):
            raise _bad(key, value, "a non-empty list of strings")
        return tuple(value)
    return float(value) if kind == "float" else value


def _section(name: str, cls, raw: Any):
    if not isinstance(raw, dict):
        raise _bad(name, raw, "a table")
    known = {f.name: f for f in fields(cls)}
    for key in raw:
        if key not in known:
            raise _bad(f"{name}.{key}", raw[key], f"absent: [{name}] takes {', '.join(known)}")
    return cls(**{k: _check_type(f"{name}.{k}", known[k].type, v) for k, v in raw.items()})


def _check(cfg: FarmConfig) -> None:
    from kernelcast.collect.shard import RunConfig
    from kernelcast.collect.sweeps import list_sweeps
    from kernelcast.features.gpu import resolve_gpu_name
    from kernelcast.features.ops import op_names

    resolve_gpu_name(cfg.gpu)
    for key, names in (("sweeps", cfg.sweeps), ("sentinels", [cfg.sentinels]), ("test_sweep", [cfg.test_sweep])):
        unknown = [s for s in names if s not in list_sweeps()]
        if unknown:
            raise _bad(key, unknown[0], "a sweep of collect/sweeps/: " + ", ".join(list_sweeps()))

    if cfg.fanout.mode not in MODES:
        raise _bad("fanout.mode", cfg.fanout.mode, "one of " + ", ".join(MODES))
    for key in ("shards", "concurrency", "local_workers", "attempts"):
        if getattr(cfg.fanout, key) < 1:
            raise _bad(f"fanout.{key}", getattr(cfg.fanout, key), "an integer >= 1")
    if cfg.fanout.gpus_per_task < 0:
        raise _bad("fanout.gpus_per_task", cfg.fanout.gpus_per_task, "an integer >= 0")
    if cfg.fanout.poll_s <= 0:
        raise _bad("fanout.poll_s", cfg.fanout.poll_s, "a number > 0")
    if not 0.1 <= cfg.repeat_share <= 1:
        raise _bad("repeat_share", cfg.repeat_share, "a number in [0.1, 1]")
    for key in ("min_drift", "outlier_factor"):
        if getattr(cfg.validate, key) <= 0:
            raise _bad(f"validate.{key}", getattr(cfg.validate, key), "a number > 0")
    unknown = [op for op in cfg.train.ops if op not in op_names()]
    if unknown:
        raise _bad("train.ops", unknown[0], "among " + ", ".join(op_names()))
    run = cfg.run
    RunConfig(
        timer=run.timer,
        cache=run.cache,
        repeats=run.repeats,
        chunk=run.chunk,
        warmup_s=run.warmup_s,
        timeout_s=run.timeout_s,
    ).check()
    if host_timer(cfg) and cfg.root.resolve().is_relative_to((REPO / "datasets").resolve()):
        raise _bad("root", str(cfg.root), f"outside {REPO / 'datasets'} (timer {run.timer!r} times the host)")


def host_timer(cfg: FarmConfig) -> bool:
    """True when the farm's rows time the host (the cpu seam or a test batch function), never a GPU."""
    return cfg.run.timer in HOST_TIMERS or ":" in cfg.run.timer


def load_farm(path: str | os.PathLike) -> FarmConfig:
    """Read and check a farm file; ``root`` is relative to the file's folder."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ValueError(f"--farm file {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"--farm file {str(path)!r} is not valid TOML: {exc}") from None
    top = {f.name: f for f in fields(FarmConfig)}
    for key in raw:
        if key not in top:
            raise _bad(key, raw[key], "absent: a farm file takes " + ", ".join(top))
    missing = [k for k in ("name", "root", "gpu", "sweeps", "sentinels", "test_sweep") if k not in raw]
    if missing:
        raise _bad(missing[0], None, "given (required)")
    values = {}
    for key, value in raw.items():
        if key in SECTIONS:
            values[key] = _section(key, SECTIONS[key], value)
        elif key == "root":
            values[key] = (path.parent / _check_type(key, "str", value)).resolve()
        else:
            values[key] = _check_type(key, top[key].type, value)
    cfg = FarmConfig(**values)
    _check(cfg)
    return cfg
