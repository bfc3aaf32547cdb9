"""Measured-row parquet files: the schema, atomic locked append, per-writer files, reading, and provenance."""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import importlib.metadata
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import tomllib

from kernelcast.collect.api import LABEL_COLUMNS, PROVENANCE_COLUMNS
from kernelcast.features.desc import op_fields
from kernelcast.features.ops import get_op

SCHEMA_VERSION = "1"
SCHEMA_KEY = b"kernelcast.schema_version"
NCU_PREFIX = "ncu__"
_FILENAME_RE = re.compile(r"^(?P<source>[^_]+)_(?P<gpu>.+)_(?P<date>\d{8})_(?P<shard>[A-Za-z0-9]+)\.parquet$")
#: a writer's file: the shard tag, then ``w<writer token>p<part>`` (one writer per file, ever)
_WRITER_RE = re.compile(r"^(?P<tag>s\d{3}of\d{3})w[0-9a-f]+p\d+$")
ROLL_ROWS = 1024  # a writer starts a new file past this many rows (each flush rewrites one file)
#: columns after the description, labels, ncu metrics and provenance
#: ``model``: the real model whose layer a shape is (from the sweep's tags), null for grid/random shapes
ROW_ID_COLUMNS = ("desc_key", "plan_index", "repeat_of", "model")

#: op-specific columns after the common ones (collectives: what the NCCL job records per case)
OP_EXTRA_COLUMNS = {
    "collective": {
        "host_loop_us": pa.float64(),
        "graph_calls": pa.int64(),
        "nccl_model_us": pa.float64(),
        "nccl_algo": pa.string(),
        "nccl_proto": pa.string(),
        "nccl_channels": pa.int64(),
        "topology": pa.string(),
        "nccl_env": pa.string(),
    }
}
_LABEL_TYPES = {
    "latency_us": pa.float64(),
    "p10_us": pa.float64(),
    "p90_us": pa.float64(),
    "repeats": pa.int64(),
    "kernel_count": pa.int64(),
    "sm_clock_hz": pa.float64(),
}
_ROW_ID_TYPES = {"desc_key": pa.string(), "plan_index": pa.int64(), "repeat_of": pa.int64(), "model": pa.string()}


def _desc_type(op: str, name: str) -> pa.DataType:
    if name == "op":
        return pa.string()
    kind = getattr(get_op(op).fields.get(name), "python_type", str)
    return {int: pa.int64(), bool: pa.bool_()}.get(kind, pa.string())


def row_schema(op: str, ncu_columns: Iterable[str] = (), extra_columns: Iterable[str] = ()) -> pa.Schema:
    """The arrow schema of one op family's rows; optional columns last: ``ncu__`` metrics (float64,
    sorted), then the op's own ``OP_EXTRA_COLUMNS`` named in ``extra_columns`` (in their order)."""
    get_op(op)  # an unknown op names the known ones
    fields = [pa.field(n, _desc_type(op, n)) for n in op_fields(op)]
    fields += [pa.field(n, _LABEL_TYPES.get(n, pa.string())) for n in LABEL_COLUMNS]
    fields += [pa.field(n, pa.float64()) for n in sorted(set(ncu_columns))]
    fields += [pa.field(n, pa.string()) for n in PROVENANCE_COLUMNS]
    fields += [pa.field(n, _ROW_ID_TYPES[n]) for n in ROW_ID_COLUMNS]
    extra = set(extra_columns)
    fields += [pa.field(n, t) for n, t in OP_EXTRA_COLUMNS.get(op, {}).items() if n in extra]
    return pa.schema(fields)


def optional_columns(op: str, names: Iterable[str]) -> tuple[set[str], set[str]]:
    """(ncu metric columns, the op's extra columns) among ``names``."""
    names = set(names)
    return {n for n in names if n.startswith(NCU_PREFIX)}, names & set(OP_EXTRA_COLUMNS.get(op, {}))


def base_columns(names: Iterable[str]) -> list[str]:
    """Column names without the optional ones (``ncu__`` extras, op extras): what must match on append."""
    extras = {n for cols in OP_EXTRA_COLUMNS.values() for n in cols}
    return [n for n in names if not n.startswith(NCU_PREFIX) and n not in extras]


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def dataset_filename(source: str, gpu: str, date: str, shard: str) -> str:
    """``<source>_<gpu>_<yyyymmdd>_<shard>.parquet`` (gpu = canonical name, shard like s003of016)."""
    return f"{source}_{gpu}_{date}_{shard}.parquet"


