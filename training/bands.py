"""The analytical model's own error, per op and backend: what its answer's interval spans.

For every op family, the training rows (the card's ``train`` files and the imported outside tables) are answered by
the analytical model (``predictors.analytical.predict_frame``: roofline with waves, NCCL's cost model), and the 10th
and 90th percentiles of log(measured / analytical) per backend become that (op, backend)'s band, written to
``predictors/models/analytical.bands.json``. Served, an analytical answer's interval is the point times that band
(widened to hold the point; its low end never below the floor); backends without ``MIN_ROWS`` rows keep ×/÷2.

Usage: python -m kernelcast.training.bands [--ops gemm,attention] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

import numpy as np

from kernelcast.features.desc import op_fields
from kernelcast.features.ops import op_names
from kernelcast.predictors.analytical import BANDS_FILE, bands, predict_frame
from kernelcast.training.data import SOURCES, load_rows

#: rows a backend needs before its band replaces ×/÷2
MIN_ROWS = 200


def op_bands(op: str, sources: Sequence[str] = SOURCES) -> dict[str, dict]:
    """{backend: {"q10", "q90", "rows"}} of one op's training rows from ``sources`` (backends with at least
    ``MIN_ROWS``). The outside tables must have been imported (``kernelcast import aiconfigurator``): a missing one is
    an error, not a band left out."""
    with open(os.devnull, "w") as quiet:
        rows = load_rows(op, sources=sources, roles=("train",), report=quiet)
    answer = predict_frame(rows[[c for c in op_fields(op) if c in rows]], op)
    err = np.log(rows["latency_us"].to_numpy(dtype=np.float64) / answer["latency_us"].to_numpy(dtype=np.float64))
    out = {}
    for backend in sorted(rows["backend"].unique()):
        mine = (rows["backend"] == backend).to_numpy() & np.isfinite(err)
        if mine.sum() >= MIN_ROWS:
            q10, q90 = np.quantile(err[mine], [0.1, 0.9])
            out[str(backend)] = {"q10": round(float(q10), 4), "q90": round(float(q90), 4), "rows": int(mine.sum())}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelcast.training.bands", description=__doc__.splitlines()[0])
    p.add_argument("--ops", default=",".join(op_names()), help="comma-separated op families (default: all)")
    p.add_argument("--json", action="store_true", help="print the bands as JSON")
    args = p.parse_args(argv)
    ops = args.ops.split(",")
    unknown = sorted(set(ops) - set(op_names()))
    if unknown:
        p.error(f"--ops: {unknown[0]!r} is not an op family; allowed: {', '.join(op_names())}")
    table = dict(bands())  # ops not asked for keep their bands
    for op in ops:
        table[op] = op_bands(op)
        if not args.json:
            for backend, b in table[op].items():
                print(f"{op:<12}{backend:<10}{b['rows']:>9,} rows  x{np.exp(b['q10']):.2f} .. x{np.exp(b['q90']):.2f}")
    BANDS_FILE.parent.mkdir(parents=True, exist_ok=True)
    tmp = BANDS_FILE.with_name(f".{BANDS_FILE.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"min_rows": MIN_ROWS, "bands": table}, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, BANDS_FILE)
    bands.cache_clear()
    if args.json:
        json.dump(table, sys.stdout, indent=1, sort_keys=True)
        print()
    else:
        print(f"wrote {BANDS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
