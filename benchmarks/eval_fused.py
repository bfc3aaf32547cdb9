"""Fused kernels on the independent test sets (test, layers, choices, the archlayers and hybridlayers files): median /
p90 APE of the shipped GNN, the shipped XGBoost model, what dispatch serves (GNN for the kinds it won on the frozen
split, XGBoost otherwise) and the memory roofline, overall and by kernel kind; the GNN's training time; serving time of
one kernel and of 100.

    .venv/bin/python benchmarks/eval_fused.py [--model-dir DIR]   # prints a table, writes results/eval_fused.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kernelcast.features.desc import op_fields
from kernelcast.features.vector import build_features
from kernelcast.predictors.dispatch import predict_latency, predict_many
from kernelcast.predictors.gnn import load_gnn
from kernelcast.predictors.learned import MODEL_DIR, load_model
from kernelcast.training.data import DATASETS, card_files, valid_rows

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks/results/eval_fused.json"
FILES = ("test", "layers", "choices", "archlayers", "archlayers2", "archlayers3", "hybridlayers")
MODELS = ("gnn", "xgb", "served", "roofline")
DESC = [c for c in op_fields("fused") if c != "config"]


def test_frames() -> dict[str, pd.DataFrame]:
    """Each independent fused test file's valid ok rows, by its name's last part."""
    out = {}
    for path, role in card_files(DATASETS, "fused"):
        name = path.stem.rsplit("_", 1)[-1]
        if role != "test" or name not in FILES:
            continue
        raw = pd.read_parquet(path)
        raw = raw[(raw["status"] == "ok") & (raw["latency_us"] > 0)].reset_index(drop=True)
        # description fields and the label only (fused kernels have no config: absent, not a column of NaN floats)
        out[name] = valid_rows(raw[[*DESC, "latency_us"]], "fused", report=None)
    return out


def predictions(frame: pd.DataFrame, model_dir: Path) -> dict[str, np.ndarray]:
    gnn, xgb = load_gnn("fused", model_dir), load_model("fused", model_dir)
    frame = frame[DESC]
    feats = build_features(frame, "fused")
    cols = {c: frame[c].to_numpy() for c in frame.columns}
    out = {
        "gnn": gnn.predict_columns("fused", cols, {c: feats[c].to_numpy() for c in feats})["latency_us"],
        "xgb": xgb.predict(feats)[0],
        "served": predict_many(frame, "auto", str(model_dir))["latency_us"].to_numpy(),
        "roofline": predict_many(frame, "analytical")["latency_us"].to_numpy(),
    }
    return out


def ape_stats(measured: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    ape = np.abs(predicted / measured - 1)
    return {"n": int(len(ape)), "median_ape": float(np.median(ape)), "p90_ape": float(np.quantile(ape, 0.9))}


def _pct(stats: dict) -> str:
    return f"{100 * stats['median_ape']:.1f} / {100 * stats['p90_ape']:.1f}"


def serving_times(frame: pd.DataFrame, repeats: int = 200) -> dict[str, float]:
    """µs per call: one kernel (a different source each call, and the same source again), 100 kernels in one call."""
    torch.set_num_threads(1)
    records = frame[DESC].to_dict("records")
    for r in records[:5]:
        predict_latency(r)  # load the models
    distinct = []
    for r in records[5 : 5 + repeats]:
        t = time.perf_counter()
        predict_latency(r)
        distinct.append(time.perf_counter() - t)
    same = []
    for _ in range(repeats):
        t = time.perf_counter()
        predict_latency(records[0])
        same.append(time.perf_counter() - t)
    batch = pd.DataFrame(records[200:300])
    hundred = []
    for _ in range(10):
        t = time.perf_counter()
        predict_many(batch)
        hundred.append(time.perf_counter() - t)
    return {
        "one_kernel_new_source_us": 1e6 * statistics.median(distinct),
        "one_kernel_same_source_us": 1e6 * statistics.median(same),
        "hundred_kernels_us": 1e6 * statistics.median(hundred),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    args = ap.parse_args(argv)
    gnn_manifest = load_gnn("fused", args.model_dir).manifest
    model_dir = Path(args.model_dir).resolve()
    shown = model_dir.relative_to(ROOT) if model_dir.is_relative_to(ROOT) else model_dir  # no machine path for ours
    results = {"model_dir": str(shown), "serve_kinds": gnn_manifest["serve_kinds"], "files": {}}
    lines = []
    frames = test_frames()
    for name, frame in frames.items():
        pred = predictions(frame, args.model_dir)
        y = frame["latency_us"].to_numpy()
        kinds = frame["kind"].to_numpy()
        per = {}
        for group in ("all", *sorted(set(kinds))):
            mask = np.ones(len(y), bool) if group == "all" else kinds == group
            per[group] = {m: ape_stats(y[mask], pred[m][mask]) for m in MODELS}
            lines.append(
                {
                    "file": name,
                    "kind": group,
                    "n": int(mask.sum()),
                    **{f"{m} median/p90 %": _pct(per[group][m]) for m in MODELS},
                }
            )
        results["files"][name] = per
    results["gnn_training"] = gnn_manifest["training"]
    results["frozen_split"] = {k: v for k, v in gnn_manifest["metrics"].items() if k.startswith("random.")}
    results["serving"] = serving_times(frames["test"])
    print(pd.DataFrame(lines).to_string(index=False))
    print(f"\nGNN serves: {', '.join(results['serve_kinds'])}; GNN training {gnn_manifest['training']}")
    print("serving (µs): " + ", ".join(f"{k} {v:.0f}" for k, v in results["serving"].items()))
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return results


if __name__ == "__main__":
    main()