def parse_dataset_filename(name: str) -> dict[str, str] | None:
    """Inverse of ``dataset_filename``: source, gpu, date, shard; None for another name."""
    match = _FILENAME_RE.match(name)
    return match.groupdict() if match else None


def shard_of(shard: str) -> str:
    """The shard tag of a file's shard part: ``s000of002w1a2b3cp0`` (a writer's file) -> ``s000of002``."""
    match = _WRITER_RE.match(shard)
    return match["tag"] if match else shard


class LockBusy(RuntimeError):
    """Raised by ``file_lock(..., wait_s=...)`` when another process holds the lock past the wait."""


@contextlib.contextmanager
def file_lock(path: str | os.PathLike, wait_s: float | None = None) -> Iterator[Path]:
    """Hold an exclusive ``fcntl.flock`` on ``path`` (a folder, or a file created if missing) for the block.

    ``wait_s=None`` waits as long as it takes; otherwise ``LockBusy`` after ``wait_s`` seconds.
    The kernel drops the lock when its holder dies, however it dies: no stale locks.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY) if path.is_dir() else os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
                break
            except OSError as exc:
                if exc.errno == errno.ENOLCK:
                    raise OSError(
                        f"{path}: this filesystem refuses file locks (ENOLCK); write to a local or lock-capable folder"
                    ) from None
                if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                    raise LockBusy(f"{path} is held by another process") from None
                time.sleep(0.05)
        yield path
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on success fsync it and ``os.replace`` it onto ``path``.

    On any failure the temp file is removed and ``path`` is left as it was. The temp name is
    unique per call (pid, thread, random), so concurrent writers never share a temp file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def table_from_rows(rows: Sequence[Mapping[str, Any]], schema: pa.Schema, where: str = "rows") -> pa.Table:
    """Rows (dicts) -> table in ``schema``; a key the schema lacks is an error naming it."""
    names = set(schema.names)
    for i, row in enumerate(rows):
        unknown = sorted(set(row) - names)
        if unknown:
            raise ValueError(
                f"{where}: row {i} has column {unknown[0]!r} that the schema lacks; "
                f"allowed: description fields, {', '.join(LABEL_COLUMNS)}, {NCU_PREFIX}<metric>, "
                f"{', '.join(PROVENANCE_COLUMNS)}, {', '.join(ROW_ID_COLUMNS)}"
            )
    try:
        return pa.Table.from_pylist([dict(r) for r in rows], schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(f"{where}: a value does not fit the row schema: {exc}") from None


def check_row(op: str, row: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` when one row does not fit ``op``'s schema (unknown column, wrong type)."""
    table_from_rows([row], row_schema(op, *optional_columns(op, row)))


def write_atomic(table: pa.Table, path: str | os.PathLike, **options) -> None:
    """Write parquet to a temp file in the same folder, then ``os.replace`` it onto ``path``; ``options`` go to
    ``pyarrow.parquet.write_table`` (e.g. compression)."""
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **options)


def read_parquet(path: str | os.PathLike, columns: Sequence[str] | None = None) -> pa.Table:
    """One parquet file through ONE open handle: a concurrent atomic replace cannot mix two versions."""
    with open(path, "rb") as fh:
        return pq.read_table(fh, columns=None if columns is None else list(columns))


def read_schema(path: str | os.PathLike) -> pa.Schema:
    """A parquet file's schema (with its metadata), through one open handle."""
    with open(path, "rb") as fh:
        return pq.read_schema(fh)


def file_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The ``kernelcast.*`` key/values of a parquet file's metadata, decoded."""
    meta = read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if k.startswith(b"kernelcast.")}


def _check_existing(table: pa.Table, expected: pa.Schema, path: Path) -> None:
    version = (table.schema.metadata or {}).get(SCHEMA_KEY, b"?").decode()
    if version != SCHEMA_VERSION:
        raise ValueError(
            f"{path}: schema version {version!r} in the file, this code writes "
            f"{SCHEMA_VERSION!r}; write to a new folder or migrate the file"
        )
    have, want = base_columns(table.column_names), base_columns(expected.names)
    if have != want:
        missing, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
        raise ValueError(
            f"{path}: the file's columns differ from this run's (missing in file: "
            f"{missing or 'none'}; only in file: {extra or 'none'}; order differs: "
            f"{not missing and not extra}); refusing to append misaligned rows"
        )


