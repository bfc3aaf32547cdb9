"""Training rows: the dataset files the card names plus the aiconfigurator import, valid ok rows only,
with shape keys and fingerprints."""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import tomllib

from kernelcast.features.desc import op_fields
from kernelcast.features.fields import ABSENT
from kernelcast.features.ops import get_op, op_names
from kernelcast.features.validate import validate_frame

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO / "datasets"
#: row sources training can use: our own measurements and the aiconfigurator-core import
SOURCES = ("kernelcast", "aiconfigurator")
#: our own measurements: training keeps every one of their rows (``subsample``)
OWN_SOURCE = "kernelcast"
#: columns kept beside the description fields (``role``: the card's role of the row's file)
#: (task: fused calls; file: the card's file a row came from)
KEEP = ("latency_us", "source", "gpu_name", "model", "kernel_source", "nccl", "role", "task", "file")
#: the dataset card's machine-readable file list (datasets/README.md names it)
CARD_FILES = "files.toml"
#: file roles: ``train`` may be trained and tuned on; ``test`` is an independent test set, never trained on;
#: ``aside`` is measured and kept but read by nothing by default: labels taken in a state the description cannot say
#: (cuBLAS GEMMs timed back to back for minutes, the H200's SM clock held at 1.46 GHz by its power limit)
ROLES = ("train", "test", "aside")


def card_files(datasets: Path, op: str) -> list[tuple[Path, str]]:
    """(path, role) of every file of ``op`` the dataset card lists; a listed file that is missing is an error."""
    card = Path(datasets) / CARD_FILES
    if not card.exists():
        raise ValueError(f"{card} is missing: training reads only the dataset files the card lists there")
    try:
        entries = tomllib.loads(card.read_text()).get("file", [])
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{card} is not valid TOML: {exc}") from None
    out = []
    for i, entry in enumerate(entries):
        path, role = entry.get("path"), entry.get("role")
        if not isinstance(path, str) or role not in ROLES:
            raise ValueError(
                f"{card}: file[{i}] needs a 'path' and a 'role' (one of {', '.join(ROLES)}); got {entry!r}"
            )
        if Path(path).parts[0] != op:
            continue
        if not (Path(datasets) / path).is_file():
            raise ValueError(f"{card}: file[{i}] {path!r} does not exist under {datasets}")
        out.append((Path(datasets) / path, role))
    return out


def _field_defaults(op: str) -> dict:
    """What a description field a file predates (added since) holds there: its constant default, or ``ABSENT`` where
    the default is computed from other fields (validation computes it, as serving does)."""
    fields = get_op(op).fields
    return {n: ABSENT if callable(f.default) else f.default for n, f in fields.items() if f.default is not None}


def _add_missing_fields(frame: pd.DataFrame, present, defaults: dict) -> pd.DataFrame:
    """``frame`` with each field of ``defaults`` its source lacked (not in ``present``) set to that default; an
    ``ABSENT`` default as an object column, so validation computes it per row."""
    for name, value in defaults.items():
        if name not in present:
            frame[name] = pd.Series([value] * len(frame), index=frame.index, dtype=object) if value is ABSENT else value
    return frame


def _read_parquet(files: list[tuple[Path, str]], defaults: dict | None = None) -> pd.DataFrame:
    """The listed parquet files as one frame (schemas unified: ncu rows add columns), each row with its file's role
    and name; a description field a file was written without (added later) takes its default there."""
    import pyarrow as pa
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    # a file another writer gave 64-bit string offsets (pandas 3 writes large_string) is read as the collector's
    # strings; any other type conflict between files stays an error
    own = [
        pa.schema([f.with_type(pa.string()) if f.type == pa.large_string() else f for f in pq.read_schema(path)])
        for path, _ in files
    ]
    schema = pa.unify_schemas(own)
    parts = []
    for (f, role), names in zip(files, own):
        part = pads.dataset([str(f)], schema=schema, format="parquet").to_table().to_pandas()
        parts.append(_add_missing_fields(part, names.names, defaults or {}).assign(role=role, file=f.name))
    return pd.concat(parts, ignore_index=True)


