"""Kill a real `collect run` (cpu timer: real torch CPU GEMMs) at random points, resume, compare with a clean run.

Each trial starts the runner as a subprocess, waits a random time, sends SIGKILL or SIGTERM to the
parent or to one of its worker processes (worker kills first: the runner restarts them; then the
parent); a last run finishes the plan. ``python tests/kill_trials.py N SEED`` prints the trials.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

GEMM = {"op": "gemm", "gpu": "H200", "dtype": "fp32", "backend": "cublas", "n": 160, "k": 160}
REPO = Path(__file__).resolve().parent.parent


def write_plan(path: Path, count: int = 180) -> Path:
    from kernelcast.collect.plan import make_plan, save_plan

    return save_plan(make_plan([{**GEMM, "m": 100 + m} for m in range(count)], seed=0), path)


def command(plan: Path, out: Path, chunk: int = 4) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kernelcast.collect.cli",
        "collect",
        "run",
        "--plan",
        str(plan),
        "--shard",
        "0/1",
        "--out",
        str(out),
        "--gpus",
        "0,1",
        "--timer",
        "cpu",
        "--chunk",
        str(chunk),
        "--warmup-s",
        "0",
        "--repeats",
        "2",
        "--json",
    ]


def children(pid: int) -> list[int]:
    """The worker processes of ``pid`` (multiprocessing's spawned children, its resource tracker excluded)."""
    try:
        kids = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    out = []
    for kid in kids:
        try:
            cmdline = Path(f"/proc/{kid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline:
            out.append(kid)
    return out


def rows(out: Path) -> list[dict]:
    """The rows in ``out`` now (read while a runner may be replacing a file: one handle per file)."""
    from kernelcast.collect.dataset import read_parquet

    return [
        r
        for f in sorted(out.glob("*/*.parquet"))
        for r in read_parquet(f, ["plan_index", "desc_key", "status", "latency_us"]).to_pylist()
    ]


def _calls_logged(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if '"wall_s"' in line) if log.exists() else 0


def _wait_for_progress(proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    start, end = _calls_logged(log), time.monotonic() + timeout_s
    while proc.poll() is None and _calls_logged(log) == start and time.monotonic() < end:
        time.sleep(0.02)


def _kill(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def _workers(proc: subprocess.Popen, wait_s: float = 5.0) -> list[int]:
    end = time.monotonic() + wait_s
    while proc.poll() is None and time.monotonic() < end:
        pids = children(proc.pid)
        if pids:
            return pids
        time.sleep(0.05)
    return []


def trial(plan: Path, out: Path, rng: random.Random, max_wait_s: float, kills: list[tuple[str, int]]) -> dict:
    """One runner, killed at random points as ``kills`` says ((target, signal), ...), the parent last."""
    proc = subprocess.Popen(command(plan, out), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record = {"kills": [], "rows_before": len(rows(out))}
    for target, sig in kills:
        if rng.random() < 0.3:  # anywhere, start-up included
            time.sleep(rng.uniform(0.1, max_wait_s))
        else:  # while it measures: after its next measuring call is logged
            _wait_for_progress(proc, out / "timing.jsonl", timeout_s=20)
            time.sleep(rng.uniform(0.0, 0.4))
        if proc.poll() is not None:
            break
        pids = _workers(proc) if target == "worker" else [proc.pid]
        hit = bool(pids) and _kill(rng.choice(pids), sig)
        record["kills"].append(
            {"target": target, "signal": signal.Signals(sig).name, "hit": hit, "at_rows": len(rows(out))}
        )
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    record.update(returncode=proc.returncode, rows_after=len(rows(out)))
    if proc.returncode not in (0, 130, 143, -signal.SIGKILL, -signal.SIGTERM):
        record["stderr"] = err[-3000:]
    return record


def kill_schedule(i: int, rng: random.Random) -> list[tuple[str, int]]:
    """Trial ``i``'s kills: 0-3 workers, then the parent; signals rotate so 4 trials cover every pair."""
    sigs = (signal.SIGKILL, signal.SIGTERM)
    workers = [("worker", sigs[(i + k) % 2]) for k in range(1 if i < 4 else rng.randint(0, 3))]
    return workers + [("parent", sigs[(i // 2) % 2])]


def finish(plan: Path, out: Path) -> dict:
    done = subprocess.run(command(plan, out), cwd=REPO, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"the finishing run failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def compare(killed: list[dict], clean: list[dict]) -> dict:
    """Missing / duplicated plan entries of the killed-and-resumed union against one clean run."""
    got = Counter((r["plan_index"], r["desc_key"], r["status"]) for r in killed)
    want = Counter((r["plan_index"], r["desc_key"], r["status"]) for r in clean)
    return {
        "rows": sum(got.values()),
        "clean_rows": sum(want.values()),
        "missing": sorted(k[0] for k in want - got),
        "duplicated": sorted(k[0] for k, n in got.items() if n > 1),
        "unexpected": sorted(k[0] for k in got - want),
    }


def expected(plan: Path) -> list[dict]:
    """What one clean run writes: every plan entry once, ``ok`` (the cpu timer measures every entry here)."""
    from kernelcast.collect.plan import load_plan

    return [{"plan_index": e.index, "desc_key": e.desc.key(), "status": "ok"} for e in load_plan(plan).entries]


def run_trials(tmp: Path, count: int, seed: int, max_wait_s: float = 2.0, clean_run: bool = False) -> dict:
    """``count`` killed runs into one folder, a finishing run, and the union compared with a clean run
    (a real one when ``clean_run``, else what a clean run writes: each entry once, ok)."""
    plan = write_plan(tmp / "plan.jsonl")
    rng, out = random.Random(seed), tmp / "killed"
    trials = [trial(plan, out, rng, max_wait_s, kill_schedule(i, rng)) for i in range(count)]
    last = finish(plan, out)
    if clean_run:
        finish(plan, tmp / "clean")
    clean = rows(tmp / "clean") if clean_run else expected(plan)
    return {"trials": trials, "finish": last, **compare(rows(out), clean)}


if __name__ == "__main__":
    import tempfile

    n, seed = int(sys.argv[1]), int(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        result = run_trials(Path(tmp), n, seed, clean_run=True)
    for t in result.pop("trials"):
        print(json.dumps(t))
    result["finish"] = {k: result["finish"][k] for k in ("already_done", "measured", "restarts")}
    print(json.dumps(result))