def append_rows(
    path: str | os.PathLike, op: str, rows: Sequence[Mapping[str, Any]], metadata: Mapping[str, str] | None = None
) -> int:
    """Append rows of one op to ``path`` by an atomic rewrite (old + new); returns the row count.

    ``metadata`` keys (``kernelcast.<name>``) are stored in the file with the schema version.
    Concurrent appenders are serialized by a lock on the file's folder, so none loses another's
    rows; readers see the old file or the new one, never a half-written one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path.parent):
        return _append_locked(path, op, rows, metadata)


def _append_locked(path: Path, op: str, rows: Sequence[Mapping[str, Any]], metadata: Mapping[str, str] | None) -> int:
    ncu, extra = optional_columns(op, {k for r in rows for k in r})
    old = read_parquet(path) if path.exists() else None
    if old is not None:
        _check_existing(old, row_schema(op), path)
        old_ncu, old_extra = optional_columns(op, old.column_names)
        ncu, extra = ncu | old_ncu, extra | old_extra
    schema = row_schema(op, ncu, extra)
    parts = [table_from_rows(rows, schema, str(path))]
    if old is not None:
        nulls = {n: pa.nulls(old.num_rows, schema.field(n).type) for n in schema.names if n not in old.column_names}
        old = old.replace_schema_metadata(None)
        for name, col in nulls.items():
            old = old.append_column(name, col)
        parts.insert(0, old.select(schema.names).cast(schema))
    meta = {**(file_metadata(path) if old is not None else {}), **(metadata or {}), SCHEMA_KEY.decode(): SCHEMA_VERSION}
    table = pa.concat_tables(parts).replace_schema_metadata(meta)
    write_atomic(table, path)
    return table.num_rows


class RowWriter:
    """One writer's files: rows go to ``<out>/<op>/<source>_<gpu>_<date>_<tag>w<token>p<part>.parquet``.

    No other process ever writes these files (the token is random per writer), so two runs of one
    shard never clobber each other and no lock is needed. Each ``write`` rewrites the current part
    atomically from the rows held in memory (no re-read); past ``roll_rows`` rows a new part
    starts, so a flush costs at most one small file.
    """

    def __init__(
        self,
        out_dir: str | os.PathLike,
        tag: str,
        metadata: Mapping[str, str] | None = None,
        roll_rows: int = ROLL_ROWS,
    ):
        self.out_dir, self.tag, self.roll_rows = Path(out_dir), tag, roll_rows
        self.meta = {**dict(metadata or {}), SCHEMA_KEY.decode(): SCHEMA_VERSION}
        self.token = secrets.token_hex(3)
        self.current: dict[tuple[str, str, str], tuple[Path, list]] = {}  # (op, source, gpu) -> (file, rows)
        self.parts = 0
        self.paths: list[Path] = []

    def _part(self, op: str, source: str, gpu: str, adding: int) -> tuple[Path, list]:
        path, held = self.current.get((op, source, gpu), (None, []))
        if path is None or len(held) + adding > self.roll_rows:
            date = utc_now()[:10].replace("-", "")
            path = self.out_dir / op / dataset_filename(source, gpu, date, f"{self.tag}w{self.token}p{self.parts}")
            self.parts, held = self.parts + 1, []
            self.paths.append(path)
            self.current[(op, source, gpu)] = (path, held)
        return path, held

    def write(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Persist rows now (each row names its ``op``, ``source`` and canonical ``gpu``)."""
        groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
        for row in rows:
            groups.setdefault((row["op"], row["source"], row["gpu"]), []).append(row)
        for (op, source, gpu), group in groups.items():
            path, held = self._part(op, source, gpu, len(group))
            schema = row_schema(op, *optional_columns(op, {k for r in held + group for k in r}))
            table = table_from_rows(held + group, schema, str(path))
            write_atomic(table.replace_schema_metadata(self.meta), path)
            held.extend(group)


def parquet_files(roots: Iterable[str | os.PathLike]) -> list[Path]:
    """Every ``*.parquet`` under the given files/folders (recursive), sorted, temp files excluded."""
    out: list[Path] = []
    for root in roots:
        root = Path(root)
        if root.is_file():
            out.append(root)
        elif root.is_dir():
            out.extend(p for p in root.rglob("*.parquet") if not p.name.startswith("."))
        else:
            raise ValueError(f"dataset path {str(root)!r} does not exist")
    return sorted(set(out))


