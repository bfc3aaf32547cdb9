"""Robustness probe: hostile input through every entry point and faults in every file serving reads.

Counts, per probe, the cases tried and their outcomes: the same answer or the same clear error everywhere
(``agree``), a wrong answer (``wrong``: entry points disagree, or a row's answer lands on another row), a
crash (any exception other than ValueError, or a ValueError that names no field/file). Zero wrong answers
and zero crashes is the bar.

Usage: python benchmarks/probe_robustness.py [--cases 10000] [--json-out PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from kernelcast import predict_latency, predict_many
from kernelcast.features.desc import parse_desc

VALID = {
    "gemm": {"op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "cublas", "m": 4096, "n": 4096, "k": 4096},
    "gemm_triton": {
        "op": "gemm",
        "gpu": "H200",
        "dtype": "bf16",
        "backend": "triton",
        "m": 512,
        "n": 512,
        "k": 512,
        "config": {
            "block_m": 128,
            "block_n": 128,
            "block_k": 64,
            "group_m": 8,
            "num_warps": 8,
            "num_stages": 3,
            "split_k": 1,
        },
    },
    "attention": {
        "op": "attention",
        "gpu": "H200",
        "dtype": "bf16",
        "backend": "flash",
        "batch": 2,
        "heads_q": 32,
        "heads_kv": 8,
        "seq_q": 1,
        "seq_kv": 4096,
        "head_dim": 128,
        "causal": False,
    },
    "moe": {
        "op": "moe",
        "gpu": "H200",
        "dtype": "bf16",
        "backend": "triton",
        "tokens": 64,
        "hidden": 4096,
        "ffn": 1408,
        "experts": 64,
        "top_k": 6,
        "config": {"block_m": 64, "block_n": 64, "block_k": 32, "group_m": 8, "num_warps": 4, "num_stages": 3},
    },
    "collective": {
        "op": "collective",
        "gpu": "H200",
        "dtype": "bf16",
        "backend": "nccl",
        "collective": "all_reduce",
        "bytes": 1 << 20,
        "ranks": 2,
    },
}
JUNK = [
    None,
    float("nan"),
    float("inf"),
    -1,
    0,
    1,
    3,
    2**70,
    2**1100,
    1.5,
    4096.0,
    True,
    np.bool_(True),
    np.int64(7),
    "",
    "x" * 100_000,
    "bf16",
    "bfloat16",
    "torch.float16",
    "fp8",
    [1, 2],
    {"a": 1},
    (),
    "nt",
    "nn",
]
KEYS = sorted(
    {k for v in VALID.values() for k in v}
    | {"batch", "layout", "out_dtype", "gated", "distribution", "in_place", "ranks_per_node", "bacth", "op"}
)


def _outcome(call) -> tuple[str, object]:
    try:
        value = call()
        return "ok", round(float(value), 6)
    except ValueError as exc:
        text = str(exc)
        named = "kernel_desc" in text or "predictor" in text
        return ("error" if named else "unnamed-error"), text.removeprefix("row 0: ")
    except Exception as exc:  # a crash: what the probe exists to find
        return "crash", f"{type(exc).__name__}: {exc}"[:200]


def _mutate(rng: random.Random) -> dict:
    d = dict(VALID[rng.choice(sorted(VALID))])
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(KEYS)
        if rng.random() < 0.2:
            d.pop(key, None)
        else:
            d[key] = rng.choice(JUNK)
    return d


def probe_descriptions(cases: int, seed: int = 7) -> dict:
    """Random hostile descriptions through parse_desc, predict_latency and predict_many on a list."""
    rng = random.Random(seed)
    tally = Counter()
    examples = {}
    for _ in range(cases):
        d = _mutate(rng)
        outs = {
            "parse": _outcome(lambda d=d: 1.0 if parse_desc(d) else 0.0),
            "predict_latency": _outcome(lambda d=d: predict_latency(d).latency_us),
            "predict_many": _outcome(lambda d=d: predict_many([d])["latency_us"].iloc[0]),
        }
        kinds = {v[0] for v in outs.values()}
        if kinds & {"crash", "unnamed-error"}:
            verdict = "crash"
        elif len(kinds) > 1:
            verdict = "wrong"
        elif kinds == {"error"}:
            verdict = "agree" if len({v[1] for v in outs.values()}) == 1 else "wrong"
        else:
            verdict = "agree" if outs["predict_latency"][1] == outs["predict_many"][1] else "wrong"
        tally[verdict] += 1
        if verdict != "agree" and verdict not in examples:
            examples[verdict] = {"desc": repr(d)[:300], "outcomes": {k: str(v)[:200] for k, v in outs.items()}}
    return {"probe": "hostile descriptions x 3 entry points", "cases": cases, **tally, "examples": examples}


def probe_indexes() -> dict:
    """Mixed-op frames with repeated, shuffled and non-integer indexes: row i's answer on row i."""
    rows = [VALID["gemm"], VALID["attention"], VALID["moe"], VALID["collective"], {**VALID["gemm"], "m": 7}]
    single = [predict_latency(r).latency_us for r in rows]
    rng = np.random.default_rng(3)
    tally = Counter()
    for trial in range(200):
        picks = rng.integers(0, len(rows), rng.integers(1, 20))
        kind = trial % 4
        index = [[0] * len(picks), list(range(len(picks)))[::-1], [f"r{p}" for p in picks], [0.5] * len(picks)][kind]
        frame = columns_frame([rows[p] for p in picks], index)
        try:
            got = predict_many(frame)["latency_us"].to_numpy()
            ok = np.allclose(got, [single[p] for p in picks]) and list(predict_many(frame).index) == index
            tally["agree" if ok else "wrong"] += 1
        except Exception as exc:  # noqa: BLE001 - counted, not hidden
            tally["crash"] += 1
            print("index probe crash:", exc, file=sys.stderr)
    return {"probe": "mixed-op frames, odd indexes", "cases": 200, **tally}


