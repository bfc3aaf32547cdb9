"""Record each shipped model's error per covered (GPU, backend, dtype) in its manifest, without retraining.

The rows are the frozen split's held-out shapes (never trained on: the shipped models were fitted on the other
side of the same split); the errors are what `kernelcast coverage` prints. `kernelcast train` writes the same
table for the models it exports; this is for models shipped before it did. The model files are untouched (the
manifest's sha256 entries cover them, not the manifest itself); the manifest is replaced atomically.

    python benchmarks/record_coverage_errors.py [--op gemm] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from kernelcast.features.ops import op_names
from kernelcast.features.vector import build_features
from kernelcast.predictors.learned import MODEL_DIR, load_model, read_manifest
from kernelcast.training import data, evaluate
from kernelcast.training.splits import frozen_test


def record(op: str) -> dict:
    model = load_model(op)
    if model is None:
        return {}
    frame = data.load_rows(op, tuple(read_manifest(op)["sources"]))
    test = frame[frozen_test(data.shape_hash(frame, op))].reset_index(drop=True)
    p50, _, _ = model.predict(build_features(test, op))
    errors = evaluate.covered_errors(test.assign(measured=test["latency_us"], learned=p50))
    manifest = {**read_manifest(op), "covered_errors": errors}
    path, tmp = MODEL_DIR / f"{op}.json", MODEL_DIR / f".{op}.{os.getpid()}.tmp.json"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=op_names(), help="one op (default: every shipped model)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = {op: record(op) for op in ((args.op,) if args.op else op_names())}
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for op, errors in results.items():
            for key, e in errors.items():
                median, p90 = 100 * e["median_ape"], 100 * e["p90_ape"]
                print(f"{op:10s} {key:36s} n={e['n']:6d} median {median:5.1f}%  p90 {p90:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
