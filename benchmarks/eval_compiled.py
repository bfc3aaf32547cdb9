"""Compile mode (``predict_module(mode="compile")``) against the H200's compiled-call measurements (issue 15).

The measured sets are ``datasets/compiled/kernelcast_h200_sxm_20261201_*_tasks.parquet`` (one row per compiled
call, CUPTI
device time with the L2 flushed before each call). Everything here is predicted on this CPU from meta tensors with
the output code Inductor writes for the H200 here (torch of this host), and nothing is fitted on these sets:

(a) the 80 compiled decoder layers' device time (layers built as the collector built them: ``functional_layer``);
(b) fusion speedup, predicted eager/compile device time against measured eager_device_us/device_us, on the layers
    and on the independent test graphs;
(c) Kendall tau over each fusion-choice graph's 6 Inductor option sets (predicted vs measured totals); also with
    each choice's kernels taken from the GPU's own compile (their sources in datasets/fused/…_choices.parquet), the
    fused model's ranking with this host's codegen out of the way;
(d) kernel grouping: the Triton kernels generated here against those the GPU's compile launched (same names in the
    same order);
(e) seconds for a one-layer compiled prediction, codegen included.

    python benchmarks/eval_compiled.py [--graphs N] [--workers 2] [--set fit|arch|arch2|arch3|hybrid|arch5]

Prints a table and writes benchmarks/results/eval_compiled.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "datasets/compiled"
#: --set: the split each compiled test set's tasks file is named by
SPLITS = {
    "arch": "archlayers",
    "arch2": "archlayers2",
    "arch3": "archlayers3",
    "hybrid": "hybridlayers",
    "arch5": "archlayers5",
}
OUT = ROOT / "benchmarks/results/eval_compiled.json"
GPU = "H200"
MOE = ("mixtral_8x7b", "qwen3_30b_a3b")


def _tasks(name: str) -> pd.DataFrame:
    return pd.read_parquet(DATA / f"kernelcast_h200_sxm_20261201_{name}_tasks.parquet")


def _triton(names) -> list[str]:
    return [n for n in names if str(n).startswith("triton_")]


def _kinds(names) -> list[str]:
    """poi/red/per of each Triton kernel, in order: the grouping without the names' op lists."""
    return [str(n).split("_")[1] for n in _triton(names)]


def _fused_models(p) -> list[str]:
    k = p.kernels
    return sorted(set(k.loc[k["family"] == "fused", "model"].dropna().astype(str)))


def layer_rows(frame: pd.DataFrame | None = None) -> list[dict]:
    """The compiled layers of ``frame`` (default: the eight models' 80) predicted eager and compiled; a layer the GPU
    did not measure is skipped, one whose prediction fails is a row with its error."""
    from kernelcast.features import layers
    from kernelcast.graphs.compiled import predict_codes
    from kernelcast.graphs.inductor import inductor_code
    from kernelcast.graphs.predict import predict_module, zero_row_shares

    models, out = {}, []
    frame = _tasks("layers") if frame is None else frame
    for r in frame.itertuples():
        if r.device_us is None or pd.isna(r.device_us):
            continue
        tp, batch, seq, context = (int(x) for x in (r.tp, r.batch, r.seq, r.context))
        key = (r.model, tp)
        if key not in models:
            models[key] = layers.build_model(layers.shard(layers.load_config(r.model), tp))
        how = layers.replay_inputs(getattr(r, "layer_inputs", None))
        call = layers.layer_call(models[key], r.phase, batch, seq, context, how)
        fn, tensors = layers.functional_layer(call)
        t0 = time.time()
        try:
            shares = zero_row_shares(call.fn, call.args, call.kwargs, GPU)
            comp = predict_codes(inductor_code(fn, tuple(tensors), gpu=GPU), GPU, zero_rows=shares)
        except Exception as exc:  # noqa: BLE001 - recorded per layer
            call.after()
            out.append(
                {"model": r.model, "phase": r.phase, "task": r.task, "error": f"{type(exc).__name__}: {exc}"[:300]}
            )
            continue
        seconds = time.time() - t0
        eager = predict_module(call.fn, call.args, call.kwargs, gpu=GPU)
        call.after()
        measured = json.loads(r.kernels)
        out.append(
            {
                "model": r.model,
                "tp": tp,
                "phase": r.phase,
                "batch": batch,
                "seq": seq,
                "context": context,
                "moe": r.model in MOE,
                "measured_us": float(r.device_us),
                "measured_eager_us": float(r.eager_device_us),
                "device_us": comp.device_us,
                "eager_us": eager.device_us,
                "kernels": int((comp.kernels["model"] != "unmapped").sum()),
                "unmapped": comp.unmapped["note"].tolist(),
                "eager_kernels": len(eager.kernels),
                "measured_kernels": len(measured),
                "grouping_match": _triton(comp.kernels["kernel"]) == _triton(k[0] for k in measured),
                "kinds_match": _kinds(comp.kernels["kernel"]) == _kinds(k[0] for k in measured),
                "triton_here": len(_triton(comp.kernels["kernel"])),
                "triton_gpu": len(_triton(k[0] for k in measured)),
                "fused_models": _fused_models(comp),
                "seconds": seconds,
            }
        )
        print(f"  layer {r.task}: {comp.device_us:,.1f} vs {float(r.device_us):,.1f} us", file=sys.stderr)
    return out