def columns_frame(rows: list[dict], index: list) -> pd.DataFrame:
    """Rows as a frame with every op's fields filled (a frame cannot leave a field out of one row)."""
    filled = [{"batch": 1, **r} if r["op"] == "gemm" else r for r in rows]
    return pd.DataFrame(filled, index=index)


def probe_model_files() -> dict:
    """Every shipped model file altered, truncated or removed, and manifest edits: one clear error naming the file."""
    from kernelcast.predictors import learned

    tally, examples = Counter(), {}
    edits = [
        ("flip", ".forest.npz"),
        ("truncate", ".forest.npz"),
        ("remove", ".forest.npz"),
        ("drop:check", ".json"),
        ("check-margins", ".json"),
        ("truncate", ".json"),
        ("garbage", ".json"),
        ("drop:covered", ".json"),
        ("drop:files", ".json"),
        ("nan-offset", ".json"),
        ("features", ".json"),
    ]
    for op in ("gemm", "attention", "moe", "collective"):
        if not (learned.MODEL_DIR / f"{op}.json").exists():
            continue
        for how, suffix in edits:
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                for s in learned.MODEL_FILES.values():
                    shutil.copy(learned.MODEL_DIR / f"{op}{s}", folder / f"{op}{s}")
                shutil.copy(learned.MODEL_DIR / f"{op}.json", folder / f"{op}.json")
                _apply(folder / f"{op}{suffix}", how)
                verdict, text = _load_and_predict(learned, op, folder)
                tally[verdict] += 1
                if verdict != "clear-error":
                    examples[f"{op}{suffix}:{how}"] = text
    return {
        "probe": "corrupted model files (4 ops x 11 faults)",
        "cases": sum(tally.values()),
        **tally,
        "examples": examples,
    }


def _apply(path: Path, how: str) -> None:
    if how == "remove":
        path.unlink()
        return
    data = path.read_bytes()
    if how == "flip":
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    elif how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(b"\x00\xff not json")
    else:
        manifest = json.loads(data)
        if how.startswith("drop:"):
            manifest.pop(how.split(":")[1])
        elif how == "nan-offset":
            manifest["conformal"]["offset"] = math.nan
        elif how == "features":
            manifest["features"] = manifest["features"][::-1]
        elif how == "check-margins":
            manifest["check"]["margins"][0][0] += 0.05
        path.write_text(json.dumps(manifest))


def _load_and_predict(learned, op: str, folder: Path) -> tuple[str, str]:
    learned._load.cache_clear()
    try:
        model = learned.load_model(op, folder)
        if model is None:
            return "silent", "no model"
        return "silent", "served"
    except learned.ModelFileError as exc:
        return ("clear-error" if str(folder) in str(exc) else "unnamed-error"), str(exc)[:200]
    except Exception as exc:  # noqa: BLE001 - counted as a crash
        return "crash", f"{type(exc).__name__}: {exc}"[:200]
    finally:
        learned._load.cache_clear()


CLI_CASES = [
    ["predict", "op=gemm", "gpu=H200", "dtype=bf16", "backend=cublas", "m=0", "n=1", "k=1"],
    ["predict", "op=gemm", "gpu=H200", "dtype=bf16", "backend=cublas", "m=1", "n=1", "k=1", "batch=NaN"],
    ["predict", "op=gemm", "gpu=H200", "dtype=bf16", "backend=cublas", "m=1", "n=1", "k=1", "bacth=8"],
    ["predict", "--file", "/nonexistent/desc.json"],
    ["predict", "op=attention", "gpu=H200"],
    ["predict", "op=gemm", "gpu=H900", "dtype=bf16", "backend=cublas", "m=1", "n=1", "k=1"],
    ["predict", "nokeyvalue"],
    ["layer", "--tp", "0"],
    ["layer", "--tokens", "0"],
    ["layer", "--tokens", "a,b"],
    ["layer", "--tp", "3"],
    ["layer", "--context", "-1"],
    ["layer", "--model", "gpt9"],
    ["layer", "--gpus", "H900"],
    ["layer", "--tokens", "1", "--context", "99999999"],
    ["gpus", "H900"],
]


def probe_cli() -> dict:
    """CLI runs with bad flags and values: exit 2 and one line naming the flag or field, never a traceback."""
    tally, examples = Counter(), {}
    exe = Path(sys.executable).with_name("kernelcast")
    for args in CLI_CASES:
        proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)
        clear = proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.count("\n") <= 2
        tally["clear-error" if clear else "crash"] += 1
        if not clear:
            examples[" ".join(args)] = proc.stderr[-300:]
    return {"probe": "CLI bad flags and values", "cases": len(CLI_CASES), **tally, "examples": examples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--json-out", type=Path, default=Path(__file__).parent / "results" / "probe_robustness.json")
    args = ap.parse_args()
    results = [probe_descriptions(args.cases), probe_indexes(), probe_model_files(), probe_cli()]
    print(f"{'probe':<44}{'cases':>7}  outcomes")
    for r in results:
        outcomes = ", ".join(f"{k} {v:,}" for k, v in r.items() if k not in ("probe", "cases", "examples"))
        print(f"{r['probe']:<44}{r['cases']:>7,}  {outcomes}")
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