def _own_rows(op: str, datasets: Path, roles) -> pd.DataFrame | None:
    files = [(f, r) for f, r in card_files(datasets, op) if r in roles]
    if not files:
        return None
    frame = _read_parquet(files, _field_defaults(op))
    # labels are originals timed by the dataset's own timer: re-measurements (noise floor) and ncu's
    # one-replay rows (metrics) sit beside them and are not training rows
    if "repeat_of" in frame:
        frame = frame[frame["repeat_of"].isna()]
    if "timer" in frame:
        frame = frame[frame["timer"].ne("ncu")]
    if "cache" in frame and frame["cache"].eq("cold").any():
        frame = frame[frame["cache"].eq("cold")]  # cold L2 is the label; warm rows are a recorded variant
    source = frame["source"].fillna("kernelcast") if "source" in frame else "kernelcast"
    return frame.assign(source=source)


def outside_path(op: str, outside: Path) -> Path:
    """Where the aiconfigurator import of ``op`` is cached (written by `kernelcast import aiconfigurator`)."""
    return Path(outside) / f"aiconfigurator_{op}.parquet"


def _outside_rows(op: str, outside: Path) -> pd.DataFrame:
    path = outside_path(op, outside)
    if not path.exists():
        raise ValueError(
            f"{path} is missing: import aiconfigurator-core's tables first with "
            f"`kernelcast import aiconfigurator --ops {op}` (pip extra 'outside'); "
            "`kernelcast train` and `evaluate` do it for you"
        )
    return pd.read_parquet(path)


def load_rows(
    op: str,
    sources=SOURCES,
    datasets: Path | None = None,
    outside: Path | None = None,
    roles=("train",),
    report=sys.stderr,
    extra: tuple[str, ...] = (),
) -> pd.DataFrame:
    """Rows of ``op`` with status ok, a positive latency and a valid description: description fields
    (canonical, as ``parse_desc`` gives them) + ``KEEP`` columns + ``extra`` ones (e.g. ``kernel_names``; empty
    where a file lacks them). Our rows come from the card's files of ``roles``; rows serving would reject are dropped
    and counted by reason on ``report``."""
    if op not in op_names():
        raise ValueError(f"op must be one of {', '.join(op_names())}; got {op!r}")
    unknown = sorted(set(sources) - set(SOURCES))
    if unknown:
        raise ValueError(f"sources must be among {', '.join(SOURCES)}; got {unknown[0]!r}")
    datasets = Path(datasets or DATASETS)
    parts = []
    if "kernelcast" in sources and (own := _own_rows(op, datasets, roles)) is not None:
        parts.append(own)
    if "aiconfigurator" in sources and "train" in roles:
        parts.append(_outside_rows(op, Path(outside or datasets / "outside")).assign(role="train"))
    if not parts:
        raise ValueError(
            f"no rows for op {op!r} from sources {', '.join(sources)} under {datasets} (roles {', '.join(roles)})"
        )
    columns = [c for c in op_fields(op)] + list(KEEP) + [c for c in extra if c not in KEEP]
    frame = pd.concat([_with_columns(p, columns, op) for p in parts], ignore_index=True)
    # a text field no file has (fused kernels' config) reindexes to float NaN, which validation reads as a bad value;
    # as object it is absent, as it is after a concat with the outside rows
    if "config" in frame:
        frame["config"] = frame["config"].astype(object)
    status_ok = (
        pd.concat([p["status"] if "status" in p else pd.Series("ok", index=p.index) for p in parts], ignore_index=True)
        .eq("ok")
        .to_numpy()
    )
    keep = status_ok & (frame["latency_us"].to_numpy(dtype=np.float64) > 0)
    return valid_rows(frame.loc[keep].reset_index(drop=True), op, report, extra=extra)


def _with_columns(part: pd.DataFrame, columns: list[str], op: str) -> pd.DataFrame:
    """``part`` reindexed to ``columns``, a description field it predates holding its default (``_field_defaults``)."""
    return _add_missing_fields(part.reindex(columns=columns), part.columns, _field_defaults(op))


