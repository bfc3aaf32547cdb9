"""`kernelcast nightly --farm farm.toml [--night N]` and `kernelcast nightly accept NIGHT --farm farm.toml`."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "nightly", help="one night on a GPU farm: plan, fan out, merge, validate, train, register"
    )
    p.add_argument("action", nargs="*", help="nothing (run the night) or: accept NIGHT (a quarantined night)")
    p.add_argument("--farm", required=True, help="the farm file (farm.toml)")
    p.add_argument("--night", default=None, help="the night, yyyymmdd (default: today, UTC)")
    p.add_argument("--no-wait", action="store_true", help="return once Slurm has the fan-out (a chained job goes on)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_nightly)


def _nightly(args: argparse.Namespace) -> int:
    from kernelcast.pipeline.farm import load_farm
    from kernelcast.pipeline.night import Stopped, accept, run_night

    cfg, farm_file = load_farm(args.farm), Path(args.farm).resolve()
    if args.action and (args.action[0] != "accept" or len(args.action) != 2):
        raise ValueError(f"nightly takes no action or `accept NIGHT`; got {' '.join(args.action)!r}")
    try:
        if args.action:
            result = accept(cfg, farm_file, args.action[1], progress=not args.json)
        else:
            night = args.night or dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d")
            result = run_night(cfg, farm_file, night, wait=not args.no_wait, progress=not args.json)
    except Stopped as exc:
        print(f"kernelcast nightly: {exc}", file=sys.stderr)
        return 143
    except RuntimeError as exc:  # Slurm refused a submission, shards still short after the last attempt
        print(f"kernelcast nightly: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=1, sort_keys=True, default=str) if args.json else text(result))
    return 0


def _pct(x: Any) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def text(r: dict[str, Any]) -> str:
    """The summary as lines: what ran, where, how long, what changed since the last night."""
    if r.get("status") == "waiting":
        return f"night {r['night']}: waiting on Slurm jobs {' '.join(r['jobs'])} (a chained job goes on)"
    counts, idle = r.get("counts") or {}, r.get("idle") or {}
    lines = [
        f"night {r['night']} of farm {r['farm']}: {r['status']} in {r['seconds']:.1f}s on {r['where']['mode']} "
        f"({r['where']['host']}, {len(r['where']['slurm_jobs'])} Slurm submissions)",
        "  stages: " + ", ".join(f"{s} {t:.1f}s" for s, t in r["stages"].items()),
        f"  rows: {counts.get('rows', 0)} ({counts.get('by_status', {})}); "
        f"worker idle share {_pct(idle.get('idle_share'))}",
    ]
    for group, v in sorted((r.get("noise") or {}).items()):
        lines.append(f"  noise {group}: {v['pairs']} pairs, |Δ| median {_pct(v['median'])}, p90 {_pct(v['p90'])}")
    since = r["since_last_night"]
    lines.append(f"  since night {since['baseline']}:" if since["baseline"] else "  no earlier night to compare with")
    for d in since["drift"]:
        flag = "DRIFT" if d["flagged"] else "ok"
        lines.append(
            f"    {d['gpu']}|{d['backend']}: {d['sentinels']} sentinels, median ratio {d['median_ratio']:.3f} "
            f"(threshold ±{_pct(d['threshold'])}) {flag}; versions changed: {d['versions_changed'] or 'none'}"
        )
    if r["quarantined"] and not r["accepted"]:
        lines.append(f"  QUARANTINED: not trained on until `kernelcast nightly accept {r['night']}`")
    for op, e in (r.get("evaluate") or {}).items():
        scores = {k: _pct(v["candidate"]["mape"]) for k, v in e["scores"].items()}
        lines.append(f"  {op}: candidate MAPE {scores}; promoted: {e['promote']} ({e['reason']})")
    lines.append(f"  MLflow: {r['mlflow']['tracking_uri']} run {r['mlflow']['run_id']}")
    return "\n".join(lines)
