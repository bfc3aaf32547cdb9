"""Importer of aiconfigurator-core's measured perf tables into kernelcast rows (``source="aiconfigurator"``).

Every imported row: ``backend`` = the framework folder (trtllm, vllm, sglang; nccl_perf -> nccl),
``gpu`` = the system folder's GPU, ``gpu_name`` = the table's device string, ``latency_us`` =
latency (ms) × 1000, ``timer`` "cuda_graph" ("nccl-tests" for nccl_perf), ``cache`` "warm" (the
collector replays one CUDA graph on the same inputs), ``status`` "ok", plus the extra columns
``kernel_source`` and ``framework_version``; unknown provenance (driver, CUDA, host, time) is None.

| aiconfigurator table | kernelcast description | choices and what is skipped |
|---|---|---|
| gemm_perf | gemm m, n, k, batch 1, layout "nt" (F.linear), out_dtype bf16 | bfloat16->bf16, float16->fp16, fp8->fp8_e4m3 (per-tensor scales; the activation quantize is inside their timing), fp8_block, nvfp4; int8_wo, int4_wo, sq skipped |
| context_attention_perf | attention batch, heads_q=num_heads, heads_kv=num_key_value_heads, seq_q=seq_kv=isl, head_dim, causal True | dtype when attn_dtype and kv_cache_dtype agree (bf16/bf16, fp8/fp8->fp8_e4m3), mixed pairs skipped; window_size > 0 (sliding window), beam_width != 1, step != 0 skipped. TRT-LLM's op also applies RoPE and appends K/V to its paged cache |
| generation_attention_perf | attention seq_q = isl (= 1), seq_kv = isl + step, causal False | the collector decodes one token against ``step`` cached tokens (collector/trtllm/collect_attn.py: step = input_len), so the query sees step + 1 keys; with one query a causal mask is a no-op. dtype rules as context |
| moe_perf | moe tokens=num_tokens, hidden=hidden_size, ffn=inter_size/moe_tp_size, experts=num_experts, top_k=topk, distribution as given (balanced, power_law_1.01, power_law_1.2; their sampler, not ours), gated unless kernel_source says "nongated" | only moe_ep_size == 1: with EP > 1 a rank computes only the assignments to its experts/ep experts, which one single-GPU description cannot state; ffn not divisible by moe_tp_size skipped; bfloat16->bf16, fp8->fp8_e4m3, fp8_block, nvfp4; mxfp4/int4/w4afp8 variants skipped. Their timing includes the top-k routing kernel (the router GEMM is excluded on both sides) |
| nccl_perf | collective all_gather, all_reduce, reduce_scatter, alltoall->all_to_all; bytes = message_size × element size; ranks = ranks_per_node = num_gpus (one node); in_place False | the collector runs nccl-tests with -b = -e = size bytes and stores message_size = size // element size, so bytes is nccl-tests' ``size`` (all_gather: total output, reduce_scatter: total input, as in our schema); latency is the out-of-place time; half->fp16, int8->int8 |

Which tables: per (system, table, framework) one version, the ``collected`` one (collection_meta.yaml)
if any, else the newest; a table named in its folder's reuse.yaml is a copy of another version, not a
measurement, and is skipped; systems missing from kernelcast's GPU spec database (b60) are skipped.
The same description measured by several kernel_sources in one table (e.g. vLLM fp8_block DeepGEMM,
FlashInfer, CUTLASS) keeps the fastest, as a framework's dispatcher would; the others are counted.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from kernelcast.collect.api import LABEL_COLUMNS, PROVENANCE_COLUMNS
from kernelcast.collect.dataset import ROW_ID_COLUMNS, SCHEMA_KEY, SCHEMA_VERSION, row_schema, write_atomic
from kernelcast.features.desc import op_fields, row_keys
from kernelcast.features.fields import DTYPE_BYTES
from kernelcast.features.gpu import resolve_gpu_name
from kernelcast.features.ops import get_op
from kernelcast.features.validate import validate_frame

SOURCE = "aiconfigurator"
TABLE_OPS = {
    "gemm_perf": "gemm",
    "context_attention_perf": "attention",
    "generation_attention_perf": "attention",
    "moe_perf": "moe",
    "nccl_perf": "collective",
}
EXTRA_COLUMNS = ("kernel_source", "framework_version")
GEMM_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8_e4m3", "fp8_block": "fp8_block", "nvfp4": "nvfp4"}
ATTN_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8_e4m3"}
MOE_DTYPES = {"bfloat16": "bf16", "fp8": "fp8_e4m3", "fp8_block": "fp8_block", "nvfp4": "nvfp4"}
NCCL_DTYPES = {"half": "fp16", "int8": "int8"}
COLLECTIVE_NAMES = {
    "all_gather": "all_gather",
    "all_reduce": "all_reduce",
    "reduce_scatter": "reduce_scatter",
    "alltoall": "all_to_all",
}


@dataclass(frozen=True)
class TableFile:
    """One aiconfigurator parquet table and what its folder says about it."""

    system: str
    family: str
    framework: str
    version: str
    table: str
    path: Path
    provenance: str | None
    reused: bool

    @property
    def op(self) -> str:
        return TABLE_OPS[self.table]

    @property
    def where(self) -> str:
        return f"{self.system}/{self.family}/{self.framework}/{self.version}/{self.table}"


def package_version() -> str:
    return importlib.metadata.version("aiconfigurator-core")


def data_root() -> Path:
    """``aiconfigurator_core/systems/data`` of the installed package (not imported: only located)."""
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "aiconfigurator-core is not installed: pip install 'kernelcast[outside]' (aiconfigurator-core==0.12.0)"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "systems" / "data"


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def discover(root: Path) -> list[TableFile]:
    """Every mapped table under ``root`` (<system>/<family>/<framework>/<version>/<table>.parquet)."""
    out = []
    for path in sorted(root.glob("*/*/*/*/*.parquet")):
        if path.stem not in TABLE_OPS:
            continue
        system, family, framework, version = path.parts[-5:-1]
        meta = re.search(r"^provenance:\s*(\w+)", _text(path.parent / "collection_meta.yaml"), re.M)
        reused = re.findall(r"^\s*-\s*table:\s*(\S+)", _text(path.parent / "reuse.yaml"), re.M)
        out.append(
            TableFile(
                system,
                family,
                framework,
                version,
                path.stem,
                path,
                meta.group(1) if meta else None,
                path.stem in reused,
            )
        )
    return out


def _version_key(version: str) -> tuple:
    """Orders 1.3.0rc20 < 1.3.0 < 1.3.1 (letters sort below numbers; padded so releases beat rcs)."""
    parts = [(1, int(p)) if p.isdigit() else (0, p) for p in re.findall(r"\d+|[A-Za-z]+", version)]
    return tuple(parts + [(1, 0)] * (8 - len(parts)))


def _gpu(system: str) -> str | None:
    try:
        return resolve_gpu_name(system)
    except ValueError:
        return None


def choose(files: list[TableFile]) -> tuple[list[TableFile], list[tuple[TableFile, str]]]:
    """One version per (system, table, framework): collected first, then newest; the rest with reasons."""
    skipped: list[tuple[TableFile, str]] = []
    groups: dict[tuple, list[TableFile]] = defaultdict(list)
    for f in files:
        if f.reused:
            skipped.append((f, "copy of another version (reuse.yaml)"))
        elif _gpu(f.system) is None:
            skipped.append((f, f"system {f.system} not in the GPU spec database"))
        else:
            framework = "nccl" if f.table == "nccl_perf" else f.framework
            groups[(f.system, f.table, framework)].append(f)
    chosen = []
    for group in groups.values():
        group.sort(key=lambda f: (f.provenance == "collected", _version_key(f.version)), reverse=True)
        chosen.append(group[0])
        skipped += [(f, "another version of the same table chosen") for f in group[1:]]
    return sorted(chosen, key=lambda f: f.where), skipped


def _drop(frame: pd.DataFrame, mask, reason: str, skips: Counter) -> pd.DataFrame:
    mask = np.asarray(mask, dtype=bool)
    if mask.any():
        skips[reason] += int(mask.sum())
    return frame.loc[~mask]


def _map_dtype(frame: pd.DataFrame, column: str, mapping: dict, skips: Counter) -> pd.DataFrame:
    frame = frame.assign(dtype=frame[column].map(mapping))
    for value, count in frame.loc[frame["dtype"].isna(), column].value_counts().items():
        skips[f"{column} {value!r} has no kernelcast dtype"] += int(count)
    return frame.loc[frame["dtype"].notna()]


def _gemm(raw: pd.DataFrame, f: TableFile, skips: Counter) -> pd.DataFrame:
    raw = _map_dtype(raw, "gemm_dtype", GEMM_DTYPES, skips)
    return raw.assign(batch=1, layout="nt", out_dtype="bf16")


def _attention(raw: pd.DataFrame, f: TableFile, skips: Counter) -> pd.DataFrame:
    window = raw["window_size"] if "window_size" in raw else pd.Series(0, index=raw.index)
    raw = _drop(raw, window.to_numpy() > 0, "sliding-window attention (no window field)", skips)
    raw = _drop(raw, raw["beam_width"] != 1, "beam_width != 1", skips)
    kv = raw["kv_cache_dtype"].map(ATTN_DTYPES)
    raw = _drop(
        raw,
        (raw["attn_dtype"].map(ATTN_DTYPES) != kv).fillna(True),
        "attention and KV-cache dtypes differ (or unmapped)",
        skips,
    )
    raw = _map_dtype(raw, "kv_cache_dtype", ATTN_DTYPES, skips)
    decode = f.table == "generation_attention_perf"
    if not decode:
        raw = _drop(raw, raw["step"] != 0, "context attention with step != 0", skips)
    return raw.assign(
        batch=raw["batch_size"],
        heads_q=raw["num_heads"],
        heads_kv=raw["num_key_value_heads"],
        seq_q=raw["isl"],
        seq_kv=raw["isl"] + (raw["step"] if decode else 0),
        causal=not decode,
    )


def _moe(raw: pd.DataFrame, f: TableFile, skips: Counter) -> pd.DataFrame:
    raw = _drop(raw, raw["moe_ep_size"] != 1, "expert-parallel shard (moe_ep_size > 1)", skips)
    raw = _drop(raw, raw["inter_size"] % raw["moe_tp_size"] != 0, "inter_size not divisible by moe_tp_size", skips)
    raw = _map_dtype(raw, "moe_dtype", MOE_DTYPES, skips)
    gated = ~raw["kernel_source"].str.contains("nongated", regex=False).fillna(False).astype(bool)
    return raw.assign(
        tokens=raw["num_tokens"],
        hidden=raw["hidden_size"],
        ffn=raw["inter_size"] // raw["moe_tp_size"],
        experts=raw["num_experts"],
        top_k=raw["topk"],
        gated=gated,
    )


def _collective(raw: pd.DataFrame, f: TableFile, skips: Counter) -> pd.DataFrame:
    raw = _map_dtype(raw, "nccl_dtype", NCCL_DTYPES, skips)
    raw = raw.assign(collective=raw["op_name"].map(COLLECTIVE_NAMES))
    raw = _drop(raw, raw["collective"].isna(), "collective not in kernelcast's list", skips)
    elem = raw["dtype"].map(DTYPE_BYTES).astype(np.int64)
    return raw.assign(
        bytes=raw["message_size"] * elem,
        ranks=raw["num_gpus"],
        ranks_per_node=raw["num_gpus"],
        in_place=False,
        backend="nccl",
    )


_MAPPERS = {"gemm": _gemm, "attention": _attention, "moe": _moe, "collective": _collective}


def _desc_fields(op: str) -> list[str]:
    return [n for n in op_fields(op) if n not in ("op", "gpu", "config")]


def _default(op: str, name: str):
    default = get_op(op).fields[name].default
    if default is None:
        raise KeyError(f"aiconfigurator's {op} tables hold no {name!r} and the field has no default")
    return default


def map_table(f: TableFile, skips: Counter) -> pd.DataFrame:
    """One table's rows as description columns + latency_us + extras (not yet validated)."""
    raw = pd.read_parquet(f.path)
    raw = _drop(raw, ~(raw["latency"] > 0), "latency missing or not positive", skips)
    out = _MAPPERS[f.op](raw, f, skips)
    if "backend" not in out:
        out = out.assign(backend=f.framework)
    device = out["device"] if "device" in out else None
    return pd.DataFrame(
        {
            # a field its tables do not hold (attention's ``mask``) takes the field's default
            **{name: out[name].to_numpy() if name in out else _default(f.op, name) for name in _desc_fields(f.op)},
            "gpu": _gpu(f.system),
            "latency_us": out["latency"].to_numpy() * 1000.0,
            "kernel_source": out["kernel_source"].to_numpy(),
            "framework_version": f.version,
            "gpu_name": None if device is None else device.to_numpy(),
            # aiconfigurator's own methodology: its NCCL tables are nccl-tests runs, every other table CUDA graphs
            "nccl": f.version if f.op == "collective" else None,
            "timer": "nccl-tests" if f.op == "collective" else "cuda_graph",
            "method": f"aiconfigurator-core {f.where}.parquet ({f.provenance or 'no provenance'})",
        }
    )


