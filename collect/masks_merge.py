"""SDPA calls with an explicit mask (``layer_job --parts sdpa_masks``) as attention rows: one per measured shape, its
label the call with the additive window mask (cuDNN's mask-reading kernel and its memset, no conversion kernels:
``graphs/lower.py`` lowers a bool mask's conversion on its own), ``mask = True``, ``causal = False``. A quarter of
the shapes, chosen by a hash of the shape, go to a test file, the rest to a training file; ``--test NAME`` writes
every row to one test file (a fresh draw: ``layer_job --mask-seed``).

    python -m kernelcast.collect.masks_merge datasets/layers/kernelcast_h200_sxm_20261205_sdpa_masks.jsonl \
        --day 20261205 --git-rev 4503d92
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from kernelcast.collect.dataset import write_atomic
from kernelcast.collect.fused_merge import PROVENANCE
from kernelcast.features.desc import parse_desc

#: the mask whose call is the label (the bool ones add their conversion kernels before the same attention kernel)
LABEL_MASK = "window_additive"
#: shapes whose hash falls below this share are test rows
TEST_SHARE = 0.25


def is_test(shape: Sequence[int]) -> bool:
    digest = hashlib.sha256(json.dumps(list(shape)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < TEST_SHARE


def attention_row(record: dict, day: str, git_rev: str | None) -> dict:
    """The attention dataset row of one ``sdpa_masks`` record of ``LABEL_MASK``."""
    b, hq, hkv, sq, skv, d = record["shape"]
    desc = parse_desc(
        {"op": "attention", "gpu": PROVENANCE["gpu"], "dtype": "bf16", "backend": "cudnn", "batch": b,
         "heads_q": hq, "heads_kv": hkv, "seq_q": sq, "seq_kv": skv, "head_dim": d, "causal": False, "mask": True}
    )  # fmt: skip
    times = record["device_us"]
    return {
        **desc.to_row(),
        "latency_us": float(statistics.median(times)),
        "p10_us": float(min(times)),
        "p90_us": float(max(times)),
        "repeats": len(times),
        "kernel_count": len(record["kernels"]),
        "kernel_names": ";".join(name for name, _ in record["kernels"]),
        **{k: v for k, v in PROVENANCE.items() if k != "gpu"},
        "status": "ok",
        "git_rev": git_rev,
        "time": f"{day[:4]}-{day[4:6]}-{day[6:]}",
        "desc_key": desc.key(),
        "repeat_of": None,
        "model": None,
    }


def split_rows(records: list[dict], day: str, git_rev: str | None) -> dict[str, list[dict]]:
    """``masked`` (train) and ``maskedtest`` rows from the records of ``LABEL_MASK`` that measured."""
    out: dict[str, list[dict]] = {"masked": [], "maskedtest": []}
    for r in records:
        if r.get("mask") == LABEL_MASK and "kernels" in r:
            out["maskedtest" if is_test(r["shape"]) else "masked"].append(attention_row(r, day, git_rev))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelcast.collect.masks_merge", description=__doc__.splitlines()[0])
    p.add_argument("raw", help="layer_job's sdpa_masks.jsonl")
    p.add_argument("--datasets", default="datasets")
    p.add_argument("--day", required=True, help="yyyymmdd of the measurement")
    p.add_argument("--git-rev", default=None)
    p.add_argument("--test", default=None, help="write every row to the test file <day>_<TEST>.parquet")
    args = p.parse_args(argv)
    records = [json.loads(line) for line in Path(args.raw).read_text().splitlines() if line.strip()]
    out = Path(args.datasets) / "attention"
    out.mkdir(parents=True, exist_ok=True)
    splits = split_rows(records, args.day, args.git_rev)
    if args.test:
        splits = {args.test: [row for rows in splits.values() for row in rows]}
    for split, rows in splits.items():
        path = out / f"kernelcast_{PROVENANCE['gpu']}_{args.day}_{split}.parquet"
        write_atomic(pa.Table.from_pylist(rows), path, compression="zstd")
        print(f"{split}: {len(rows)} rows -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
