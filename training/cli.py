"""`kernelcast train | evaluate | dashboard`: thin argparse shells over training.run and MLflow's run search."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from kernelcast.features.ops import op_names
from kernelcast.training.splits import SPLITS


def add_parsers(subparsers) -> None:
    """Register train, evaluate and dashboard on the kernelcast CLI's subparsers."""
    for name, helptext in (
        ("train", "train the XGBoost model per op family, log to MLflow, ship a new champion"),
        ("evaluate", "train/test every fold of a split; learned beside analytical"),
    ):
        p = subparsers.add_parser(name, help=helptext)
        p.add_argument("--op", default="all", choices=(*op_names(), "all"))
        if name == "evaluate":
            p.add_argument(
                "--split", default="random", choices=(*SPLITS, "tune"), help="tune: config search's measured regret"
            )
            p.add_argument(
                "--export-unseen",
                action="store_true",
                help="with --split logo (or independent, for a family trained on one GPU whose test files hold "
                "another's rows): ship the summary that lets the learned model answer GPUs it never saw "
                "(predictors/models/<op>.unseen.json)",
            )
        p.add_argument("--source", default=None, choices=("kernelcast", "aiconfigurator"), help="only this row source")
        p.add_argument("--dtype", default=None, help="only rows of this dtype (e.g. bf16)")
        p.add_argument("--backend", default=None, help="only rows of this backend")
        p.add_argument(
            "--max-train-rows",
            type=int,
            default=200_000,
            help="outside (aiconfigurator) training rows per fold, subsampled; our own rows are all kept",
        )
        p.add_argument("--no-mlflow", action="store_true", help="do not log to MLflow (train then always exports)")
        p.add_argument("--json", action="store_true", help="print results as JSON")
        if name == "train":
            p.add_argument(
                "--model-dir",
                default=None,
                help="where a new champion's files are written (default: predictors/models, the shipped models)",
            )
            p.add_argument("--no-gnn", action="store_true", help="ops with a graph model (fused): train only XGBoost")
            p.add_argument(
                "--force-promote",
                action="store_true",
                help="make this run the champion even without a lower MAPE (tagged promotion=forced)",
            )
            p.add_argument(
                "--no-refit",
                action="store_true",
                help="ship the fold's model as scored, not one refitted with our rows of the held-out shapes",
            )
        p.set_defaults(func=_train if name == "train" else _evaluate)
    d = subparsers.add_parser("dashboard", help="per-architecture error table from the MLflow runs")
    d.add_argument("--op", default="all", choices=(*op_names(), "all"))
    d.add_argument("--json", action="store_true", help="print the table as JSON")
    d.set_defaults(func=_dashboard)


def _ops(op: str) -> list[str]:
    """``all``: every family with rows on the dataset card (the trsm and conv families are analytical only: no sweep
    has measured them standalone yet)."""
    if op != "all":
        return [op]
    from kernelcast.training.data import DATASETS, card_files

    return [name for name in op_names() if card_files(DATASETS, name)]


def _configs(args: argparse.Namespace):
    from kernelcast.training.data import SOURCES
    from kernelcast.training.run import RunConfig

    sources = (args.source,) if args.source else SOURCES
    return [
        RunConfig(
            op,
            sources=sources,
            dtype=args.dtype,
            backend=args.backend,
            max_train_rows=args.max_train_rows,
            log_mlflow=not args.no_mlflow,
            force_promote=getattr(args, "force_promote", False),
            refit=not getattr(args, "no_refit", False),
            gnn=not getattr(args, "no_gnn", False),
            export_unseen=getattr(args, "export_unseen", False),
            model_dir=Path(args.model_dir) if getattr(args, "model_dir", None) else None,
        )
        for op in _ops(args.op)
    ]


