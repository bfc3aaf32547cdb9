"""Whole eager decoder layers: kernelcast's ``predict_module`` against the H200 measurements (issue 14's validation
set, ``datasets/layers/kernelcast_h200_sxm_20261203_layers.jsonl``: 8 models, prefill and decode, eager and CUDA
graph, CUPTI device time and span with the L2 flushed before each call, a host-speed probe beside each repeat).

Each measured point is rebuilt on meta tensors with the same harness the collector used (``features/layers.py``),
predicted on the CPU, and compared: device time (sum of kernels), eager wall span, CUDA-graph span, kernel count.
The host constants of ``graphs/host.py`` were fitted on the FIT models only (``--fit`` refits and prints them); the
table reports both halves. The eager wall span is predicted with each point's measured host probe (median of its
repeats' ``host_probe_us``, passed as ``host_probe_us``) and, beside it, at the reference host speed (no probe).
Prints a table and writes benchmarks/results/eval_layers.json.

    python benchmarks/eval_layers.py [--fit] [--set fit|arch|arch2..arch6|h100_arch4|h100_arch5|h100_arch6]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from kernelcast.collect.layer_job import ARCH2_MODELS, MODELS
from kernelcast.features import layers
from kernelcast.graphs import host
from kernelcast.graphs import predict as gp
from kernelcast.graphs.capture import capture
from kernelcast.graphs.predict import in_sequence, kernel_table, op_steps, predict_capture
from kernelcast.training.evaluate import metrics

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "datasets/layers/kernelcast_h200_sxm_20261203_layers.jsonl"
OUT = ROOT / "benchmarks/results/eval_layers.json"


def _newest(name: str) -> Path:
    """The newest layer file named ``name`` (``{date}`` any collection date), or the name to collect when none is."""
    folder = ROOT / "datasets/layers"
    return max(folder.glob(name.format(date="*")), default=folder / name.format(date="<date>"))


#: ``--set arch``: 15 architectures none of the above is (collect/layer_job.py ARCH_MODELS), every one held out;
#: ``--set arch2``: the sealed second set (ARCH2_MODELS at other points), measured after the choices arch informed;
#: ``--set arch3``: the sealed third set (ARCH3_MODELS: every model above and six more, at five other points);
#: ``--set arch4``: the sealed fourth set (ARCH3_MODELS at five more points, measured after arch3's choices);
#: ``--set arch5``: the fifth (ARCH5_MODELS), the first measured with the inputs each model passes its layers;
#: ``--set arch6``: the sixth, sealed (ARCH5_MODELS at other points); ``--set h100_arch4|h100_arch5|h100_arch6``: the
#: fourth to sixth sets' points on an H100 (every answer there is for a GPU the models never saw measured by this
#: harness)
SETS = {
    "fit": (DATA, OUT),
    "arch": (
        ROOT / "datasets/layers/kernelcast_h200_sxm_20261204_arch_layers.jsonl",
        OUT.with_name("eval_layers_arch.json"),
    ),
    "arch2": (
        ROOT / "datasets/layers/kernelcast_h200_sxm_20261204_arch2_layers.jsonl",
        OUT.with_name("eval_layers_arch2.json"),
    ),
    "arch3": (
        ROOT / "datasets/layers/kernelcast_h200_sxm_20261204_arch3_layers.jsonl",
        OUT.with_name("eval_layers_arch3.json"),
    ),
    "arch4": (
        ROOT / "datasets/layers/kernelcast_h200_sxm_20261204_arch4_layers.jsonl",
        OUT.with_name("eval_layers_arch4.json"),
    ),
    # the fifth set (collect/layer_job.py ARCH5_MODELS, called as each model calls its layers), whenever it is measured
    "arch5": (
        _newest("kernelcast_h200_sxm_{date}_arch5_layers.jsonl"),
        OUT.with_name("eval_layers_arch5.json"),
    ),
    # the sealed fourth set's points measured on an H100 (twenty-second session): no kernelcast row was measured there
    "h100_arch4": (
        _newest("kernelcast_h100_sxm_{date}_arch4_layers.jsonl"),
        OUT.with_name("eval_layers_h100_arch4.json"),
    ),
    # the sixth, sealed (ARCH5_MODELS at ARCH6's points, twenty-second session)
    "arch6": (
        _newest("kernelcast_h200_sxm_{date}_arch6_layers.jsonl"),
        OUT.with_name("eval_layers_arch6.json"),
    ),
    # the fifth and sixth sets' points on an H100 (twenty-fourth session)
    "h100_arch5": (
        _newest("kernelcast_h100_sxm_{date}_arch5_layers.jsonl"),
        OUT.with_name("eval_layers_h100_arch5.json"),
    ),
    "h100_arch6": (
        _newest("kernelcast_h100_sxm_{date}_arch6_layers.jsonl"),
        OUT.with_name("eval_layers_h100_arch6.json"),
    ),
}
#: sets measured on a GPU other than the H200 (the file's name says which)
GPU_OF_SET = {"h100_arch4": "H100", "h100_arch5": "H100", "h100_arch6": "H100"}
ARCH_HYBRID = (
    "qwen3_5_27b",
    "nemotron3_nano_30b",
    "qwen3_5_35b_a3b",
    "nemotron3_super_120b",
)  # linear-attention / Mamba layers (their torch reference paths)
#: models whose eager spans fitted graphs/host.py's constants; the rest are held out
FIT = ("llama3_8b", "qwen2_5_7b", "mixtral_8x7b", "deepseek_v3")


def predictions(data: Path = DATA, gpu: str = "H200") -> list[dict]:
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "eager" in r]
    models: dict = {}
    out = []
    for r in rows:
        key = (r["model"], r["tp"])
        if key not in models:
            models[key] = layers.build_model(layers.shard(layers.load_config(r["model"]), r["tp"]))
        call = layers.layer_call(
            models[key], r["phase"], r["batch"], r["seq"], r["context"], layers.replay_inputs(r.get("layer_inputs"))
        )
        cap = capture(call.fn, call.args, call.kwargs)
        probe = statistics.median(r["eager"]["host_probe_us"])
        eager = predict_capture(cap, gpu, host_probe_us=probe)
        table, fams, _ = kernel_table(cap, gpu)
        lat = table["latency_us"].where(table["model"] != "unmapped", 0.0).astype(float)
        graph = predict_capture(cap, gpu, cuda_graph=True)
        out.append(
            {
                **{k: r[k] for k in ("model", "tp", "phase", "batch", "seq", "context")},
                "measured_device_us": statistics.median(r["eager"]["device_us"]),
                "measured_span_us": statistics.median(r["eager"]["span_us"]),
                "measured_graph_span_us": statistics.median(r["graph"]["span_us"]) if "graph" in r else None,
                "measured_kernels": r["eager"]["kernels"],
                "device_us": eager.device_us,
                "host_probe_us": probe,
                "wall_us": eager.wall_us,
                "nominal_wall_us": predict_capture(cap, gpu).wall_us,
                "graph_wall_us": graph.wall_us,
                "kernels": int((eager.kernels["model"] != "unmapped").sum()),
                "unmapped": int((eager.kernels["model"] == "unmapped").sum()),
                "low_us": eager.low_us,
                "high_us": eager.high_us,
                "wall_low_us": eager.wall_low_us,
                "wall_high_us": eager.wall_high_us,
                "_cap": cap,
                "_table": table,
                "_fams": fams,
                "_steps": op_steps(table, fams, lat),
            }
        )
    return out


def fit_l2(rows: list[dict]) -> None:
    """Grid search of ``graphs.predict.L2_WRITEBACK`` over the FIT models' layer device times (median APE)."""
    fit_rows = [r for r in rows if r["model"] in FIT]
    best = None
    for f in np.arange(0.0, 1.001, 0.05):
        err = []
        for r in fit_rows:
            t = r["_table"].copy()
            in_sequence(t, "H200", float(f))
            err.append(abs(t["latency_us"].where(t["model"] != "unmapped", 0.0).sum() / r["measured_device_us"] - 1))
        score = float(np.median(err))
        if best is None or score < best[0]:
            best = (score, float(f))
    print(f"fit on {', '.join(FIT)}: L2_WRITEBACK={best[1]:.2f} (device median APE {best[0]:.1%})")
    gp.L2_WRITEBACK = best[1]
    for r in rows:
        in_sequence(r["_table"], "H200", best[1])
        lat = r["_table"]["latency_us"].where(r["_table"]["model"] != "unmapped", 0.0).astype(float)
        r["_steps"] = op_steps(r["_table"], r["_fams"], lat)
        r["device_us"] = float(lat.sum())


