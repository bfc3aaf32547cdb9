"""The night's rows: merged under the night's own tag (``nights/<night>/merged``), then published to the farm's
datasets (training data) unless quarantined; the independent test set goes to ``testset/`` in its own pass.

Each folder carries a ``files.toml`` card as the committed ``datasets/`` does (``training.data.card_files``),
listing every parquet file under it with one role: ``train`` in ``datasets/``, ``test`` in ``testset/``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from kernelcast.collect.dataset import atomic_path, parquet_files, read_table
from kernelcast.collect.merge import merge
from kernelcast.pipeline.farm import FarmConfig, host_timer

CARD = "files.toml"


def write_card(root: Path, role: str, note: str) -> Path:
    """``root/files.toml`` listing every parquet file under ``root`` with ``role`` (atomic)."""
    lines = [f"# {note}", "# written by kernelcast.pipeline: every file under this folder, one role", ""]
    for path in parquet_files([root]) if root.is_dir() else []:
        rel = path.relative_to(root).as_posix()
        lines += ["[[file]]", f'path = "{rel}"', f'role = "{role}"', ""]
    with atomic_path(root / CARD) as tmp:
        tmp.write_text("\n".join(lines))
    return root / CARD


def merge_night(cfg: FarmConfig, night: str) -> dict[str, Any]:
    """Merge the night's shard files under its own tag; the test pass straight into the farm's test set."""
    folder = cfg.night_dir(night)
    allow = host_timer(cfg)
    out = {"night": _merge_summary(merge([folder / "shards"], folder / "merged", allow_host_timers=allow))}
    if (folder / "test_shards").is_dir():
        out["test"] = _merge_summary(merge([folder / "test_shards"], cfg.testset, allow_host_timers=allow))
        write_card(cfg.testset, "test", f"farm {cfg.name}: the independent test set, measured night {night}")
    return out


def _merge_summary(result: dict[str, Any]) -> dict[str, Any]:
    return {k: result[k] for k in ("rows_in", "added", "duplicates_skipped", "noise")} | {"files": result["files"]}


def publish(cfg: FarmConfig, night: str) -> dict[str, Any]:
    """The night's merged rows into the farm's datasets (first measurement of a description wins), card rewritten."""
    merged = cfg.night_dir(night) / "merged"
    result = merge([merged], cfg.datasets, allow_host_timers=host_timer(cfg))
    write_card(cfg.datasets, "train", f"farm {cfg.name}: nights published so far")
    return _merge_summary(result)


def night_rows(cfg: FarmConfig, night: str):
    """The night's merged rows (pandas), every op."""
    files = parquet_files([cfg.night_dir(night) / "merged"])
    return read_table(files).to_pandas() if files else None


def row_counts(frame) -> dict[str, Any]:
    """Rows by op and status, originals and re-measurements."""
    if frame is None or frame.empty:
        return {"rows": 0}
    return {
        "rows": len(frame),
        "originals": int(frame["repeat_of"].isna().sum()),
        "by_status": dict(sorted(Counter(frame["status"]).items())),
        "by_op": dict(sorted(Counter(frame["op"]).items())),
    }