def _check_shapes(frame: pd.DataFrame, op: str, skips: Counter) -> pd.DataFrame:
    """Validate each unique (gpu, shape) as serving does (column-wise); attach ``desc_key``; count invalid rows."""
    fields = ["gpu"] + _desc_fields(op)
    uniq = frame[fields].drop_duplicates().reset_index(drop=True)
    by_op, bad = validate_frame(uniq.assign(op=op), strict=False)
    keys = np.empty(len(uniq), dtype=object)
    for i, reason in bad.items():
        keys[i] = "invalid: " + reason.split(": ", 1)[-1].split(";")[0]
    if op in by_op:
        pos, cols = by_op[op]
        keys[pos] = row_keys(op, cols)
    frame = frame.merge(uniq.assign(desc_key=keys.astype(str)), on=fields, how="left", validate="many_to_one")
    bad = frame["desc_key"].str.startswith("invalid: ")
    for reason, count in frame.loc[bad, "desc_key"].value_counts().items():
        skips[reason] += int(count)
    return frame.loc[~bad.to_numpy()]


def _finish(frame: pd.DataFrame, op: str, skips: Counter) -> pd.DataFrame:
    """Keep the fastest kernel per description; add the label and provenance columns in schema order."""
    frame = frame.sort_values(["desc_key", "latency_us"], kind="stable")
    dup = frame.duplicated("desc_key").to_numpy()
    frame = _drop(frame, dup, "same description, slower kernel_source (fastest kept)", skips)
    fill = {
        "op": op,
        "config": None,
        "p10_us": np.nan,
        "p90_us": np.nan,
        "repeats": pd.NA,
        "kernel_count": pd.NA,
        "kernel_names": None,
        "cache": "warm",
        "sm_clock_hz": np.nan,
        "status": "ok",
        "error": None,
        "source": SOURCE,
        "driver": None,
        "cuda": None,
        "torch": None,
        "triton": None,
        "collector_version": f"aiconfigurator-core=={package_version()}",
        "git_rev": None,
        "host": None,
        "time": None,
        "plan_index": pd.NA,
        "repeat_of": pd.NA,
        "model": None,
    }
    frame = frame.assign(**{k: v for k, v in fill.items() if k not in frame})
    names = list(op_fields(op)) + list(LABEL_COLUMNS) + list(PROVENANCE_COLUMNS) + list(ROW_ID_COLUMNS)
    return frame[names + list(EXTRA_COLUMNS)].reset_index(drop=True)