def _graph_row(task: dict) -> dict:
    """One fusion graph predicted eager and compiled (in a worker process)."""
    import torch

    from kernelcast.collect.fusion_graphs import TORCH_DTYPE, compile_source
    from kernelcast.graphs.predict import predict_module

    f = compile_source(task["graph_source"])
    inputs = tuple(
        torch.empty(shape, dtype=getattr(torch, TORCH_DTYPE[dt].split(".")[1]), device="meta")
        for shape, dt in json.loads(task["graph_inputs"])
    )
    row = {k: task[k] for k in ("task", "seed", "choice")}
    row.update(measured_us=float(task["device_us"]), measured_eager_us=float(task["eager_device_us"]))
    try:
        comp = predict_module(f, inputs, gpu=GPU, mode="compile", options=task.get("options"))
        eager = predict_module(f, inputs, gpu=GPU)
    except Exception as exc:  # noqa: BLE001 - recorded per graph
        return {**row, "error": f"{type(exc).__name__}: {exc}"[:300]}
    measured = json.loads(task["kernels"])
    row.update(
        device_us=comp.device_us,
        eager_us=eager.device_us,
        unmapped=len(comp.unmapped) + len(eager.unmapped),
        grouping_match=_triton(comp.kernels["kernel"]) == _triton(k[0] for k in measured),
        kinds_match=_kinds(comp.kernels["kernel"]) == _kinds(k[0] for k in measured),
        fused_models=_fused_models(comp),
        gpu_kernels=[k[0] for k in measured],
        predicted_kernels=[
            [k, None if pd.isna(v) else float(v)] for k, v in zip(comp.kernels["kernel"], comp.kernels["latency_us"])
        ],
    )
    return row


def graph_rows(frame: pd.DataFrame, workers: int, options: bool = False) -> list[dict]:
    from kernelcast.collect.fused_job import FUSION_CHOICES

    tasks = []
    for r in frame.to_dict(orient="records"):
        tasks.append({**r, "options": FUSION_CHOICES[r["choice"]] if options else None})
    if workers <= 1:
        return [_graph_row(t) for t in tasks]
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(workers) as pool:
        return pool.map(_graph_row, tasks, chunksize=8)


def _ape(pred, meas) -> np.ndarray:
    pred, meas = np.asarray(pred, dtype=float), np.asarray(meas, dtype=float)
    return np.abs(pred - meas) / meas


def _stats(pred, meas) -> dict:
    a = _ape(pred, meas)
    return {"n": len(a), "median_ape": float(np.median(a)), "p90_ape": float(np.quantile(a, 0.9))}


