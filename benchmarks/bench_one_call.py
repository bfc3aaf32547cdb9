"""One warm ``predict_latency`` call against another revision, in one run: p50 per description on each.

Usage: python benchmarks/bench_one_call.py --baseline-python PY [--calls 2000] [--rounds 3] [--only TEXT]
       [--json-out PATH]
``PY``: an interpreter whose installed kernelcast is the other revision (as bench_vs_aiconfigurator.py's
``--baseline-python``); this interpreter's kernelcast is the other side. Each is timed in its own subprocess, the two
alternating ``rounds`` times per description; a side's figure is the median of its rounds' p50s. Only the ratio within
one run means anything on a shared machine (two runs on the dev machine put one call's ratio at 0.58× and 1.18×
with one round each).
Prints a table; writes JSON (default benchmarks/results/bench_one_call.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_vs_aiconfigurator import installed_revision  # noqa: E402

HERE = Path(__file__).resolve().parents[1]
ATTENTION = {"op": "attention", "dtype": "bf16", "batch": 1, "heads_q": 32, "heads_kv": 8, "head_dim": 128}
#: representative learned descriptions: name -> description
DESCRIPTIONS = {
    "gemm cublas H200 4096x4096x4096": {
        "op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "cublas", "m": 4096, "n": 4096, "k": 4096,
    },
    "gemm triton H200 2048x4096x4096 (config)": {
        "op": "gemm", "gpu": "H200", "dtype": "bf16", "backend": "triton", "m": 2048, "n": 4096, "k": 4096,
        "config": {"block_m": 128, "block_n": 128, "block_k": 64, "group_m": 8, "num_warps": 8, "num_stages": 3,
                   "split_k": 1},
    },
    "attention flash H100 prefill 4096 causal": {
        **ATTENTION, "gpu": "H100", "backend": "flash", "seq_q": 4096, "seq_kv": 4096, "causal": True,
    },
    "attention flash H200 GQA decode 8192 (split-KV)": {
        **ATTENTION, "gpu": "H200", "backend": "flash", "batch": 4, "seq_q": 1, "seq_kv": 8192, "causal": True,
    },
    "attention cudnn H200 decode 4096": {
        **ATTENTION, "gpu": "H200", "backend": "cudnn", "batch": 8, "seq_q": 1, "seq_kv": 4096, "causal": False,
    },
    "attention efficient H100 masked 2048": {
        **ATTENTION, "gpu": "H100", "backend": "efficient", "seq_q": 2048, "seq_kv": 2048, "causal": False,
        "mask": True,
    },
    "moe triton H200 Mixtral 512 tokens (config)": {
        "op": "moe", "gpu": "H200", "dtype": "bf16", "backend": "triton", "tokens": 512, "hidden": 4096,
        "ffn": 14336, "experts": 8, "top_k": 2,
        "config": {"block_m": 64, "block_n": 128, "block_k": 64, "group_m": 8, "num_warps": 4, "num_stages": 3},
    },
    "attention triton H200 prefill 2048 (config)": {
        **ATTENTION, "gpu": "H200", "backend": "triton", "seq_q": 2048, "seq_kv": 2048, "causal": True,
        "config": {"block_m": 128, "block_n": 64, "num_warps": 8, "num_stages": 3},
    },
}  # fmt: skip
#: a fused Inductor kernel with its Triton source, which the GNN answers: the first persistent reduction of the fused
#: model's first independent test file (its source is too long to write here), read only when it is timed
FUSED = "fused inductor H200 persistent reduction (source)"
FUSED_FILE = HERE / "datasets" / "fused" / "kernelcast_h200_sxm_20261201_test.parquet"


def fused_description() -> dict:
    import pandas as pd

    from kernelcast.features.desc import op_fields

    rows = pd.read_parquet(FUSED_FILE)
    row = rows[(rows["status"] == "ok") & (rows["kind"] == "persistent_reduction")].iloc[0]
    return {k: (row[k].item() if hasattr(row[k], "item") else row[k]) for k in op_fields("fused") if k in row}


#: run in the tree's own interpreter: warm p50 (µs) of ``calls`` predict_latency calls of one description
TIMER = """
import json, sys, time
from kernelcast import predict_latency
desc, calls = json.loads(sys.argv[1]), int(sys.argv[2])
answer = predict_latency(desc)
for _ in range(200):
    predict_latency(desc)
times = []
for _ in range(calls):
    t0 = time.perf_counter_ns()
    predict_latency(desc)
    times.append(time.perf_counter_ns() - t0)
times.sort()
print(json.dumps({"p50_us": times[len(times) // 2] / 1e3, "model": answer.model, "latency_us": answer.latency_us}))
"""


def time_python(python: str, desc: dict, calls: int) -> dict:
    out = subprocess.run(
        [python, "-P", "-c", TIMER, json.dumps(desc), str(calls)], capture_output=True, text=True, check=True
    )  # -P: the interpreter's installed kernelcast, never a checkout in the working directory
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline-python", required=True, help="an interpreter whose installed kernelcast is the other revision"
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two sides per description")
    parser.add_argument("--only", default="", help="time only the descriptions whose name contains this text")
    parser.add_argument("--json-out", type=Path, default=HERE / "benchmarks" / "results" / "bench_one_call.json")
    args = parser.parse_args()
    if args.rounds < 1 or args.calls < 1:
        parser.error(f"--rounds and --calls must be >= 1; got {args.rounds}, {args.calls}")
    rows = []
    print(f"{'description':<50} {'base µs':>9} {'this µs':>9} {'speed-up':>8}  same answer (relative move)")
    descriptions = {name: desc for name, desc in DESCRIPTIONS.items() if args.only in name}
    if args.only in FUSED:
        descriptions[FUSED] = fused_description()
    for name, desc in descriptions.items():
        rounds = [
            (time_python(args.baseline_python, desc, args.calls), time_python(sys.executable, desc, args.calls))
            for _ in range(args.rounds)
        ]
        base, this = ({**rounds[0][i], "p50_us": statistics.median(b[i]["p50_us"] for b in rounds)} for i in (0, 1))
        base["rounds_p50_us"], this["rounds_p50_us"] = ([r[i]["p50_us"] for r in rounds] for i in (0, 1))
        same = (base["model"], base["latency_us"]) == (this["model"], this["latency_us"])
        moved = abs(this["latency_us"] / base["latency_us"] - 1)  # float rounding where the arithmetic's order moved
        rows.append(
            {"description": name, "desc": desc, "base": base, "this": this, "same_answer": same, "answer_moved": moved}
        )
        speedup = base["p50_us"] / this["p50_us"]
        print(f"{name:<50} {base['p50_us']:>9.1f} {this['p50_us']:>9.1f} {speedup:>7.2f}×  {same} ({moved:.1e})")
    meta = {"baseline_revision": installed_revision(args.baseline_python),
            "this_revision": installed_revision(sys.executable), "calls": args.calls, "rounds": args.rounds,
            "only": args.only,
            "python": platform.python_version(), "cpus": os.cpu_count(), "load_average": os.getloadavg()}  # fmt: skip
    args.json_out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
