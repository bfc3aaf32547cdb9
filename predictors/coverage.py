"""What each shipped learned model covers, read from its manifest: the (GPU, backend, dtype) triples it was trained
on and its measured error on each (the frozen split's held-out shapes); every other request is analytical."""

from __future__ import annotations

from pathlib import Path

from kernelcast.features.gpu import resolve_gpu_name
from kernelcast.features.ops import op_names
from kernelcast.predictors.learned import read_manifest

COVERAGE_COLUMNS = ("op", "gpu", "backend", "dtype", "n_test", "median_ape_pct", "p90_ape_pct", "model")


def coverage_rows(op: str | None = None, gpu: str | None = None, model_dir: Path | None = None) -> list[dict]:
    """One row per covered (op, GPU, backend, dtype); errors in percent where the manifest records them."""
    gpu = resolve_gpu_name(gpu) if gpu is not None else None
    rows = []
    for name in (op,) if op else op_names():
        manifest = read_manifest(name, model_dir)
        if manifest is None:
            continue
        errors = manifest.get("covered_errors", {})
        for key in manifest["covered"]:
            g, backend, dtype = key.split("|")
            if gpu is not None and g != gpu:
                continue
            err = errors.get(key, {})
            rows.append(
                {
                    "op": name,
                    "gpu": g,
                    "backend": backend,
                    "dtype": dtype,
                    "n_test": err.get("n"),
                    "median_ape_pct": _pct(err.get("median_ape")),
                    "p90_ape_pct": _pct(err.get("p90_ape")),
                    "model": f"learned:{name}@{manifest['data_fingerprint'][:8]}",
                }
            )
    return rows


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100 * value, 1)


def covered_ops(gpu: str, model_dir: Path | None = None) -> list[str]:
    """The ops whose shipped learned model covers ``gpu`` for some backend and dtype."""
    return sorted({row["op"] for row in coverage_rows(None, gpu, model_dir)}, key=op_names().index)


__all__ = ["COVERAGE_COLUMNS", "coverage_rows", "covered_ops"]