def summarize(lay: list[dict], test: list[dict], choices: list[dict], timing: dict) -> dict:
    from scipy.stats import kendalltau

    L = pd.DataFrame(lay)
    out: dict = {"gpu": GPU, "layers": {}, "speedup": {}, "choices": {}, "grouping": {}, "timing": timing}
    out["layers"]["all"] = _stats(L["device_us"], L["measured_us"])
    for key, grp in [*L.groupby(["model", "phase"]), *L.groupby("phase"), *L.groupby("moe")]:
        name = key if isinstance(key, str) else "/".join(str(k) for k in key) if isinstance(key, tuple) else str(key)
        if isinstance(key, (bool, np.bool_)):
            name = "moe" if key else "dense"
        out["layers"][name] = _stats(grp["device_us"], grp["measured_us"])
    out["layers"]["unmapped_rows"] = int(sum(len(u) for u in L["unmapped"]))
    out["layers"]["kernels_compile_vs_eager"] = {
        "compile_median": float(L["kernels"].median()),
        "eager_median": float(L["eager_kernels"].median()),
    }
    out["speedup"]["layers"] = _stats(L["eager_us"] / L["device_us"], L["measured_eager_us"] / L["measured_us"])
    T = pd.DataFrame([r for r in test if "error" not in r])
    out["speedup"]["test_graphs"] = _stats(T["eager_us"] / T["device_us"], T["measured_eager_us"] / T["measured_us"])
    out["test_graphs"] = {
        "n": len(test),
        "errors": [r["error"] for r in test if "error" in r][:10],
        "n_errors": sum("error" in r for r in test),
        "compile_device": _stats(T["device_us"], T["measured_us"]),
        "eager_device": _stats(T["eager_us"], T["measured_eager_us"]),
        "unmapped_rows": int(T["unmapped"].sum()),
    }
    C = pd.DataFrame([r for r in choices if "error" not in r])
    taus, flat, flat_quiet = [], 0, 0
    for _, grp in C.groupby("seed"):
        if len(grp) < 2:
            continue
        tau = kendalltau(grp["device_us"], grp["measured_us"]).statistic
        if np.isnan(tau):
            flat += 1  # all option sets predicted equal (the same code): right if the measured spread is noise
            flat_quiet += bool(grp["measured_us"].max() / grp["measured_us"].min() < 1.05)
        else:
            taus.append(float(tau))
    # the same, with the option sets whose GPU compile launched the same kernels taken as one (their measured
    # totals differ by noise only): mean measured and mean predicted per distinct kernel list
    ctaus, same_code, same_kinds = [], [], []
    for _, grp in C.groupby("seed"):
        tau = distinct_lists_tau(grp, grp["gpu_kernels"].map(tuple), "device_us", "measured_us")
        if tau is not None:
            ctaus.append(tau)
            # every choice's kernels generated here named as the GPU's: the ranking free of the two torch versions'
            # codegen differences (this host's Inductor against the GPU host's)
            same_code.append(bool(grp["grouping_match"].all()))
            # the same kernel kinds in the same order, names aside (torch 2.13 names an online softmax's kernels
            # without the exp and sub torch 2.11 lists)
            same_kinds.append(bool(grp["kinds_match"].all()))
    out["choices"] = {
        "distinct_code_graphs": len(ctaus),
        "mean_tau_distinct_code": float(np.mean(ctaus)) if ctaus else float("nan"),
        "distinct_code_graphs_generated_alike": int(sum(same_code)),
        "mean_tau_distinct_code_generated_alike": (
            float(np.mean([t for t, ok in zip(ctaus, same_code) if ok])) if any(same_code) else float("nan")
        ),
        "distinct_code_graphs_same_kinds": int(sum(same_kinds)),
        "mean_tau_distinct_code_same_kinds": (
            float(np.mean([t for t, ok in zip(ctaus, same_kinds) if ok])) if any(same_kinds) else float("nan")
        ),
        "graphs": int(C["seed"].nunique()),
        "mean_tau": float(np.mean(taus)) if taus else float("nan"),
        "median_tau": float(np.median(taus)) if taus else float("nan"),
        "graphs_with_tau": len(taus),
        "graphs_all_predicted_equal": flat,
        "of_those_measured_within_5pct": flat_quiet,
        "total_device": _stats(C["device_us"], C["measured_us"]),
        "errors": int(sum("error" in r for r in choices)),
    }
    out["grouping"] = {
        "layers": float(L["grouping_match"].mean()),
        "layers_same_count": float((L["triton_here"] == L["triton_gpu"]).mean()),
        "layers_same_kinds": float(L["kinds_match"].mean()),
        "test_graphs": float(T["grouping_match"].mean()),
        "test_graphs_same_kinds": float(T["kinds_match"].mean()),
        "choices": float(C["grouping_match"].mean()),
        "choices_same_kinds": float(C["kinds_match"].mean()),
    }
    out["fused_models"] = sorted({m for rows in (lay, test, choices) for r in rows for m in r.get("fused_models", [])})
    return out


def distinct_lists_tau(grp: pd.DataFrame, lists: pd.Series, predicted: str, measured: str) -> float | None:
    """Kendall tau of one graph's fusion choices with the choices whose GPU compile launched the same kernel list
    taken as one (mean predicted and measured per list: their measured totals differ by noise only); 0 where every
    list is predicted alike, None for a graph whose choices all launched one list."""
    from scipy.stats import kendalltau

    agg = grp.groupby(lists)[[predicted, measured]].mean()
    if len(agg) < 2:
        return None
    tau = kendalltau(agg[predicted], agg[measured]).statistic
    return 0.0 if np.isnan(tau) else float(tau)


