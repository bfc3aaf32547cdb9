"""Speed of whole-workload predictions on this machine (issue 14's targets: a 1-layer forward ≤1 s, a whole 80-layer
step ≤2 s): ``predict_module`` on one Hugging Face decoder layer built on meta tensors, and ``predict_model`` for whole
steps (each layer kind captured and predicted once). Each timing is the median of ``--repeats`` warm runs, after one
cold run (imports, model loading) reported beside it. Prints a table, writes benchmarks/results/bench_workloads.json.

    python benchmarks/bench_workloads.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "bench_workloads.json"


def _time(fn, repeats: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    fn()
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t0)
    return cold, statistics.median(warm)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    import kernelcast
    from kernelcast.features import layers

    def one_layer(name: str, phase: str, batch: int, seq: int, context: int):
        def run():
            m = layers.build_model(layers.load_config(name))
            call = layers.layer_call(m, phase, batch, seq, context)
            return kernelcast.predict_module(call.fn, call.args, call.kwargs, gpu="H200")

        return run

    cases = [
        ("predict_module: Llama-3.1-8B layer, prefill 1x2048", one_layer("llama3_8b", "prefill", 1, 2048, 0), 1.0),
        ("predict_module: Mixtral layer, decode 8 x ctx 2048", one_layer("mixtral_8x7b", "decode", 8, 1, 2048), 1.0),
        (
            "predict_model: Llama-3.1-70B (80 layers), decode 32, TP8",
            lambda: kernelcast.predict_model("llama3_70b", gpu="H200", phase="decode", batch=32, context=4096, tp=8),
            2.0,
        ),
        (
            "predict_model: Qwen2.5-72B (80 layers), prefill 1x4096",
            lambda: kernelcast.predict_model("qwen2_5_72b", gpu="H200", phase="prefill", batch=1, seq=4096),
            2.0,
        ),
        (
            "predict_model: DeepSeek-V3 (61 layers, 2 kinds), decode 64, TP8",
            lambda: kernelcast.predict_model("deepseek_v3", gpu="H200", phase="decode", batch=64, context=2048, tp=8),
            2.0,
        ),
    ]
    rows = []
    for name, fn, target in cases:
        cold, warm = _time(fn, args.repeats)
        rows.append({"case": name, "cold_s": cold, "warm_s": warm, "target_s": target, "met": warm <= target})
    print(f"{'case':<66}{'cold s':>8}{'warm s':>8}{'target':>8}")
    for r in rows:
        flag = "" if r["met"] else "  MISSED"
        print(f"{r['case']:<66}{r['cold_s']:>8.2f}{r['warm_s']:>8.2f}{r['target_s']:>8.1f}{flag}")
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps({"repeats": args.repeats, "rows": rows}, indent=1))
    tmp.replace(OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