def _print_table(records: list[dict], columns: list[str], headers: dict[str, str] | None = None) -> None:
    """pandas lays the table out (kernelcast's own printer lives in the face, which training may not import);
    every float here is a percent, but a width (a ratio, its header ending in " x")."""
    import pandas as pd

    frame = pd.DataFrame(records).reindex(columns=columns).rename(columns=headers or {})
    ratios = {c: (lambda x: "—" if x != x else f"{x:.2f}") for c in frame.columns if str(c).endswith(" x")}
    print(frame.to_string(index=False, na_rep="—", float_format=lambda x: f"{x:.1f}", formatters=ratios))


def _side(table: list[dict], group_by: str) -> list[dict]:
    import pandas as pd

    from kernelcast.training.evaluate import side_by_side

    wide = side_by_side(pd.DataFrame(table), group_by).reset_index().rename(columns={"group": group_by})
    return wide.to_dict("records")


def _train(args: argparse.Namespace) -> int:
    from kernelcast.training.run import train

    results = []
    for cfg in _configs(args):
        result = train(cfg)
        results.append(result)
        if not args.json:
            print(
                f"\n{cfg.op}: {result['rows']:,} rows, trained on {result['n_train']:,}, "
                f"{result['seconds']}s; frozen-split coverage raw {result['coverage']['coverage_raw']:.3f} -> "
                f"calibrated {result['coverage']['coverage_calibrated']:.3f}; champion: {result['champion']}; "
                f"exported: {', '.join(result['exported']) or 'no'}"
            )
            _print_side(result["table"], "gpu")
            if "gnn" in result:
                _print_gnn(cfg.op, result["gnn"])
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    return 0


def _print_gnn(op: str, g: dict) -> None:
    """The GNN beside XGBoost and the roofline on the frozen split, per kernel kind, in percent."""
    print(
        f"\n{op} GNN: trained on {g['n_train']:,} rows (the fold's: {g['n_train_fold']:,}) in {g['fit_seconds']}s "
        f"({g['epochs']} epochs, best "
        f"{g['best_epoch']}); early-stopping median APE {100 * g['validation']['median_ape']:.1f}%; serves "
        f"{', '.join(g['serve_kinds']) or 'no kind'}; champion: {g['champion']}; "
        f"exported: {', '.join(g['exported']) or 'no'}"
    )
    rows = [{k: (100 * v if k in ("median_ape", "p90_ape", "mape") else v) for k, v in r.items()} for r in g["by_kind"]]
    headers = {"median_ape": "median APE %", "p90_ape": "p90 APE %", "mape": "MAPE %"}
    _print_table(rows, ["kind", "model", "n", "median_ape", "p90_ape", "mape"], headers)


#: train/evaluate summary columns, in percent, with the README's names
SIDE_COLUMNS = {
    "n": "n",
    "learned_median_ape": "learned median APE %",
    "learned_p90_ape": "learned p90 APE %",
    "analytical_median_ape": "analytical median APE %",
    "analytical_p90_ape": "analytical p90 APE %",
    "learned_mape": "learned MAPE %",
    "learned_coverage": "80% interval coverage %",
    "learned_width": "80% interval width x",
}
#: summary columns that are no fractions (not printed in percent)
PLAIN_COLUMNS = ("n", "learned_width")


def _print_side(rows, by: str) -> None:
    """Learned beside analytical, one line per ``by`` group, errors and coverage in percent, the interval's width."""
    side = [
        {k: (100 * v if k in SIDE_COLUMNS and k not in PLAIN_COLUMNS else v) for k, v in r.items()}
        for r in _side(rows, by)
    ]
    _print_table(side, [by, *SIDE_COLUMNS], {by: by, **SIDE_COLUMNS})


