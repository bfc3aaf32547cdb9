"""Importers of outside measured data into kernelcast's row schema, and their CLI (`kernelcast import`)."""

from __future__ import annotations

import argparse


def add_parsers(subparsers) -> None:
    """`kernelcast import aiconfigurator [--out DIR] [--systems ...] [--ops ...] [--json]`."""
    imp = subparsers.add_parser("import", help="import outside measured data into kernelcast's schema")
    sources = imp.add_subparsers(dest="source", required=True)
    aic = sources.add_parser("aiconfigurator", help="NVIDIA aiconfigurator-core's perf tables (pip extra 'outside')")
    aic.add_argument("--out", default=None, help="cache folder (default: <repo>/datasets/outside)")
    aic.add_argument("--systems", nargs="+", default=None, help="aiconfigurator system folders (default: all mapped)")
    aic.add_argument("--ops", nargs="+", default=None, choices=("gemm", "attention", "moe", "collective"))
    aic.add_argument("--json", action="store_true", help="print the summary as JSON")
    aic.set_defaults(func=_run_aiconfigurator)


def _run_aiconfigurator(args: argparse.Namespace) -> int:
    from kernelcast.collect.importers import aiconfigurator as aic

    return aic.main(out=args.out, systems=args.systems, ops=args.ops, as_json=args.json)