def cache_schema(op: str) -> pa.Schema:
    """Our row schema plus the importer's extra string columns."""
    schema = row_schema(op)
    for name in EXTRA_COLUMNS:
        schema = schema.append(pa.field(name, pa.string()))
    return schema


def import_op(op: str, files: list[TableFile], progress: bool = False) -> tuple[pd.DataFrame, Counter]:
    """All chosen tables of one op family -> validated rows in our schema, and row skip counts."""
    from tqdm import tqdm

    skips: Counter = Counter()
    parts = [map_table(f, skips) for f in tqdm(files, desc=f"import {op}", file=sys.stderr, disable=not progress)]
    if not parts:
        return pd.DataFrame(columns=cache_schema(op).names), skips
    frame = _check_shapes(pd.concat(parts, ignore_index=True), op, skips)
    return _finish(frame, op, skips), skips


def write_cache(frame: pd.DataFrame, op: str, path: Path) -> None:
    schema = cache_schema(op)
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    meta = {
        SCHEMA_KEY.decode(): SCHEMA_VERSION,
        "kernelcast.source": SOURCE,
        "kernelcast.aiconfigurator_core": package_version(),
    }
    write_atomic(table.replace_schema_metadata(meta), path)


def cache_path(out: Path, op: str) -> Path:
    return Path(out) / f"{SOURCE}_{op}.parquet"