def gpu_sources_tau() -> dict:
    """Kendall tau over the fusion choices (collapsed to the GPU's distinct kernel lists, as ``summarize``) with each
    choice's total predicted from the kernels the GPU's compile launched (their descriptions and sources as measured,
    datasets/fused/…_choices.parquet): how well the fused model ranks the choices whatever this host's Inductor
    writes. A graph some of whose kernels have no fused row is left out."""
    from kernelcast import predict_many
    from kernelcast.features.desc import op_fields

    kernels = pd.read_parquet(ROOT / "datasets/fused/kernelcast_h200_sxm_20261201_choices.parquet")
    kernels = kernels[kernels["status"] == "ok"]
    fields = [c for c in op_fields("fused") if c in kernels and c != "config"]
    kernels = kernels.assign(predicted=predict_many(kernels[fields])["latency_us"].to_numpy())
    per_call = kernels.groupby("task").agg(
        predicted=("predicted", "sum"), found=("predicted", "size"), launched=("kernels_in_call", "first")
    )
    tasks = _tasks("choices").merge(per_call, left_on="task", right_index=True, how="left")
    tasks["lists"] = tasks["kernels"].map(lambda k: tuple(name for name, *_ in json.loads(k)))
    taus = []
    for _, grp in tasks.groupby("seed"):
        tau = distinct_lists_tau(grp, grp["lists"], "predicted", "device_us")
        if tau is not None and (grp["found"] == grp["launched"]).all():
            taus.append(tau)
    return {
        "distinct_code_graphs_gpu_sources": len(taus),
        "mean_tau_distinct_code_gpu_sources": float(np.mean(taus)) if taus else float("nan"),
    }


def time_layer() -> dict:
    """Seconds for predict_module(mode='compile') of one llama3_8b layer (prefill 1x512), codegen included: the first
    call of the process and a later one."""
    from kernelcast.features import layers
    from kernelcast.graphs.predict import predict_module

    out = {}
    model = layers.build_model(layers.load_config("llama3_8b"))
    for name, (phase, batch, seq, context) in (
        ("first_s", ("prefill", 1, 512, 0)),
        ("warm_s", ("prefill", 1, 512, 0)),
        ("warm_decode_s", ("decode", 8, 1, 2048)),
    ):
        call = layers.layer_call(model, phase, batch, seq, context)
        fn, tensors = layers.functional_layer(call)
        t0 = time.time()
        predict_module(fn, tuple(tensors), gpu=GPU, mode="compile")
        out[name] = time.time() - t0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", type=int, default=0, help="only the first N test graphs (0: all)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument(
        "--set",
        default="fit",
        choices=("fit", *SPLITS),
        help="fit: everything below; arch, arch2, arch3, arch5: only the compiled layers of other architectures (the "
        "first set, the sealed second, third and fourth); hybrid: the hybrid linear-attention and Mamba layers",
    )
    args = ap.parse_args(argv)
    if args.set != "fit":
        return arch_layers(args.set)
    t0 = time.time()
    timing = time_layer()
    lay = layer_rows()
    test_frame = _tasks("test")
    test = graph_rows(test_frame.head(args.graphs) if args.graphs else test_frame, args.workers)
    choices = graph_rows(_tasks("choices"), args.workers, options=True)
    res = summarize(lay, test, choices, timing)
    res["choices"].update(gpu_sources_tau())
    res["wall_s"] = time.time() - t0
    slim = [{k: v for k, v in r.items() if k not in ("gpu_kernels", "predicted_kernels")} for r in (*test, *choices)]
    res["rows"] = {"layers": lay, "test_graphs": slim[: len(test)], "choices": slim[len(test) :]}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=2, default=str))
    print_table(res)
    return 0


