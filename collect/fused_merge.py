"""The fused collector's JSON lines (``fused_job``) as datasets: one row per measured Triton kernel, one per task.

``datasets/fused/<source>_<gpu>_<day>_<split>.parquet``: each Triton kernel of a compiled call as a ``fused``
description (``features/ops/fused.describe``; ``code`` keeps the decorator, body and ``get_args`` of its source, the
boilerplate around them dropped) with its label (median of the call's repeats, p10/p90), where it ran in the call
(``position``: 0 runs right after the L2 flush), the launch config Inductor's autotuning chose and the binary's
registers/spills/shared memory, and the task it belongs to. ``datasets/compiled/..._<split>_tasks.parquet`` (not
training rows: the compiled calls ``benchmarks/eval_compiled.py`` checks ``predict_module(mode="compile")`` on):
per task the compiled call's and
the eager call's device times, its kernels, the graph source or layer point, and (layers only) the output code.

Usage: ``python -m kernelcast.collect.fused_merge RAW.jsonl.gz ... --name train --datasets datasets``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import statistics
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from kernelcast.collect.dataset import card_keys, plain_key, write_atomic
from kernelcast.collect.fused_job import LAYER_MODELS
from kernelcast.features import fused_code
from kernelcast.features.gpu import get_gpu
from kernelcast.features.ops.fused import describe

PROVENANCE = {  # the lent H200 of 2026-12-01 (fused_job's call logs)
    "gpu": "h200_sxm",
    "gpu_name": "NVIDIA H200",
    "driver": "580.159.04",
    "cuda": "13.0",
    "torch": "2.11.0",
    "triton": "3.6.0",
    "timer": "cupti",
    "method": "cupti",
    "cache": "cold",
    "source": "kernelcast",
}


#: the splits whose files the card lists as training files (layertrain, layertrain2, layertrain3, hybridtrain:
#: fused_job --layer-models train, train2, train3, hybridtrain)
TRAIN_SPLITS = ("train", "aligned", "layertrain", "layertrain2", "layertrain3", "hybridtrain")
#: the first train-box seeds, also compiled under every fusion choice (fused_job --choices 40): held out together
CHOICE_SEEDS = 40


FIT_LAYER_MODELS = frozenset(name for name, _ in LAYER_MODELS)


def split_of(row: dict, arch_split: str = "archlayers", layer_split: str | None = None) -> str:
    """train (random train-box graphs) | aligned (the aligned box, trained on too) | test (the test box) | choices (the
    fusion-choice study) | layers (fused_job.LAYER_MODELS) | ``arch_split`` (other architectures' layers); every
    layer goes to ``layer_split`` when it is given."""
    if row["kind"] == "layer":
        if layer_split:
            return layer_split
        return "layers" if row["model"] in FIT_LAYER_MODELS else arch_split
    if row["box"] in ("test", "aligned"):
        return row["box"]
    return "choices" if row["seed"] < CHOICE_SEEDS else "train"


def task_id(row: dict) -> str:
    if row["kind"] == "layer":
        return f"layer:{row['model']}:tp{row['tp']}:{row['phase']}:b{row['batch']}:s{row['seq']}:c{row['context']}"
    return f"graph:{row['box']}:{row['seed']}:{row.get('choice', 'default')}"


def short_source(source: str) -> str:
    """A kernel's source from its ``@triton_heuristics`` decorator through ``get_args``' return."""
    start = source.find("@triton_heuristics.")
    end = source.find("\n\n\ndef call(")
    return source[start : end if end > 0 else len(source)]


def kernel_rows(row: dict, day: str, git_rev: str | None) -> list[dict]:
    kernels = fused_code.triton_kernels(row["code"])
    warm = fused_code.warm_bytes(row["code"], get_gpu(PROVENANCE["gpu"]).l2_bytes)
    tid = task_id(row)
    out = []
    for position, (name, med, lo, hi) in enumerate(row["kernels"]):
        if name not in kernels:
            continue
        k = kernels[name]
        desc = describe(k, PROVENANCE["gpu"], warm.get(name, 0))
        desc["code"] = short_source(k.source)
        meta = row.get("meta", {}).get(name, {})
        key = {k2: v for k2, v in desc.items() if k2 != "code"}
        key["code_sha1"] = hashlib.sha1(desc["code"].encode()).hexdigest()[:16]
        out.append(
            {
                **desc,
                "latency_us": float(med),
                "p10_us": float(lo),
                "p90_us": float(hi),
                "repeats": len(row["device_us"]),
                "kernel_count": 1,
                "kernel_names": name,
                "status": "ok",
                **PROVENANCE,
                "git_rev": git_rev,
                "time": f"{day[:4]}-{day[4:6]}-{day[6:]}",
                "desc_key": json.dumps(key, sort_keys=True),
                "repeat_of": None,
                "task": tid,
                "model": row.get("model"),
                "position": position,
                "kernels_in_call": len(row["kernels"]),
                "num_warps": meta.get("num_warps"),
                "launch_kwargs": json.dumps(meta.get("kwargs", {}), sort_keys=True),
                "n_regs": meta.get("n_regs"),
                "n_spills": meta.get("n_spills"),
                "shared_bytes": meta.get("shared"),
            }
        )
    return out


def task_row(row: dict) -> dict:
    return {
        "task": task_id(row),
        "kind": row["kind"],
        "box": row.get("box"),
        "seed": row.get("seed"),
        "choice": row.get("choice"),
        "model": row.get("model"),
        "tp": row.get("tp"),
        "phase": row.get("phase"),
        "batch": row.get("batch"),
        "seq": row.get("seq"),
        "context": row.get("context"),
        "layer_inputs": row.get("layer_inputs"),
        "graph_source": row.get("source"),
        "graph_inputs": json.dumps(row.get("inputs")) if row.get("inputs") else None,
        "device_us": statistics.median(row["device_us"]) if row.get("device_us") else None,
        "eager_device_us": statistics.median(row["eager_device_us"]) if row.get("eager_device_us") else None,
        "kernels": json.dumps(row.get("kernels")),
        "eager_kernels": len(row.get("eager_kernels") or []),
        "compile_s": row.get("compile_s"),
        "code": row.get("code") if row["kind"] == "layer" else None,  # a task that failed has none
        "error": row.get("error"),
    }


def _write(rows: list[dict], path: Path) -> None:
    write_atomic(pa.Table.from_pylist(rows), path, compression="zstd", compression_level=19)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelcast.collect.fused_merge", description=__doc__.splitlines()[0])
    p.add_argument("raw", nargs="+", help="fused_job JSON lines (.jsonl or .jsonl.gz)")
    p.add_argument("--datasets", default="datasets")
    p.add_argument("--day", default="20261201")
    p.add_argument("--git-rev", default=None)
    p.add_argument("--arch-split", default="archlayers", help="the split other architectures' layers are written to")
    p.add_argument(
        "--layer-split", default=None, help=f"the split every layer is written to (training: one of {TRAIN_SPLITS})"
    )
    args = p.parse_args(argv)
    kernels: dict[str, list] = {}
    tasks: dict[str, list] = {}
    for raw in args.raw:
        opener = gzip.open if raw.endswith(".gz") else open
        with opener(raw, "rt") as f:
            for line in f:
                row = json.loads(line)
                split = split_of(row, args.arch_split, args.layer_split)
                tasks.setdefault(split, []).append(task_row(row))
                if "error" not in row:
                    kernels.setdefault(split, []).extend(kernel_rows(row, args.day, args.git_rev))
    # a test file holds no description a training file holds: test splits drop what this merge's training splits
    # and the card's training files hold; training splits drop what the card's test files hold
    held = {role: card_keys(args.datasets, "fused", role) for role in ("train", "test")}
    held["train"] |= {plain_key(r["desc_key"]) for split in TRAIN_SPLITS for r in kernels.get(split, [])}
    for split in kernels:
        role = "train" if split in TRAIN_SPLITS else "test"
        other = held["test" if role == "train" else "train"]
        kept = [r for r in kernels[split] if plain_key(r["desc_key"]) not in other]
        if len(kept) < len(kernels[split]):
            print(f"{split}: {len(kernels[split]) - len(kept)} kernels a file of the other role holds, dropped")
        kernels[split] = kept
    out, calls = Path(args.datasets) / "fused", Path(args.datasets) / "compiled"
    out.mkdir(parents=True, exist_ok=True)
    calls.mkdir(parents=True, exist_ok=True)
    for split in sorted(tasks):
        stem = f"kernelcast_{PROVENANCE['gpu']}_{args.day}_{split}"
        _write(kernels.get(split, []), out / f"{stem}.parquet")
        _write(tasks[split], calls / f"{stem}_tasks.parquet")
        print(f"{split}: {len(kernels.get(split, []))} kernel rows -> {out}/{stem}.parquet, {len(tasks[split])} tasks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
