"""cuBLAS on GPUs kernelcast never measured it on, against the closest measurements there are: aiconfigurator-core's
vLLM bf16 GEMM tables, whose kernel is ``torch.nn.functional.linear`` (cuBLAS) on eight GPUs.

kernelcast measured cuBLAS on the H200 only; a ``backend="cublas"`` description on a B200, H100, L40S … is answered
by the unseen-GPU path (``predictors.unseen``). The vLLM tables are a proxy, not an independent test set: the model
trained on them (as ``backend="vllm"``), and they time warm-L2 CUDA-graph replays where kernelcast times cold-L2 single
launches; the H200 row shows how far the two timings sit apart where both were measured. Several model folders can be
compared in one run (``--models label=folder,...``).

Usage: python benchmarks/eval_unseen_cublas.py [--models shipped=predictors/models,new=DIR] [--rows 3000]
       [--json-out PATH]
Prints a table; writes JSON (default benchmarks/results/eval_unseen_cublas.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast import predict_many
from kernelcast.features.desc import op_fields
from kernelcast.predictors.learned import MODEL_DIR
from kernelcast.training.data import REPO, load_rows

#: the aiconfigurator tables whose kernel is cuBLAS (vLLM 0.24's unquantized linear)
KERNEL_SOURCE = "torch.nn.functional.linear"


def proxy_rows(per_gpu: int, seed: int = 0) -> pd.DataFrame:
    """Up to ``per_gpu`` seeded rows per GPU of the vLLM bf16 tables, described as cuBLAS calls."""
    rows = load_rows("gemm", sources=("aiconfigurator",))
    rows = rows[(rows["backend"] == "vllm") & (rows["dtype"] == "bf16") & (rows["kernel_source"] == KERNEL_SOURCE)]
    if rows.empty:
        raise ValueError(f"no vLLM bf16 GEMM rows with kernel_source {KERNEL_SOURCE!r}: import aiconfigurator first")
    picked = [g.sample(min(per_gpu, len(g)), random_state=seed) for _, g in rows.groupby("gpu", sort=True)]
    out = pd.concat(picked, ignore_index=True)
    return out.assign(backend="cublas", source="kernelcast")


def evaluate(rows: pd.DataFrame, models: dict[str, str]) -> list[dict]:
    descs = rows[[c for c in op_fields("gemm") if c in rows]]
    measured = rows["latency_us"].to_numpy(dtype=np.float64)
    answers = {label: predict_many(descs, model_dir=folder) for label, folder in models.items()}
    table = []
    for gpu in sorted(rows["gpu"].unique()):
        mine = (rows["gpu"] == gpu).to_numpy()
        entry = {"gpu": gpu, "rows": int(mine.sum())}
        for label, got in answers.items():
            ratio = got["latency_us"].to_numpy(dtype=np.float64)[mine] / measured[mine]
            entry[label] = {
                "median_ape": float(np.median(np.abs(ratio - 1))),
                "p90_ape": float(np.quantile(np.abs(ratio - 1), 0.9)),
                "median_ratio": float(np.median(ratio)),
                "model": str(got["model"][mine].mode().iloc[0]),
            }
        table.append(entry)
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=f"shipped={MODEL_DIR}", help="label=model folder, comma-separated")
    ap.add_argument("--rows", type=int, default=3000, help="rows per GPU (seeded sample of its table)")
    ap.add_argument("--json-out", type=Path, default=Path(__file__).parent / "results" / "eval_unseen_cublas.json")
    args = ap.parse_args()
    models = dict(item.split("=", 1) for item in args.models.split(","))
    for label, folder in models.items():
        if not (Path(folder) / "gemm.json").exists():
            ap.error(f"--models: {label}={folder} holds no gemm model (gemm.json)")
    table = evaluate(proxy_rows(args.rows), models)
    print(f"{'gpu':<22}{'rows':>6}" + "".join(f"  {label + ' med/p90 (ratio)':>30}" for label in models))
    for r in table:
        cells = "".join(
            f"  {r[m]['median_ape'] * 100:8.1f} /{r[m]['p90_ape'] * 100:6.1f}% ({r[m]['median_ratio']:5.2f})"
            for m in models
        )
        print(f"{r['gpu']:<22}{r['rows']:>6}{cells}")
    for label in models:
        print(f"{label}: answered by " + ", ".join(sorted({r[label]["model"] for r in table})))
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    where = {label: _where(folder) for label, folder in models.items()}
    args.json_out.write_text(json.dumps({"models": where, "rows_per_gpu": args.rows, "table": table}, indent=1))


def _where(folder: str) -> str:
    """A model folder as a result file names it: from the checkout's root when inside it (no machine's folders)."""
    path = Path(folder).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else f"a folder outside the checkout ({path.name})"


if __name__ == "__main__":
    main()
