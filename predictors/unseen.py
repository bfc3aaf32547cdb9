"""Answers for a GPU no learned model saw: the learned model from the GPU's spec, where leave-one-GPU-out says it
beats the analytical model.

``kernelcast evaluate --split logo`` trains one model per held-out GPU and writes ``models/<op>.unseen.json``: per
held-out GPU the learned and analytical MAPE, and the 80% interval's coverage when the interval comes from the other
folds' residuals; pooled over all folds, the residual quantiles that make the served interval. A description whose
(GPU, backend, dtype) no training row had — but whose backend and dtype the model knows from other GPUs, on an NVIDIA
GPU — is answered by the learned model with ``in_distribution=False`` and the leave-one-GPU-out figures in its
assumptions. AMD GPUs keep the analytical answer: no AMD row was measured.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kernelcast.features.gpu import get_gpu
from kernelcast.features.ops import get_op

SUFFIX = ".unseen.json"
KEYS = ("op", "split", "dtypes", "folds", "pooled", "data_fingerprint")


def summary_path(op: str, model_dir: Path) -> Path:
    return Path(model_dir) / f"{op}{SUFFIX}"


def read_summary(op: str, model_dir: Path) -> dict | None:
    """The leave-one-GPU-out summary shipped beside ``op``'s model; None when there is none; a bad file is an error."""
    path = summary_path(op, model_dir)
    if not path.exists():
        return None
    try:
        s = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not readable JSON ({exc})") from None
    missing = [k for k in KEYS if not isinstance(s, dict) or k not in s]
    if missing:
        raise ValueError(f"{path}: missing keys {missing}; rerun `kernelcast evaluate --op {op} --split logo`")
    p = s["pooled"]
    for k in ("learned_mape", "analytical_mape", "q_low", "q_high"):
        if not isinstance(p.get(k), (int, float)) or not math.isfinite(p[k]):
            raise ValueError(f"{path}: pooled[{k!r}] must be a finite number; got {p.get(k)!r}")
    return s


@functools.cache
def _nvidia(gpu: str) -> bool:
    return get_gpu(gpu).vendor == "nvidia"


@functools.cache
def _major(gpu: str) -> int | None:
    capability = get_gpu(gpu).cuda_capability
    return capability[0] if capability else None


class UnseenGpuModel:
    """The learned model answering GPUs it never saw for a (backend, dtype) it knows (predictor contract)."""

    needs_learned_features = True

    def __init__(self, model, summary: Mapping[str, Any]):
        self.model = model
        self.summary = summary
        covered = model.manifest["covered"]
        self._covered = frozenset(covered)
        #: "backend|dtype" seen on some GPU -> the compute capabilities (major) of the GPUs it was measured on
        self._measured_on: dict[str, set] = {}
        for c in covered:
            gpu, key = c.split("|", 1)
            self._measured_on.setdefault(key, set()).add(_major(gpu))
        self._known = frozenset(self._measured_on)
        self._same_arch = get_op(model.op).unseen_same_arch

    def _arch_measured(self, gpu: str, key: str) -> bool:
        """Whether the family may answer ``gpu`` for ``key`` ("backend|dtype"): anywhere, or for a family whose
        kernels differ per architecture only where a GPU of its compute capability was measured."""
        return not self._same_arch or _major(gpu) in self._measured_on.get(key, ())

    @property
    def name(self) -> str:
        return f"{self.model.name}:unseen-gpu"

    @property
    def useful(self) -> bool:
        p = self.summary["pooled"]
        return p["learned_mape"] < p["analytical_mape"]

    def _beats_analytical(self, gpu: str) -> bool:
        """A GPU that was a leave-one-GPU-out fold: its own figure decides; any other GPU: the pooled figure."""
        fold = self._folds.get(gpu)
        return fold["learned_mape"] < fold["analytical_mape"] if fold else self.useful

    @functools.cached_property
    def _folds(self) -> dict:
        return {f["gpu"]: f for f in self.summary["folds"]}

    def assumptions(self, op: str | None = None) -> str:
        p, folds = self.summary["pooled"], self.summary["folds"]
        per = ", ".join(f"{f['gpu']} {f['learned_mape']:.1%}" for f in folds)
        worst = max(folds, key=lambda f: f["learned_mape"])
        return (
            f"this GPU is not in the training data for this backend/dtype: learned from its spec; leave-one-GPU-out "
            f"MAPE {p['learned_mape']:.1%} (analytical {p['analytical_mape']:.1%}) over {len(folds)} held-out GPUs "
            f"({', '.join(self.summary['dtypes'])} {'/'.join(self.summary.get('backends', []))} rows; worst "
            f"{worst['gpu']} {worst['learned_mape']:.1%}); 80% interval "
            f"from leave-one-GPU-out residuals (held-out coverage {p.get('coverage', float('nan')):.0%}); "
            f"per held-out GPU: {per}; " + self.model.assumptions(op)
        )

    def covers(self, op: str, cols) -> np.ndarray:
        gpu = np.asarray(cols["gpu"], dtype=object)
        backend = np.asarray(cols["backend"], dtype=object)
        dtype = np.asarray(cols["dtype"], dtype=object)
        ok = np.fromiter(
            (
                f"{g}|{b}|{d}" not in self._covered
                and f"{b}|{d}" in self._known
                and d in self.summary["dtypes"]
                and _nvidia(g)
                and self._arch_measured(g, f"{b}|{d}")
                and self._beats_analytical(g)
                for g, b, d in zip(gpu, backend, dtype)
            ),
            bool,
            len(gpu),
        )
        if not ok.any():
            return ok
        for col, (lo, hi) in self.model.manifest["ranges"].items():
            values = np.asarray(cols[col], dtype=np.float64)
            ok = ok & (values >= lo) & (values <= hi)
        return ok

    def notes(self, op: str, cols: Mapping[str, Any]) -> list[str]:
        """What one row's answer should also say: why a GPU this family's kernels were not measured on the architecture
        of gets no learned answer."""
        if not self._same_arch:  # every architecture is answered: nothing to say (predict_latency's hot path)
            return []
        gpu, backend, dtype = (str(np.atleast_1d(cols[c])[0]) for c in ("gpu", "backend", "dtype"))
        key = f"{backend}|{dtype}"
        if f"{gpu}|{key}" in self._covered or key not in self._known or not _nvidia(gpu):
            return []
        if self._arch_measured(gpu, key):
            return []
        measured = ", ".join(f"sm_{m}x" for m in sorted(m for m in self._measured_on[key] if m is not None))
        return [
            f"no learned answer on {gpu}: {backend} {dtype} was measured on {measured} only, and {op}'s library "
            "kernels differ per architecture (benchmarks/RESULTS.md §33)"
        ]

    def predict_columns(self, op: str, cols, features) -> dict[str, np.ndarray]:
        p50, _, _ = self.model.predict({**cols, **features}, measured=False)
        p = self.summary["pooled"]
        return {
            "latency_us": p50,
            "low_us": p50 * math.exp(p["q_low"]),
            "high_us": p50 * math.exp(p["q_high"]),
            "in_distribution": np.zeros(len(p50), dtype=bool),
        }
