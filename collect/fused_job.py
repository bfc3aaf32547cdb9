"""Fused kernels on a GPU: Inductor-compiled random fusion graphs and decoder layers, each kernel timed (issue 15).

Worker processes compile (``features.inductor.compile_code``: ``make_fx`` over fake tensors, then Inductor's
``compile_fx``, all CPU, the call CPU serving makes too) in parallel; the
GPU part of each task — the first call (Inductor's runtime autotuning of reduction configs), the timed compiled calls
and the timed eager calls of the same function — runs under one cross-process lock, so no two tasks share the GPU
while one is timed. Timing is the project's CUPTI definition (``layer_job.time_calls``: L2 flushed and the stream
synchronized before each call, kernels of a call between its markers).

One JSON line per task in ``fused.jsonl`` (resumable: a task already there is skipped): the task, Inductor's output
code (its Triton kernels, their launch lines, the extern GEMM/attention calls), per kernel of the compiled call its
name and median/p10/p90 µs over the repeats, the chosen launch config and the compiled binary's registers, spills and
shared memory, the compiled and eager device times, compile seconds, or the error.

Run on a GPU host: ``python3 -m kernelcast.collect.fused_job --out DIR --graphs 0:2500 --budget-s 500``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from kernelcast.collect.layer_job import (
    ARCH2_DECODE,
    ARCH2_MODELS,
    ARCH2_PREFILL,
    ARCH5_DECODE,
    ARCH5_MODELS,
    ARCH5_PREFILL,
    ARCH6_DECODE,
    ARCH6_PREFILL,
    ARCH_MODELS,
)
from kernelcast.features.inductor import compile_code

REPEATS = 5
#: Inductor option sets for the fusion-choice study: the same function compiled under each
FUSION_CHOICES = {
    "default": {},
    "max_fusion_1": {"max_fusion_size": 1},
    "max_fusion_4": {"max_fusion_size": 4},
    "no_epilogue": {"epilogue_fusion": False, "aggressive_fusion": False},
    "aggressive": {"aggressive_fusion": True},
    "realize_early": {"realize_opcount_threshold": 1},
}
LAYER_MODELS = (
    ("llama3_8b", 1),
    ("llama3_70b", 8),
    ("qwen2_5_7b", 1),
    ("mistral_7b_v0_3", 1),
    ("qwen3_8b", 1),
    ("qwen2_5_72b", 8),
    ("mixtral_8x7b", 1),
    ("qwen3_30b_a3b", 1),
)
LAYER_POINTS = (
    ("prefill", 1, 128, 0),
    ("prefill", 1, 512, 0),
    ("prefill", 1, 2048, 0),
    ("prefill", 4, 1024, 0),
    ("prefill", 2, 333, 0),
    ("decode", 1, 1, 512),
    ("decode", 8, 1, 2048),
    ("decode", 32, 1, 1024),
    ("decode", 128, 1, 512),
    ("decode", 16, 1, 8191),
)

#: the hybrid linear-attention / Mamba architectures: their layers failed to compile until ``functional_layer`` took
#: every cache state as an input, so no training set below holds them (``hybrid`` is their test set)
HYBRIDS = frozenset(("qwen3_5_27b", "nemotron3_nano_30b", "qwen3_5_35b_a3b", "nemotron3_super_120b"))
#: compiled layers trained on (sixteenth session): every architecture of the sets above but the hybrids, at seven
#: points no compiled test set uses; the six architectures no set compiled before and DeepSeek-V3 stay out of it
TRAIN_LAYER_MODELS = tuple(
    dict.fromkeys(m for m in LAYER_MODELS + ARCH2_MODELS if m[0] not in HYBRIDS)  # ordered, no repeats
)
TRAIN_LAYER_POINTS = (
    ("prefill", 1, 300, 0),
    ("prefill", 2, 1100, 0),
    ("prefill", 1, 5000, 0),
    ("decode", 4, 1, 700),
    ("decode", 12, 1, 3000),
    ("decode", 40, 1, 900),
    ("decode", 80, 1, 2000),
)
#: a second training pass: the same architectures at seven more points, none a compiled test set uses
TRAIN2_LAYER_POINTS = (
    ("prefill", 1, 96, 0),
    ("prefill", 2, 2500, 0),
    ("prefill", 8, 512, 0),
    ("decode", 2, 1, 1500),
    ("decode", 24, 1, 300),
    ("decode", 64, 1, 800),
    ("decode", 160, 1, 1000),
)
#: a third training pass (sixteenth session, after the first two cut the sealed third set's kernel error 17.6 -> 9.5%)
TRAIN3_LAYER_POINTS = (
    ("prefill", 1, 200, 0),
    ("prefill", 3, 700, 0),
    ("prefill", 1, 1600, 0),
    ("decode", 1, 1, 3000),
    ("decode", 6, 1, 5000),
    ("decode", 20, 1, 1200),
    ("decode", 48, 1, 400),
)
#: a third sealed compiled set, measured before anything trains on the training layers: architectures no compiled
#: set or training pass holds at the first points, and every trained architecture at two points of its own
UNSEEN_LAYER_MODELS = tuple(
    (name, 1) for name in ("gptj_6b", "stablelm_3b", "cohere_command_r", "olmoe_1b_7b", "phi_1_5", "starcoder_15b")
) + (("deepseek_v3", 8),)
ARCH3_LAYER_POINTS = (("prefill", 1, 1200, 0), ("decode", 16, 1, 600))

#: the hybrids' layers, compiled once ``functional_layer`` took every cache state as an input (sixteenth session): a
#: test set of their own at the first points
HYBRID_LAYER_MODELS = tuple((name, 1) for name in sorted(HYBRIDS))

#: a fourth sealed compiled set (nineteenth session): the fifth eager layer set's architectures (Llama 4, Gemma 4,
#: GLM-5, DeepSeek-V3.2, …) at its points, compiled
ARCH5_LAYER_POINTS = tuple(("prefill", b, s, 0) for b, s in ARCH5_PREFILL) + tuple(
    ("decode", b, 1, c) for b, c in ARCH5_DECODE
)
#: a fifth sealed compiled set (twenty-second session): the same architectures at the sixth eager set's points
ARCH6_LAYER_POINTS = tuple(("prefill", b, s, 0) for b, s in ARCH6_PREFILL) + tuple(
    ("decode", b, 1, c) for b, c in ARCH6_DECODE
)

#: --layer-models: the layer tasks of each set, a union of (models × points) products
LAYER_SETS = {
    "fit": ((LAYER_MODELS, LAYER_POINTS),),
    "arch": ((ARCH_MODELS, LAYER_POINTS),),
    "arch2": (
        (
            ARCH2_MODELS,
            tuple(("prefill", b, s, 0) for b, s in ARCH2_PREFILL) + tuple(("decode", b, 1, c) for b, c in ARCH2_DECODE),
        ),
    ),
    "train": ((TRAIN_LAYER_MODELS, TRAIN_LAYER_POINTS),),
    "train2": ((TRAIN_LAYER_MODELS, TRAIN2_LAYER_POINTS),),
    "train3": ((TRAIN_LAYER_MODELS, TRAIN3_LAYER_POINTS),),
    "arch3": ((UNSEEN_LAYER_MODELS, LAYER_POINTS), (TRAIN_LAYER_MODELS, ARCH3_LAYER_POINTS)),
    "hybrid": ((HYBRID_LAYER_MODELS, LAYER_POINTS),),
    "arch5": ((ARCH5_MODELS, ARCH5_LAYER_POINTS),),
    "arch6": ((ARCH5_MODELS, ARCH6_LAYER_POINTS),),
    # Qwen3.5's hybrids at the training points (Nemotron's ran out of memory beside the other compile workers)
    "hybridtrain": (
        (tuple(m for m in HYBRID_LAYER_MODELS if m[0].startswith("qwen3_5")), TRAIN_LAYER_POINTS + TRAIN2_LAYER_POINTS),
    ),
}

#: what names a task (its row adds the measurements to these)
TASK_FIELDS = ("kind", "seed", "box", "choice", "model", "tp", "phase", "batch", "seq", "context")


def task_key(task: dict) -> str:
    return json.dumps({k: task[k] for k in TASK_FIELDS if k in task}, sort_keys=True)


def _build(task: dict, device: str = "cuda"):
    """(function, its tensors, eager call, row extras) of a task, on ``device``."""
    import torch

    from kernelcast.collect import fusion_graphs
    from kernelcast.features import layers

    if task["kind"] == "graph":
        graph = fusion_graphs.random_graph(task["seed"], task["box"])
        fn = fusion_graphs.compile_source(graph.source)
        tensors = fusion_graphs.make_inputs(graph, device, seed=task["seed"])
        return fn, tensors, lambda: fn(*tensors), {"source": graph.source, "inputs": graph.inputs}
    model = layers.build_model(layers.shard(layers.load_config(task["model"]), task["tp"]), device=device)
    with torch.no_grad():
        call = layers.layer_call(model, task["phase"], task["batch"], task["seq"], task["context"])
    fn, tensors = layers.functional_layer(call)

    def eager():
        call.fn(*call.args, **call.kwargs)
        call.after()

    return fn, tensors, eager, {"layer_inputs": call.inputs}


def _kernel_meta(names: list[str]) -> dict:
    """Chosen config, registers, spills and shared memory of the loaded Triton kernels named."""
    from torch._inductor.codecache import PyCodeCache

    out = {}
    for module in reversed(getattr(PyCodeCache, "modules", [])):
        for name in names:
            kernel = getattr(module, name, None)
            if name in out or kernel is None or not getattr(kernel, "launchers", None):
                continue
            launcher = kernel.launchers[0]
            cfg = getattr(launcher, "config", None)
            out[name] = {
                "kwargs": dict(getattr(cfg, "kwargs", {}) or {}),
                "num_warps": getattr(cfg, "num_warps", None),
                "num_stages": getattr(cfg, "num_stages", None),
                "n_regs": getattr(launcher, "n_regs", None),
                "n_spills": getattr(launcher, "n_spills", None),
                "shared": getattr(launcher, "shared", None),
                "candidates": len(getattr(kernel, "configs", []) or []),
            }
        if len(out) == len(names):
            break
    return out


def _per_kernel(segs) -> list[list]:
    """Per kernel position of a call: name, median, p10, p90 µs over the calls (calls must launch the same list)."""
    if len({len(s) for s in segs}) != 1:
        return []
    out = []
    for i in range(len(segs[0])):
        durs = sorted(s[i].dur_ns / 1e3 for s in segs)
        out.append([segs[0][i].name[:200], statistics.median(durs), durs[0], durs[-1]])
    return out


def run_batch(tasks: Sequence[dict], lock) -> list[dict]:
    """Compile each task, then, holding the GPU lock, autotune them and time their compiled and eager calls in one
    profiler session; the rows for ``fused.jsonl``."""
    import torch

    from kernelcast.collect.layer_job import time_calls

    rows, ready = [], []
    for task in tasks:
        row = dict(task)
        row.pop("options", None)
        t0 = time.time()
        try:
            fn, tensors, eager, extra = _build(task)
            row.update(extra)
            compiled, codes = compile_code(fn, tuple(tensors), options=task.get("options"))
            row["compile_s"] = time.time() - t0
            row["code"] = "\n\n# ---- next graph ----\n\n".join(codes)
            ready.append((row, compiled, tensors, eager))
        except Exception as exc:  # noqa: BLE001 - recorded per task
            row["error"] = f"{type(exc).__name__}: {exc}"[:600]
        rows.append(row)
    if not ready:
        return rows
    t0 = time.time()
    with lock, torch.no_grad():
        calls = []
        for row, compiled, tensors, eager in ready:
            try:
                compiled(*tensors)  # loads the kernels and runs Inductor's autotuning of reduction configs
                torch.cuda.synchronize()
                calls += [lambda c=compiled, t=tensors: c(*t), eager]
            except Exception as exc:  # noqa: BLE001 - recorded per task
                row["error"] = f"{type(exc).__name__}: {exc}"[:600]
        ready = [r for r in ready if "error" not in r[0]]
        try:
            timed = time_calls(calls, repeats=REPEATS)
        except Exception as exc:  # noqa: BLE001 - the whole batch's timing failed
            for row, *_ in ready:
                row["error"] = f"timing: {type(exc).__name__}: {exc}"[:600]
            return rows
    for i, (row, *_) in enumerate(ready):
        segs, esegs = timed[2 * i], timed[2 * i + 1]
        row["kernels"] = _per_kernel(segs)
        row["device_us"] = [sum(e.dur_ns for e in s) / 1e3 for s in segs]
        row["eager_device_us"] = [sum(e.dur_ns for e in s) / 1e3 for s in esegs]
        row["eager_kernels"] = [e.name[:120] for e in esegs[-1]]
        row["meta"] = _kernel_meta([k[0] for k in row["kernels"] if k[0].startswith("triton_")])
        row["gpu_batch_s"] = time.time() - t0
    return rows


def _worker(tasks, results, lock, batch: int) -> None:
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import torch

    torch.cuda.init()
    while True:
        try:
            got = [tasks.get(timeout=1.0)]
        except queue.Empty:
            continue
        while got[-1] is not None and len(got) < batch:
            try:
                got.append(tasks.get_nowait())
            except queue.Empty:
                break
        stop = got[-1] is None
        for row in run_batch([t for t in got if t is not None], lock):
            results.put(row)
        torch.cuda.empty_cache()
        if stop:
            return


def plan(
    graphs: tuple[int, int],
    box: str,
    layers: int,
    choices: int,
    layer_set: tuple = LAYER_SETS["fit"],
) -> list[dict]:
    """Tasks: the first ``layers`` decoder layers of ``layer_set`` (its (models, points) products in turn; longest
    compiles first), then graphs; the first ``choices`` graphs also under every FUSION_CHOICES set."""
    tasks = []
    for models, points in layer_set:
        for model, tp in models:
            for phase, batch, seq, context in points:
                task = dict(kind="layer", model=model, tp=tp, phase=phase, batch=batch, seq=seq, context=context)
                tasks.append(task)
    del tasks[layers:]
    for seed in range(*graphs):
        tasks.append(dict(kind="graph", seed=seed, box=box, choice="default"))
    for seed in range(graphs[0], graphs[0] + choices):
        for name, options in FUSION_CHOICES.items():
            if name != "default":
                tasks.append(dict(kind="graph", seed=seed, box=box, choice=name, options=options))
    return tasks


def main(argv: Sequence[str] | None = None) -> int:
    import multiprocessing as mp

    from kernelcast.collect import fusion_graphs

    p = argparse.ArgumentParser(prog="python -m kernelcast.collect.fused_job", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="output folder (resumable)")
    p.add_argument("--graphs", default="0:0", help="seed range lo:hi of random graphs")
    p.add_argument("--box", default="train", choices=tuple(fusion_graphs.BOXES))
    p.add_argument("--layers", type=int, default=0, help="this many decoder layers of LAYER_MODELS × LAYER_POINTS")
    p.add_argument("--choices", type=int, default=0, help="graphs also compiled under every fusion choice")
    p.add_argument(
        "--layer-models",
        default="fit",
        choices=tuple(LAYER_SETS),
        help="fit: LAYER_MODELS; arch: layer_job.ARCH_MODELS; arch2: layer_job.ARCH2_MODELS at its own points; "
        "train, train2, train3: TRAIN_LAYER_MODELS at TRAIN_LAYER_POINTS, TRAIN2_…, TRAIN3_… (trained on); "
        "arch3: the third sealed set; hybrid: the hybrids' layers; hybridtrain: Qwen3.5's at the training points",
    )
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    p.add_argument("--batch", type=int, default=6, help="tasks a worker times in one profiler session")
    p.add_argument("--budget-s", type=float, default=480.0, help="hand out no new task after this many seconds")
    p.add_argument("--grace-s", type=float, default=90.0, help="after the budget, wait this long for tasks in flight")
    p.add_argument("--stall-s", type=float, default=45.0, help="no answer this long: restart the workers")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "fused.jsonl"
    done = set()
    if path.exists():
        done = {task_key(json.loads(line)) for line in path.read_text().splitlines() if line.strip()}
    lo, hi = (int(x) for x in args.graphs.split(":"))
    todo = plan((lo, hi), args.box, args.layers, args.choices, LAYER_SETS[args.layer_models])
    todo = [t for t in todo if task_key(t) not in done]
    t0 = time.time()
    ctx = mp.get_context("spawn")
    got = errors = 0
    with path.open("a") as f:
        while todo and time.time() - t0 < args.budget_s:
            rows, stalled = _pool(ctx, todo, args, t0, f)
            got += len(rows)
            errors += sum("error" in r for r in rows)
            finished = {task_key(r) for r in rows}
            for task in stalled:  # a worker that stops answering may hold the GPU lock: its tasks are recorded
                row = {**{k: v for k, v in task.items() if k != "options"}, "error": "stalled: no answer in time"}
                f.write(json.dumps(row) + "\n")
                finished.add(task_key(task))
            todo = [t for t in todo if task_key(t) not in finished]
            if not stalled:
                break
    print(f"fused: {got} rows ({errors} errors) in {time.time() - t0:.0f} s, {len(todo)} tasks not run", flush=True)
    return 0


def _pool(ctx, todo: list[dict], args, t0: float, f) -> tuple[list[dict], list[dict]]:
    """Run ``todo`` on fresh workers until done, the budget, or a stall (no answer for ``--stall-s``): the rows
    written, and (on a stall) the tasks handed out and never answered."""
    tasks, results, lock = ctx.Queue(), ctx.Queue(), ctx.Lock()
    procs = [
        ctx.Process(target=_worker, args=(tasks, results, lock, args.batch), daemon=True) for _ in range(args.workers)
    ]
    for proc in procs:
        proc.start()
    handed, rows, open_keys = 0, [], {}
    in_flight = 2 * args.workers * args.batch
    last = time.time()
    stalled: list[dict] = []
    while len(rows) < handed or (handed < len(todo) and time.time() - t0 < args.budget_s):
        while handed < len(todo) and handed - len(rows) < in_flight and time.time() - t0 < args.budget_s:
            tasks.put(todo[handed])
            open_keys[task_key(todo[handed])] = todo[handed]
            handed += 1
        if time.time() - t0 > args.budget_s + args.grace_s:
            print(f"fused: {handed - len(rows)} tasks still in flight at the deadline: dropped", flush=True)
            break
        if time.time() - last > args.stall_s:
            stalled = list(open_keys.values())
            print(f"fused: no answer for {args.stall_s:.0f} s: new workers; {len(stalled)} tasks dropped", flush=True)
            break
        try:
            row = results.get(timeout=5.0)
        except queue.Empty:
            if not any(proc.is_alive() for proc in procs):
                print("fused: every worker died", flush=True)
                break
            continue
        last = time.time()
        rows.append(row)
        open_keys.pop(task_key(row), None)
        f.write(json.dumps(row) + "\n")
        f.flush()
        if len(rows) % 50 == 0 or row["kind"] == "layer":
            dev = statistics.median(row["device_us"]) if "device_us" in row else float("nan")
            print(
                f"fused {len(rows)}/{len(todo)} ({time.time() - t0:.0f} s): {row['kind']} "
                f"{row.get('seed', row.get('model'))} {dev:.1f} us {row.get('error', '')[:120]}",
                flush=True,
            )
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.join(timeout=5)
    return rows, stalled


if __name__ == "__main__":
    raise SystemExit(main())
