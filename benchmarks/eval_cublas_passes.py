"""cuBLAS median APE on our H200 rows, random split, by collection pass (the main sweep's shapes vs the
fp32/tf32-heavy, unaligned `gemm_cublas_more` passes: rows first measured at or after --since) and by dtype.

Usage: python benchmarks/eval_cublas_passes.py [--since 2026-11-29T23:00] [--json-out PATH]
Trains the frozen split's model on our GEMM rows (as `kernelcast evaluate --op gemm --split random
--source kernelcast`), prints learned and analytical median APE per pass and per dtype; writes JSON.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast.features.desc import from_row
from kernelcast.training import data
from kernelcast.training.run import RunConfig, fit_fold, load
from kernelcast.training.splits import make_splits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--since", default="2026-11-29T23:00", help="rows measured from this UTC time on: the gemm_cublas_more passes"
    )
    parser.add_argument("--json-out", default=str(Path(__file__).with_name("results") / "eval_cublas_passes.json"))
    args = parser.parse_args()
    cfg = RunConfig("gemm", sources=("kernelcast",), log_mlflow=False)
    frame = load(cfg)
    hashes = data.shape_hash(frame, "gemm")
    [fold] = make_splits("random", frame, hashes, None)
    _, rows, _, _ = fit_fold(cfg, frame, fold)
    times = pd.read_parquet(data.DATASETS / "gemm", columns=["desc_key", "time", "repeat_of"])
    first = times[times["repeat_of"].isna()].groupby("desc_key")["time"].min()
    keys = [from_row(r).key() for r in frame.iloc[np.flatnonzero(fold.test)].to_dict("records")]
    later = pd.Series(keys).map(first).astype(str).ge(args.since).to_numpy()
    rows = rows.assign(
        group=np.where(later, "gemm_cublas_more passes (fp32/tf32-heavy, unaligned)", "main sweep (gemm_cublas)")
    )
    rows = rows[rows["backend"] == "cublas"]
    out = []
    for by in ("group", "dtype"):
        for value, part in rows.groupby(by):
            out.append(
                {
                    "by": "pass" if by == "group" else by,
                    "value": value,
                    "rows": len(part),
                    "learned_median_ape": float(np.median(np.abs(part["learned"] / part["measured"] - 1))),
                    "analytical_median_ape": float(np.median(np.abs(part["analytical"] / part["measured"] - 1))),
                }
            )
    for r in out:
        print(
            f"{r['by']:<6}{r['value']:<56}{r['rows']:>7,}  learned {r['learned_median_ape']:.2%}  "
            f"analytical {r['analytical_median_ape']:.2%}"
        )
    Path(args.json_out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()