def _evaluate_tune(args: argparse.Namespace) -> int:
    from kernelcast.training.regret import TUNE_SWEEPS, evaluate_tune

    ops = [op for op in _ops(args.op) if op in TUNE_SWEEPS]
    if not ops:
        raise ValueError(f"--split tune: --op must be one of {', '.join(TUNE_SWEEPS)} or all; got {args.op!r}")
    results = [evaluate_tune(op, log_mlflow=not args.no_mlflow) for op in ops]
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    for r in [] if args.json else results:
        print(f"\n{r['op']} tune ({r['sweep']}): {r['shapes']} shapes")
        _print_table(r["table"], ["gpu", "method", "shapes", "mean_regret", "within_5pct", "worst_regret"])
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from kernelcast.training.run import evaluate_split

    if args.split == "tune":
        return _evaluate_tune(args)
    results = []
    for cfg in _configs(args):
        result = evaluate_split(cfg, args.split)
        results.append(result)
        if not args.json:
            print(
                f"\n{cfg.op} {args.split}: {result['rows']:,} rows, {len(result['folds'])} folds, "
                f"{result['seconds']}s; held-out coverage raw {result['coverage']['coverage_raw']:.3f} -> "
                f"calibrated {result['coverage']['coverage_calibrated']:.3f}"
            )
            _print_side(result["by_fold"], "fold")
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    return 0


#: the dashboard's columns and the names the README gives them (errors and coverage in percent, the width a ratio)
DASHBOARD_COLUMNS = {
    "op": "op",
    "gpu": "GPU",
    "split": "split",
    "learned_median_ape_pct": "learned median APE %",
    "learned_p90_ape_pct": "learned p90 APE %",
    "analytical_median_ape_pct": "analytical median APE %",
    "analytical_p90_ape_pct": "analytical p90 APE %",
    "learned_coverage_pct": "80% interval coverage %",
    "learned_width": "80% interval width x",
}
_DASHBOARD_SPLITS = (("random", "train", "frozen random split"), ("logo", "evaluate", "leave this GPU out"))


def dashboard_rows(runs, ops) -> list[dict]:
    """Per op, GPU and split, learned vs analytical median / p90 APE and interval coverage in percent: the latest
    `train` run (the shipped model on its frozen split) and the latest leave-one-GPU-out `evaluate` run."""
    out: dict[tuple, dict] = {}
    for op in ops:
        mine = runs[runs["experiment_name"] == f"kernelcast-{op}"] if "experiment_name" in runs else runs.iloc[0:0]
        for split, kind, label in _DASHBOARD_SPLITS:
            if "tags.split" not in mine or "tags.kind" not in mine:
                continue
            latest = mine[(mine["tags.split"] == split) & (mine["tags.kind"] == kind)].head(1)
            if latest.empty:
                continue
            metrics = {
                k.removeprefix("metrics."): v for k, v in latest.iloc[0].items() if k.startswith("metrics.") and v == v
            }
            pattern = re.compile(
                rf"^{split}\.(?:gpu\.)?([^.]+)\.(learned|analytical)\.(median_ape|p90_ape|coverage|width)$"
            )
            for key, value in metrics.items():
                m = pattern.match(key)
                if not m or m.group(1) in ("frozen", "all"):
                    continue
                plain = m.group(3) == "width"  # a ratio, not a fraction
                column = f"{m.group(2)}_{m.group(3)}" + ("" if plain else "_pct")
                if column in DASHBOARD_COLUMNS:
                    row = out.setdefault((op, m.group(1), split), {"op": op, "gpu": m.group(1), "split": label})
                    row[column] = round(value if plain else 100 * value, 2)
    return [out[k] for k in sorted(out)]


def _dashboard(args: argparse.Namespace) -> int:
    from kernelcast.training import tracking

    ops = _ops(args.op)
    runs = tracking.search(ops)
    rows = dashboard_rows(runs, ops) if not runs.empty else []
    if args.json:
        print(json.dumps({"tracking_uri": tracking.tracking_uri(), "rows": rows}, indent=1, default=str))
        return 0
    print(f"MLflow store: {tracking.tracking_uri()} ({len(runs)} finished runs)")
    if rows:
        _print_table(rows, list(DASHBOARD_COLUMNS), DASHBOARD_COLUMNS)
    else:
        print("no runs yet: `kernelcast train` first")
    return 0
