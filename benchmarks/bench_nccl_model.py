"""NCCL's own cost model against measured collectives: ours (2×H200) and aiconfigurator-core's NCCL tables.

Prints median / p90 APE per (source, GPU, collective), overall and for messages >= 1 MiB, how often
the model picks the (algo, proto) NCCL logged, and the model's speed; ``--learned`` adds the
leave-one-GPU-out / leave-one-rank-count-out table of the learned correction.

    .venv/bin/python benchmarks/bench_nccl_model.py [--learned] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from kernelcast.collect.importers.aiconfigurator import ensure_cache
from kernelcast.features.gpu import get_gpu
from kernelcast.features.nccl_model import nccl_time_for_gpu
from kernelcast.features.ops.collective import collective_features
from kernelcast.training.collective_eval import ape, ape_stats, format_rows, holdout_table, load_rows, with_features


def accuracy_table(frame) -> list[dict]:
    """NCCL-model APE per (source, gpu, collective) and per (source, gpu) over all collectives."""
    feats = collective_features(frame)
    frame = frame.assign(err=ape(feats["nccl_time_us"], frame["latency_us"]))
    out = []
    for keys, part in frame.groupby(["source", "gpu", "collective"]):
        stats = ape_stats(part["err"].to_numpy(), part["bytes"].to_numpy())
        out.append({"source": keys[0], "gpu": keys[1], "collective": keys[2], **stats})
    for keys, part in frame.groupby(["source", "gpu"]):
        stats = ape_stats(part["err"].to_numpy(), part["bytes"].to_numpy())
        out.append({"source": keys[0], "gpu": keys[1], "collective": "all", **stats})
    return out


def pick_agreement(ours: Path) -> dict:
    """Share of our rows where the model's (algo, proto) equals what NCCL logged (``nccl_algo``/``nccl_proto``)."""
    from kernelcast.collect.dataset import parquet_files, read_table

    rows = read_table(parquet_files([ours])).to_pandas()
    rows = rows[rows["nccl_algo"].notna()]
    est = nccl_time_for_gpu(
        rows["collective"].to_numpy(),
        rows["bytes"].to_numpy(),
        rows["ranks"].to_numpy(),
        rows["ranks_per_node"].to_numpy(),
        get_gpu(rows["gpu"].iloc[0]),
    )
    proto = np.char.upper(est.proto.astype(str)) == rows["nccl_proto"].str.upper().to_numpy()
    same = (est.algo == rows["nccl_algo"].to_numpy()) & proto
    return {"rows": int(len(rows)), "agree": float(same.mean()) if len(rows) else float("nan")}


def speed() -> dict:
    rng = np.random.default_rng(0)
    n, h200 = 100_000, get_gpu("h200_sxm")
    colls = rng.choice(["all_reduce", "all_gather", "reduce_scatter", "all_to_all"], n)
    ranks = rng.choice([2, 4, 8, 16], n)
    start = time.perf_counter()
    nccl_time_for_gpu(colls, 2 ** rng.uniform(10, 32, n), ranks, np.minimum(ranks, 8), h200)
    batch = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(1000):
        nccl_time_for_gpu("all_reduce", 1 << 20, 8, 8, h200)
    return {"batch_100k_s": round(batch, 4), "scalar_us": round((time.perf_counter() - start) * 1e3, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--learned", action="store_true", help="also train/evaluate the learned correction (XGBoost)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    ensure_cache(["collective"])
    frame = load_rows()
    table = accuracy_table(frame)
    print(
        f"{'source':<15}{'gpu':<21}{'collective':<16}{'n':>5}  {'med%':>6} {'p90%':>6}  "
        f"{'med>=1MiB':>9} {'p90>=1MiB':>9}"
    )
    for r in table:
        print(
            f"{r['source']:<15}{r['gpu']:<21}{r['collective']:<16}{r['n']:>5}  {r['median']:6.1f} {r['p90']:6.1f}  "
            f"{r['median_1mib']:9.1f} {r['p90_1mib']:9.1f}"
        )
    result = {
        "rows": int(len(frame)),
        "nccl_model": table,
        "pick_agreement_kernelcast": pick_agreement(Path(__file__).resolve().parent.parent / "datasets" / "collective"),
        "speed": speed(),
    }
    print(f"pick agreement with NCCL's logged choice: {result['pick_agreement_kernelcast']}; speed {result['speed']}")
    if args.learned:
        feats = with_features(frame)
        result["learned"] = holdout_table(frame, feats, "gpu") + holdout_table(frame, feats, "ranks")
        print(format_rows(result["learned"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