def arch_layers(which: str) -> int:
    """``--set arch``: the compiled layers of layer_job.ARCH_MODELS (datasets/compiled/…_archlayers_tasks.parquet);
    ``--set arch2``: the sealed second set's (…_archlayers2_tasks.parquet); ``--set arch3``: the sealed third set's
    (…_archlayers3_tasks.parquet: architectures no training pass compiled, and the trained ones at points of their
    own); ``--set hybrid``: the hybrids' (…_hybridlayers_tasks.parquet); ``--set arch5``: the sealed fourth set's
    (…_archlayers5_tasks.parquet: the fifth eager layer set's architectures, Llama 4, Gemma 4, GLM-5, DeepSeek-V3.2, …).
    None of them fitted on: device time and fusion speedup per architecture; writes
    results/eval_compiled_<set>.json."""
    t0 = time.time()
    (path,) = DATA.glob(f"kernelcast_h200_sxm_*_{SPLITS[which]}_tasks.parquet")
    rows = layer_rows(pd.read_parquet(path))
    ok = [r for r in rows if "error" not in r]
    res = {"gpu": GPU, "layers": {}, "speedup": {}, "errors": [r for r in rows if "error" in r]}
    L = pd.DataFrame(ok)
    res["layers"]["all"] = _stats(L["device_us"], L["measured_us"])
    res["speedup"]["all"] = _stats(L["eager_us"] / L["device_us"], L["measured_eager_us"] / L["measured_us"])
    for model, grp in L.groupby("model"):
        res["layers"][model] = _stats(grp["device_us"], grp["measured_us"])
    res["eager_layers"] = _stats(L["eager_us"], L["measured_eager_us"])
    res["rows"], res["wall_s"] = rows, time.time() - t0
    (OUT.parent / f"eval_compiled_{which}.json").write_text(json.dumps(res, indent=2, default=str))
    print(f"{'set':32s} {'n':>5s} {'median APE':>11s} {'p90 APE':>9s}")
    for name, s in (
        *(("layer device " + k, v) for k, v in res["layers"].items()),
        ("eager device", res["eager_layers"]),
        ("speedup", res["speedup"]["all"]),
    ):
        print(f"{name:32s} {s['n']:5d} {s['median_ape']:11.1%} {s['p90_ape']:9.1%}")
    print(
        f"{len(res['errors'])} layers not predicted: "
        + "; ".join(f"{e['task']}: {e['error'][:80]}" for e in res["errors"][:5])
    )
    print(f"(total {res['wall_s']:.0f} s)")
    return 0


def print_table(res: dict) -> None:
    print(f"compile mode on {res['gpu']}: fused model(s) used: {', '.join(res['fused_models'])}")
    print(f"{'set':32s} {'n':>5s} {'median APE':>11s} {'p90 APE':>9s}")
    for name, s in res["layers"].items():
        if isinstance(s, dict) and "median_ape" in s:
            print(f"{'layer device ' + name:32s} {s['n']:5d} {s['median_ape']:11.1%} {s['p90_ape']:9.1%}")
    for name, s in res["speedup"].items():
        print(f"{'speedup ' + name:32s} {s['n']:5d} {s['median_ape']:11.1%} {s['p90_ape']:9.1%}")
    for name in ("compile_device", "eager_device"):
        s = res["test_graphs"][name]
        print(f"{'test graphs ' + name:32s} {s['n']:5d} {s['median_ape']:11.1%} {s['p90_ape']:9.1%}")
    c = res["choices"]
    print(
        f"fusion choices: mean Kendall tau {c['mean_tau']:.3f} (median {c['median_tau']:.3f}) over "
        f"{c['graphs_with_tau']} graphs; {c['graphs_all_predicted_equal']} graphs with all 6 predicted equal "
        f"({c['of_those_measured_within_5pct']} of them measured within 5%)"
    )
    print(
        f"  collapsed to the GPU's distinct kernel lists: mean tau {c['mean_tau_distinct_code']:.3f} over "
        f"{c['distinct_code_graphs']} graphs whose option sets compiled differently on the GPU; "
        f"{c['mean_tau_distinct_code_generated_alike']:.3f} over the {c['distinct_code_graphs_generated_alike']} "
        "of them whose every choice generated here the GPU's kernels; "
        f"{c['mean_tau_distinct_code_same_kinds']:.3f} over the {c['distinct_code_graphs_same_kinds']} whose kernels "
        f"here are the GPU's kinds in its order; {c['mean_tau_distinct_code_gpu_sources']:.3f} over "
        f"{c['distinct_code_graphs_gpu_sources']} with the GPU's own kernels predicted"
    )
    g = res["grouping"]
    print(
        f"kernel grouping (same Triton kernels as the GPU's compile): layers {g['layers']:.1%}, test graphs "
        f"{g['test_graphs']:.1%}, choices {g['choices']:.1%}; same kernel kinds in order: layers "
        f"{g['layers_same_kinds']:.1%}, test graphs {g['test_graphs_same_kinds']:.1%}, "
        f"choices {g['choices_same_kinds']:.1%}"
    )
    t = res["timing"]
    print(f"one-layer compiled prediction: first {t['first_s']:.2f} s, warm {t['warm_s']:.2f} s")
    errors, unmapped = res["test_graphs"]["n_errors"], res["layers"]["unmapped_rows"]
    print(f"test graphs errors: {errors}; layer unmapped rows: {unmapped}")
    print(f"(total {res['wall_s']:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
