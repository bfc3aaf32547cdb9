"""Which real models' whole steps kernelcast answers: ``predict_model`` on every Hugging Face ``config.json`` in a
folder (default: the 89 Hub configs aiconfigurator-core ships, its ``model_configs/``; quantization sidecars skipped),
a prefill (1 × 1,024 tokens) and a decode step (8 sequences against 2,048 cached tokens) on the H200, each in its own
worker process (one model's failure or memory cannot touch the next). Per config: answered or not, and why not (the
error's type and first line, grouped into causes in the summary); seconds per step. Prints a table and a summary,
writes JSON (default benchmarks/results/bench_model_coverage.json).

    python benchmarks/bench_model_coverage.py [--configs DIR] [--mode eager|compile] [--workers 2] [--timeout-s 300]
        [--json-out PATH]

``--mode compile``: the steps as torch.compile runs them (``predict_model(mode="compile")``: Inductor's code for the
H200 written here), default JSON benchmarks/results/bench_model_coverage_compile.json.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.metadata
import json
import sys
import time
from collections import Counter
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "bench_model_coverage.json"
STEPS = {"prefill": {"batch": 1, "seq": 1024}, "decode": {"batch": 8, "context": 2048}}


def default_configs() -> Path:
    try:
        import aiconfigurator_core
    except ImportError:
        raise SystemExit("configs: aiconfigurator-core is not installed; pass --configs DIR") from None
    return Path(aiconfigurator_core.__file__).parent / "model_configs"


def label(folder: Path) -> str:
    """The configs folder as the JSON records it: aiconfigurator-core's by its version, another relative to the repo
    where it lies inside it (no machine's own paths)."""
    try:
        import aiconfigurator_core

        if folder.resolve() == (Path(aiconfigurator_core.__file__).parent / "model_configs").resolve():
            return f"aiconfigurator-core {importlib.metadata.version('aiconfigurator-core')}: model_configs/"
    except (ImportError, importlib.metadata.PackageNotFoundError):
        pass
    root = Path(__file__).resolve().parent.parent
    return str(folder.resolve().relative_to(root)) if folder.resolve().is_relative_to(root) else folder.name


def one(path: str, mode: str = "eager") -> dict:
    """Both steps of one config, in this (worker) process."""
    import warnings

    warnings.filterwarnings("ignore")
    from kernelcast.graphs.model import predict_model

    out = {"config": Path(path).name}
    for phase, shape in STEPS.items():
        t0 = time.perf_counter()
        try:
            step = predict_model(path, gpu="H200", phase=phase, mode=mode, **shape)
            out[phase] = {"ok": True, "device_us": round(step.device_us, 1), "tokens_per_s": round(step.tokens_per_s)}
        except Exception as exc:  # noqa: BLE001 - what stops a model is the finding
            text = str(exc).strip().splitlines()
            out[phase] = {"ok": False, "error": f"{type(exc).__name__}: {text[0] if text else ''}"[:300]}
        out[phase]["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def cause(error: str) -> str:
    """A short cause for grouping errors: the exception type and the words before the first quote or colon."""
    kind, _, rest = error.partition(": ")
    for stop in ("'", '"', ":", ";", "("):
        rest = rest.split(stop)[0]
    return f"{kind}: {rest.strip()[:70]}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", type=Path, default=None, help="folder of config.json files")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout-s", type=float, default=300.0, help="per config (both steps)")
    p.add_argument("--mode", default="eager", choices=("eager", "compile"))
    p.add_argument("--json-out", type=Path, default=None, help="default: results/bench_model_coverage[_compile].json")
    args = p.parse_args(argv)
    folder = args.configs or default_configs()
    if not folder.is_dir():
        raise SystemExit(f"configs: {folder} is not a folder")
    paths = sorted(str(f) for f in folder.glob("*.json") if "quant_config" not in f.name)
    if not paths:
        raise SystemExit(f"configs: no *.json in {folder}")
    rows = []
    t0 = time.time()
    with concurrent.futures.ProcessPoolExecutor(args.workers, max_tasks_per_child=1) as pool:
        jobs = {pool.submit(one, path, args.mode): path for path in paths}
        for i, job in enumerate(concurrent.futures.as_completed(jobs), 1):
            path = jobs[job]
            try:
                row = job.result(timeout=args.timeout_s)
            except Exception as exc:  # noqa: BLE001 - a worker that died or hung
                row = {"config": Path(path).name}
                row.update({ph: {"ok": False, "error": f"worker: {type(exc).__name__}: {exc}"[:300]} for ph in STEPS})
            rows.append(row)
            marks = " ".join(f"{ph} {'ok' if row[ph]['ok'] else 'no'}" for ph in STEPS)
            print(f"[{i}/{len(paths)}] {row['config'][:60]:60s} {marks}", file=sys.stderr, flush=True)
    rows.sort(key=lambda r: r["config"])
    both = [r for r in rows if all(r[ph]["ok"] for ph in STEPS)]
    causes = Counter(cause(r[ph]["error"]) for r in rows for ph in STEPS if not r[ph]["ok"])
    print(f"{'config':62s} {'prefill':>12s} {'decode':>12s}")
    for r in rows:
        cells = [f"{r[ph]['device_us'] / 1e3:9.1f} ms" if r[ph]["ok"] else "—" for ph in STEPS]
        print(f"{r['config'][:62]:62s} {cells[0]:>12s} {cells[1]:>12s}")
    print(f"\n{args.mode}: answered both steps: {len(both)} of {len(rows)} configs ({time.time() - t0:.0f} s)")
    for text, n in causes.most_common():
        print(f"  {n:3d} × {text}")
    summary = {
        "configs": label(folder),
        "mode": args.mode,
        "steps": STEPS,
        "answered_both": len(both),
        "total": len(rows),
        "causes": dict(causes.most_common()),
        "rows": rows,
    }
    out = args.json_out or (OUT if args.mode == "eager" else OUT.with_name(f"{OUT.stem}_compile.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(summary, indent=1) + "\n")
    tmp.replace(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