def fit(rows: list[dict]) -> None:
    """Grid search of the host constants over the FIT models' eager spans: ``OP_US`` per op that launches nothing and
    one scale on every family's ``KERNEL_US``, minimising the median APE (kernel predictions fixed), each point's host
    costs scaled by its probe over ``REFERENCE_PROBE_US`` (set first: the FIT points' median probe)."""
    import itertools

    fit_rows = [r for r in rows if r["model"] in FIT]
    host.REFERENCE_PROBE_US = round(float(np.median([r["host_probe_us"] for r in fit_rows])), 2)
    best = None
    speeds = [host.host_speed(r["host_probe_us"]) for r in fit_rows]
    for op_us, s in itertools.product(np.arange(0.0, 10.01, 0.25), np.arange(0.5, 3.01, 0.05)):
        err = [
            abs(
                host.timeline(
                    [(v * (op_us if f is None else BASE_KERNEL_US.get(f, 12.0) * s), k) for f, k in r["_steps"]]
                )
                / r["measured_span_us"]
                - 1
            )
            for r, v in zip(fit_rows, speeds)
        ]
        score = float(np.median(err))
        if best is None or score < best[0]:
            best = (score, float(op_us), float(s))
    print(
        f"fit on {', '.join(FIT)}: REFERENCE_PROBE_US={host.REFERENCE_PROBE_US}, OP_US={best[1]:.2f}, "
        f"KERNEL_US x{best[2]:.2f} (median APE {best[0]:.1%}); "
        f"KERNEL_US = {{{', '.join(f'{k!r}: {v * best[2]:.1f}' for k, v in BASE_KERNEL_US.items())}}}"
    )
    host.OP_US = best[1]
    host.KERNEL_US.update({k: v * best[2] for k, v in BASE_KERNEL_US.items()})


