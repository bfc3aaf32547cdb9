"""The nightly farm run: plan, Slurm/local fan-out, merge, validate (noise, sentinel drift), retrain, evaluate,
register on an MLflow server, report. ``kernelcast nightly --farm farm.toml`` is its command."""

from kernelcast.pipeline.farm import FarmConfig, load_farm
from kernelcast.pipeline.night import accept, run_night, summary

__all__ = ["FarmConfig", "accept", "load_farm", "run_night", "summary"]