def default_out() -> Path:
    return Path(__file__).resolve().parents[2] / "datasets" / "outside"


def ensure_cache(ops, out: Path | None = None) -> list[Path]:
    """The per-op caches training reads, imported first where missing (so a first `kernelcast train`
    needs no separate `kernelcast import aiconfigurator`)."""
    out = Path(out) if out else default_out()
    missing = [op for op in ops if not cache_path(out, op).exists()]
    if missing:
        print(
            f"{out}: importing aiconfigurator-core's {', '.join(missing)} tables (`kernelcast import aiconfigurator`)",
            file=sys.stderr,
        )
        run_import(out=out, ops=missing, progress=True)
    return [cache_path(out, op) for op in ops]


def run_import(
    out: Path | None = None, systems=None, ops=None, progress: bool = True, root: Path | None = None
) -> dict:
    """Import the chosen tables, write one parquet cache per op, return the summary."""
    out = Path(out) if out else default_out()
    chosen, skipped = choose(discover(Path(root) if root else data_root()))
    if systems:
        chosen = [f for f in chosen if f.system in systems]
        skipped = [(f, reason) for f, reason in skipped if f.system in systems]
    ops = list(ops or ("gemm", "attention", "moe", "collective"))
    summary = {
        "aiconfigurator_core": package_version(),
        "out": str(out),
        "ops": {},
        "tables_read": [f.where for f in chosen if f.op in ops],
        "tables_skipped": dict(Counter(reason for f, reason in skipped if f.op in ops)),
    }
    for op in ops:
        frame, skips = import_op(op, [f for f in chosen if f.op == op], progress)
        write_cache(frame, op, cache_path(out, op))
        summary["ops"][op] = {
            "rows": len(frame),
            "path": str(cache_path(out, op)),
            "by_gpu": frame["gpu"].value_counts().sort_index().to_dict(),
            "by_backend": frame["backend"].value_counts().sort_index().to_dict(),
            "skipped_rows": dict(skips.most_common()),
        }
    return summary


def format_summary(summary: dict) -> str:
    ops = summary["ops"]
    gpus = sorted({g for s in ops.values() for g in s["by_gpu"]})
    lines = [
        f"aiconfigurator-core {summary['aiconfigurator_core']} -> {summary['out']}",
        f"{'gpu':<22}" + "".join(f"{op:>12}" for op in ops),
    ]
    lines += [f"{g:<22}" + "".join(f"{ops[op]['by_gpu'].get(g, 0):>12,}" for op in ops) for g in gpus]
    lines.append(f"{'total':<22}" + "".join(f"{ops[op]['rows']:>12,}" for op in ops))
    lines.append(
        f"tables read: {len(summary['tables_read'])}; tables skipped: "
        + ", ".join(f"{n} {r}" for r, n in summary["tables_skipped"].items())
    )
    for op, s in ops.items():
        lines += [f"{op} rows skipped:"] + [f"  {n:>9,}  {r}" for r, n in s["skipped_rows"].items()]
    return "\n".join(lines)


def main(out=None, systems=None, ops=None, as_json: bool = False) -> int:
    summary = run_import(out=out, systems=systems, ops=ops, progress=True)
    print(json.dumps(summary, indent=2) if as_json else format_summary(summary))
    return 0