def read_table(files: Sequence[str | os.PathLike], columns: Sequence[str] | None = None) -> pa.Table:
    """Read parquet files together, schemas unified (ncu extras may differ; a column a file lacks is null there).

    Each file is read through one open handle (``read_parquet``), so a file replaced meanwhile is
    read whole, old or new.
    """
    if not files:
        return pa.table({})
    tables = []
    for f in files:
        names = read_schema(f).names
        table = read_parquet(f, None if columns is None else [c for c in columns if c in names])
        tables.append(table.replace_schema_metadata(None))
    table = pa.concat_tables(tables, promote_options="permissive")
    if columns is not None:
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise ValueError(f"column {missing[0]!r} is in none of the {len(files)} dataset files")
        table = table.select(list(columns))
    return table


def plain_key(key: str) -> str:
    """A description key without a zero ``warm_bytes`` (files written before the field existed lack it)."""
    d = json.loads(key)
    if d.get("warm_bytes") == 0:
        del d["warm_bytes"]
    return json.dumps(d, sort_keys=True)


def read_card(datasets: str | os.PathLike) -> list[dict] | None:
    """The ``[[file]]`` entries of ``datasets/files.toml``; None for a folder without one (a farm's night, a test)."""
    path = Path(datasets) / "files.toml"
    return tomllib.loads(path.read_text())["file"] if path.exists() else None


def card_keys(datasets: str | os.PathLike, op: str, role: str) -> set[str]:
    """The descriptions (``plain_key``) of ``op``'s files of ``role`` ("train" or "test") in ``datasets/files.toml``:
    what a new file of the other role must not hold (nothing, without a card)."""
    datasets = Path(datasets)
    card = read_card(datasets) or []
    keys: set[str] = set()
    for f in card:
        if f["role"] == role and f["path"].startswith(f"{op}/"):
            keys |= {plain_key(k) for k in read_parquet(datasets / f["path"], ["desc_key"])["desc_key"].to_pylist()}
    return keys


def card_pass_file(card: list[dict], gpu: str, sweep: str, seed: int) -> str | None:
    """The first file of ``card`` (``read_card``) measured on ``gpu`` (canonical name) by ``sweep`` at ``seed``, or
    None: a pass already on the card draws the same descriptions again (files listing no seeds match nothing)."""
    for f in card:
        match = _FILENAME_RE.match(Path(f["path"]).name)
        if match and match["gpu"] == gpu and sweep in f.get("sweeps", ()) and seed in f.get("seeds", ()):
            return f["path"]
    return None


def read_dataset(root: str | os.PathLike, op: str | None = None):
    """All rows under ``root`` (``datasets/`` or one ``datasets/<op>/``) as a pandas DataFrame."""
    base = Path(root) / op if op else Path(root)
    return read_table(parquet_files([base])).to_pandas()


def query(cmd: list[str]) -> str | None:
    """The first line a command prints, or None where it cannot run or fails."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out else None


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _torch_facts() -> dict[str, str | None]:
    """GPU name, CUDA (or HIP) and NCCL versions as torch sees them (imports torch)."""
    out: dict[str, str | None] = {"gpu_name": None, "cuda": None, "nccl": None}
    try:
        import torch
    except ImportError:
        return out
    hip = getattr(torch.version, "hip", None)
    out["cuda"] = torch.version.cuda or (f"hip-{hip}" if hip else None)
    if torch.cuda.is_available():
        out["gpu_name"] = torch.cuda.get_device_name(0)
        try:
            out["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        except (AttributeError, RuntimeError):
            pass
    return out


def provenance(source: str, method: str) -> dict[str, str | None]:
    """Where a row comes from: GPU, driver, CUDA/torch/triton/NCCL versions, code revision, host, time.

    ``KERNELCAST_GIT_REV`` names the revision where the tree travels without ``.git`` (a lent GPU host).
    torch is imported only on a GPU host (an NVIDIA driver or /dev/kfd) or when already loaded;
    elsewhere its CUDA facts are None and its version comes from the package metadata.
    """
    driver = query(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    gpu_host = driver is not None or Path("/dev/kfd").exists() or "torch" in sys.modules
    facts = _torch_facts() if gpu_host else {"gpu_name": None, "cuda": None, "nccl": None}
    repo = Path(__file__).resolve().parent.parent
    return {
        "source": source,
        **facts,
        "driver": driver,
        "torch": _dist_version("torch"),
        "triton": _dist_version("triton"),
        "collector_version": _dist_version("kernelcast"),
        "git_rev": os.environ.get("KERNELCAST_GIT_REV") or query(["git", "-C", str(repo), "rev-parse", "HEAD"]),
        "host": socket.gethostname(),
        "time": utc_now(),
        "method": method,
    }