def valid_rows(
    frame: pd.DataFrame, op: str, report=sys.stderr, defaults: bool = False, extra: tuple[str, ...] = ()
) -> pd.DataFrame:
    """The rows whose descriptions serving accepts, in canonical form (what serving computes features from);
    the others are dropped and counted by reason. ``defaults``: also the fields the frame lacks, at their defaults
    (a field added after a file was written; off for training, whose shape hashes read the columns a frame has).
    ``extra``: columns besides ``KEEP`` that pass through unvalidated."""
    by_op, bad = validate_frame(frame, extra_columns=(*KEEP, *extra), strict=False)
    if bad and report is not None:
        reasons = Counter(r.split(": ", 1)[-1].split("; got")[0] for r in bad.values())
        lines = "\n".join(f"  {n:>7,}  {reason}" for reason, n in reasons.most_common(8))
        print(
            f"{op}: skipped {len(bad):,} of {len(frame):,} rows that are not valid descriptions:\n{lines}", file=report
        )
    pos, cols = by_op.get(op, (np.zeros(0, dtype=np.int64), {}))
    out = frame.iloc[pos].reset_index(drop=True)
    for name, values in cols.items():
        if name in out or (defaults and name in get_op(op).fields):
            out[name] = values
    return out


def _canonical_columns(frame: pd.DataFrame, columns, op: str) -> pd.DataFrame:
    """Integer and bool fields (and labels) as float64, text fields as text ('' for missing): 4096, 4096.0 and
    int32 hash alike, and an all-empty config column hashes as the text it is."""
    fields = get_op(op).fields
    out = {}
    for c in columns:
        kind = getattr(fields.get(c), "python_type", None)
        numeric = (
            kind in (int, bool)
            if c in fields or c in ("gpu", "dtype", "backend", "config")
            else pd.api.types.infer_dtype(frame[c], skipna=True)
            in ("boolean", "integer", "floating", "mixed-integer-float")
        )
        if numeric:
            out[c] = pd.to_numeric(frame[c].astype(object), errors="raise").astype(np.float64)
        else:
            out[c] = frame[c].astype(object).where(frame[c].notna(), "").astype(str)
    return pd.DataFrame(out)


def shape_hash(frame: pd.DataFrame, op: str, config: bool = True) -> np.ndarray:
    """uint64 hash of a row's shape: the description without gpu and backend (stable across runs); without its
    config too when ``config`` is false."""
    drop = ("op", "gpu", "backend") if config else ("op", "gpu", "backend", "config")
    fields = [f for f in op_fields(op) if f not in drop and f in frame]
    return pd.util.hash_pandas_object(_canonical_columns(frame, fields, op), index=False).to_numpy(dtype=np.uint64)


def fingerprint(frame: pd.DataFrame, op: str) -> str:
    """sha256 (16 hex) of the rows a model is trained on: descriptions, latency and source, in order."""
    fields = [f for f in op_fields(op) if f in frame] + ["latency_us", "source"]
    hashes = pd.util.hash_pandas_object(_canonical_columns(frame, fields, op), index=False).to_numpy(dtype=np.uint64)
    return hashlib.sha256(hashes.tobytes()).hexdigest()[:16]


def _water_fill(sizes: np.ndarray, budget: int) -> np.ndarray:
    """Per-group take: min(size, cap) with the cap chosen so the takes sum to ``budget``."""
    order = np.sort(sizes)
    used, left = 0, len(order)
    for size in order:
        cap = (budget - used) / left
        if size > cap:
            return np.minimum(sizes, int(cap))
        used, left = used + size, left - 1
    return sizes


def subsample(frame: pd.DataFrame, max_rows: int, seed: int = 0) -> pd.DataFrame:
    """Every row of our own measurements plus at most ``max_rows`` outside rows: small (gpu, backend,
    source) groups whole, large ones capped alike (water-filling evens out the large outside tables).

    Our rows are kept whole because the shipped models serve them: capped like an outside table (to
    ~7k of 55k cuBLAS rows), the shipped GEMM model served our held-out rows measurably worse
    (benchmarks/RESULTS.md).
    """
    own = frame["source"].eq(OWN_SOURCE).to_numpy()
    if (~own).sum() <= max_rows:
        return frame
    outside = np.flatnonzero(~own)
    groups = list(frame.iloc[outside].groupby(["gpu", "backend", "source"], sort=True, observed=True).indices.values())
    takes = _water_fill(np.asarray([len(g) for g in groups]), max_rows)
    rng = np.random.default_rng(seed)
    picked = [outside[rng.choice(idx, size=take, replace=False)] for idx, take in zip(groups, takes)]
    return frame.iloc[np.sort(np.concatenate([np.flatnonzero(own), *picked]))].reset_index(drop=True)