#: the probe values the fit scales (graphs/host.py's KERNEL_US before any fit)
BASE_KERNEL_US = {"gemm": 21.0, "attention": 32.0, "elementwise": 12.0, "reduction": 14.0, "copy": 13.0, "moe": 25.0}


def _m(rows: list[dict], measured: str, predicted: str) -> dict:
    rows = [r for r in rows if r[measured] is not None]  # a CUDA graph that did not capture has no span
    return metrics(np.array([r[measured] for r in rows]), np.array([r[predicted] for r in rows]))


def fit_wall_band(rows: list[dict]) -> None:
    """``host.WALL_BAND``: the 10th and 90th percentiles of log(measured span / predicted wall time) over the FIT
    models' points, with the probe, at the reference speed and under a CUDA graph — each model's points predicted
    with the host constants fitted on the other three (``fit``), so the band holds a model the constants never saw,
    as the held-out models are (in-sample residuals gave a band that held 52% of their spans)."""
    shipped = (host.REFERENCE_PROBE_US, host.OP_US, dict(host.KERNEL_US))
    logs: dict[str, list[float]] = {"probe": [], "nominal": [], "cuda_graph": []}
    for left_out in FIT:
        fit([r for r in rows if r["model"] != left_out])
        for r in (r for r in rows if r["model"] == left_out):
            walls = {
                "probe": predict_capture(r["_cap"], "H200", host_probe_us=r["host_probe_us"]).wall_us,
                "nominal": predict_capture(r["_cap"], "H200").wall_us,
                "cuda_graph": predict_capture(r["_cap"], "H200", cuda_graph=True).wall_us,
            }
            logs["probe"].append(np.log(r["measured_span_us"] / walls["probe"]))
            logs["nominal"].append(np.log(r["measured_span_us"] / walls["nominal"]))
            if r["measured_graph_span_us"]:
                logs["cuda_graph"].append(np.log(r["measured_graph_span_us"] / walls["cuda_graph"]))
    host.REFERENCE_PROBE_US, host.OP_US = shipped[0], shipped[1]
    host.KERNEL_US.update(shipped[2])
    for name, values in logs.items():
        host.WALL_BAND[name] = tuple(round(float(q), 3) for q in np.quantile(values, [0.1, 0.9]))
    print(f"fit on {', '.join(FIT)}, each model left out in turn: WALL_BAND = {host.WALL_BAND}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fit", action="store_true", help="refit graphs/host.py's constants on the FIT models")
    p.add_argument("--set", default="fit", choices=tuple(SETS), help="fit: the eight models; arch..arch4: others")
    args = p.parse_args(argv)
    if args.fit and args.set != "fit":
        p.error("--fit refits on the FIT models' layers; --set arch/arch2 only scores the other architectures")
    t0 = time.time()
    data, out = SETS[args.set]
    if not data.is_file():
        p.error(f"--set {args.set}: {data} is not measured yet (collect/layer_job.py --models {args.set} collects it)")
    rows = predictions(data, gpu=GPU_OF_SET.get(args.set, "H200"))
    if args.fit:
        fit_l2(rows)
        fit(rows)
        for r in rows:
            r["wall_us"] = predict_capture(r["_cap"], "H200", host_probe_us=r["host_probe_us"]).wall_us
            r["nominal_wall_us"] = predict_capture(r["_cap"], "H200").wall_us
            r["graph_wall_us"] = predict_capture(r["_cap"], "H200", cuda_graph=True).wall_us
        fit_wall_band(rows)
        for r in rows:
            p = predict_capture(r["_cap"], "H200", host_probe_us=r["host_probe_us"])
            r.update(wall_low_us=p.wall_low_us, wall_high_us=p.wall_high_us)
    table = []
    groups = (
        ("fit models", lambda r: r["model"] in FIT),
        ("held-out models", lambda r: r["model"] not in FIT),
        ("all", lambda r: True),
    )
    if args.set != "fit":
        kind = {
            m: "hybrid" if m in ARCH_HYBRID else "moe" if layers.is_moe(layers.load_config(m)) else "dense"
            for m in {r["model"] for r in rows}
        }
        groups = (
            ("dense", lambda r: kind[r["model"]] == "dense"),
            ("moe", lambda r: kind[r["model"]] == "moe"),
            ("hybrid", lambda r: kind[r["model"]] == "hybrid"),
            ("all", lambda r: True),
        )
        # the eight models of the fit set, and the six architectures no earlier set has
        if args.set in ("arch3", "arch4", "h100_arch4"):
            eight = {m for m, _ in MODELS}
            new = eight | {m for m, _ in ARCH2_MODELS}
            groups += (
                ("the eight", lambda r: r["model"] in eight),
                ("six new", lambda r: r["model"] not in new),
            )
    for name, sel in groups:
        sub = [r for r in rows if sel(r)]
        for phase in ("prefill", "decode", "both"):
            s = [r for r in sub if phase == "both" or r["phase"] == phase]
            dev, wall = _m(s, "measured_device_us", "device_us"), _m(s, "measured_span_us", "wall_us")
            nominal = _m(s, "measured_span_us", "nominal_wall_us")
            graph = _m(s, "measured_graph_span_us", "graph_wall_us")
            cover = np.mean([r["low_us"] <= r["measured_device_us"] <= r["high_us"] for r in s])
            wall_cover = np.mean([r["wall_low_us"] <= r["measured_span_us"] <= r["wall_high_us"] for r in s])
            table.append(
                {
                    "models": name,
                    "phase": phase,
                    "n": len(s),
                    "device_median_ape": dev["median_ape"],
                    "device_p90_ape": dev["p90_ape"],
                    "wall_median_ape": wall["median_ape"],
                    "wall_p90_ape": wall["p90_ape"],
                    "nominal_wall_median_ape": nominal["median_ape"],
                    "graph_median_ape": graph["median_ape"],
                    "interval_coverage": float(cover),
                    "interval_width": float(np.median([r["high_us"] / r["low_us"] for r in s])),
                    "wall_interval_coverage": float(wall_cover),
                }
            )
    print(
        f"{'models':<16}{'phase':<9}{'n':>4}  {'device med/p90':>15}  {'wall med/p90 (probe)':>21}  "
        f"{'wall, no probe':>14}  {'graph med':>10}  cover (width)  wall cover"
    )
    for t in table:
        print(
            f"{t['models']:<16}{t['phase']:<9}{t['n']:>4}  {t['device_median_ape']:>6.1%} / {t['device_p90_ape']:>5.1%}"
            f"  {t['wall_median_ape']:>12.1%} / {t['wall_p90_ape']:>5.1%}  {t['nominal_wall_median_ape']:>14.1%}"
            f"  {t['graph_median_ape']:>10.1%}  {t['interval_coverage']:>5.0%} ({t['interval_width']:.2f}x)"
            f"  {t['wall_interval_coverage']:>10.0%}"
        )
    per_model = {}
    for r in rows:
        per_model.setdefault(r["model"], []).append(abs(r["device_us"] / r["measured_device_us"] - 1))
    print("device median APE by model: " + ", ".join(f"{k} {np.median(v):.1%}" for k, v in per_model.items()))
    kdiff = [r["kernels"] - r["measured_kernels"] for r in rows]
    print(
        f"kernel count predicted - measured: median {np.median(kdiff):+.0f}, range {min(kdiff):+d}..{max(kdiff):+d}; "
        f"unmapped ops {sum(r['unmapped'] for r in rows)}; {time.time() - t0:.1f} s"
    )
    for r in rows:
        for k in ("_cap", "_steps", "_table", "_fams"):
            r.pop(k)
    out.write_text(
        json.dumps(
            {
                "host": {
                    "OP_US": host.OP_US,
                    "KERNEL_US": host.KERNEL_US,
                    "REFERENCE_PROBE_US": host.REFERENCE_PROBE_US,
                },
                "l2_writeback": gp.L2_WRITEBACK,
                "table": table,
                "points": rows,
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
