"""Config search's measured regret (issue 16): on shapes where every candidate config was measured, the measured
time of kernelcast's pick over the measured best, beside a fixed config, Triton's tutorial short list (GEMM) and
vLLM's default fused_moe config (MoE) — per op and GPU (``kernelcast.training.regret``).

Usage: python benchmarks/eval_regret.py [--data ROWS.parquet ...] [--ops gemm,attention,moe] [--json-out PATH]
Without --data it reads the dataset card's test files of the exhaustive sweeps (gemm_triton_tune,
triton_attention_tune, moe_tune; measured by benchmarks/results/collect_h200_20261201_tune.sh). Prints a table;
writes JSON (default benchmarks/results/eval_regret.json; with --data, --json-out is required). `kernelcast
evaluate --op <op> --split tune` logs the same figures to MLflow.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from kernelcast.collect.dataset import atomic_path
from kernelcast.training import regret

COLUMNS = ("mean_regret", "median_regret", "worst_regret", "within_5pct", f"best_in_top{regret.TOP_K}")


def evaluate(op: str, data: list[Path], predictor: str) -> tuple[list[dict], pd.DataFrame]:
    if data:
        frame = pd.concat([pd.read_parquet(p) for p in data], ignore_index=True)
        if "op" in frame:  # --data of one op family read for the others too: theirs only
            frame = frame[frame["op"] == op]
        if frame.empty:
            raise ValueError("no rows of this op in --data")
        rows = regret.measured_rows(frame, op)
    else:
        rows = regret.tune_rows(op)
    picks = regret.shape_picks(rows, op, predictor)
    return [{"op": op, **r} for r in regret.summary(picks)], picks.assign(op=op)


DEFAULT_JSON = Path(__file__).parent / "results" / "eval_regret.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, action="append", default=[], help="parquet of measured rows (repeatable)")
    ap.add_argument("--ops", default="gemm,attention,moe", help="comma-separated ops among gemm, attention, moe")
    ap.add_argument("--predictor", default="auto", choices=("auto", "analytical"))
    ap.add_argument("--json-out", type=Path, help=f"JSON written (default {DEFAULT_JSON}; required with --data)")
    args = ap.parse_args()
    if args.data and args.json_out is None:  # the default file holds the tune test files' figures: keep them apart
        print(f"--json-out: required with --data ({DEFAULT_JSON.name} holds the tune files' figures)", file=sys.stderr)
        return 2
    args.json_out = args.json_out or DEFAULT_JSON
    table, shapes = [], []
    for op in args.ops.split(","):
        if op not in regret.TUNE_SWEEPS:
            print(f"--ops: {op!r} is not one of {', '.join(regret.TUNE_SWEEPS)}", file=sys.stderr)
            return 2
        try:
            summary, picks = evaluate(op, args.data, args.predictor)
        except ValueError as exc:
            print(f"{op}: {exc}", file=sys.stderr)
            continue
        table += summary
        shapes.append(picks)
    if not table:
        return 1
    print(f"{'op':<10}{'gpu':<10}{'method':<26}{'shapes':>7}" + "".join(f"{c:>15}" for c in COLUMNS))
    for r in table:
        cells = "".join(f"{r[c]:>15.3f}" if c in r else f"{'':>15}" for c in COLUMNS)
        print(f"{r['op']:<10}{r['gpu']:<10}{r['method']:<26}{r['shapes']:>7}{cells}")
    result = {
        "data": [str(p) for p in args.data]
        or "datasets/files.toml test files of " + ", ".join(regret.TUNE_SWEEPS.values()),
        "predictor": args.predictor,
        "table": table,
        "shapes": pd.concat(shapes, ignore_index=True).to_dict("records") if shapes else [],
    }
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.json_out) as tmp:
        tmp.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
