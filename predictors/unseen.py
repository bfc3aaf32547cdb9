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
    parts = [("pooled", s["pooled"])]
    if "transfer" in s:
        parts.append(("transfer.pooled", s["transfer"].get("pooled", {})))
    for part, p in parts:
        for k in ("learned_mape", "analytical_mape", "q_low", "q_high"):
            if not isinstance(p.get(k), (int, float)) or not math.isfinite(p[k]):
                raise ValueError(f"{path}: {part}[{k!r}] must be a finite number; got {p.get(k)!r}")
    return s


@functools.cache
def _nvidia(gpu: str) -> bool:
    return get_gpu(gpu).vendor == "nvidia"


@functools.cache
def _major(gpu: str) -> int | None:
    capability = get_gpu(gpu).cuda_capability
    return capability[0] if capability else None


class UnseenGpuModel:
    """The learned model answering GPUs it never saw for a (backend, dtype) it knows (predictor contract), two ways:
    on a GPU of an architecture the (backend, dtype) was measured on, the measured GPU's answer moved to it
    (``transfer``, validated on another GPU's measured test rows: a ``heldout-gpu`` summary, or the ``transfer`` part
    of a leave-one-GPU-out one); elsewhere the model from the GPU's spec, validated leave-one-GPU-out."""

    needs_learned_features = True

    def __init__(self, model, summary: Mapping[str, Any]):
        self.model = model
        self.summary = summary
        #: the figures of each path: leave-one-GPU-out (features at the GPU) and held-out measured GPUs (transfer)
        self.logo = summary if summary["split"] == "logo" else None
        self.moved = summary if summary["split"] == "heldout-gpu" else summary.get("transfer")
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
        """Whether a GPU of ``gpu``'s compute capability was measured for ``key`` ("backend|dtype")."""
        return _major(gpu) in self._measured_on.get(key, ())

    @property
    def name(self) -> str:
        return f"{self.model.name}:unseen-gpu"

    @property
    def useful(self) -> bool:
        return self.logo is not None and _beats(self.logo["pooled"])

    def movable(self, gpu: str, backend: str, dtype: str) -> bool:
        """Whether ``transfer`` can answer a row: its GPU unseen for a (backend, dtype) measured on its architecture."""
        key = f"{backend}|{dtype}"
        return f"{gpu}|{key}" not in self._covered and key in self._known and self._arch_measured(gpu, key)

    def _by_transfer(self, gpu: str, key: str, dtype: str) -> bool:
        """A row ``transfer`` answers: a measured GPU of its architecture, and held-out GPUs' rows of its dtype say
        the moved answer beats the analytical one."""
        m = self.moved
        return m is not None and dtype in m["dtypes"] and _beats(m["pooled"]) and self._arch_measured(gpu, key)

    def _by_spec(self, gpu: str, key: str, dtype: str) -> bool:
        """A row the model answers from the GPU's spec: leave-one-GPU-out says it beats the analytical model (the
        GPU's own fold, or pooled), for a family whose kernels carry across architectures or on a measured one."""
        if self.logo is None or dtype not in self.logo["dtypes"]:
            return False
        if self._same_arch and not self._arch_measured(gpu, key):
            return False
        fold = self._folds.get(gpu)
        return _beats(fold) if fold else self.useful

    @functools.cached_property
    def _folds(self) -> dict:
        return {f["gpu"]: f for f in self.logo["folds"]} if self.logo else {}

    def assumptions(self, op: str | None = None) -> str:
        """What the answers say: the leave-one-GPU-out figures, or (a family with transfer only) the held-out GPU's."""
        return self._said(op, self.logo is None)

    def row_assumptions(self, op: str, cols: Mapping[str, Any]) -> str:
        """``assumptions`` for the one row of ``cols``: the figures of the path that answered it."""
        gpu, backend, dtype = (str(np.atleast_1d(cols[c])[0]) for c in ("gpu", "backend", "dtype"))
        return self._said(op, self._by_transfer(gpu, f"{backend}|{dtype}", dtype))

    def _said(self, op: str | None, moved: bool) -> str:
        if moved:
            p, folds = self.moved["pooled"], self.moved["folds"]
            return (
                "this GPU is not in the training data for this backend/dtype: the learned answer on a measured GPU of "
                "its architecture, its SM-side time scaled by SMs x clock, its bytes at this GPU's HBM bandwidth; on "
                f"{', '.join(f['gpu'] for f in folds)}, measured and held out of the model that gave this figure, MAPE "
                f"{p['learned_mape']:.1%} "
                f"(analytical {p['analytical_mape']:.1%}; {', '.join(self.moved['dtypes'])} rows); 80% interval from "
                f"those rows' residuals (cross-fitted coverage {p.get('coverage', float('nan')):.0%}); "
                + self.model.assumptions(op)
            )
        p, folds = self.logo["pooled"], self.logo["folds"]
        per = ", ".join(f"{f['gpu']} {f['learned_mape']:.1%}" for f in folds)
        worst = max(folds, key=lambda f: f["learned_mape"])
        return (
            f"this GPU is not in the training data for this backend/dtype: learned from its spec; leave-one-GPU-out "
            f"MAPE {p['learned_mape']:.1%} (analytical {p['analytical_mape']:.1%}) over {len(folds)} held-out GPUs "
            f"({', '.join(self.logo['dtypes'])} {'/'.join(self.logo.get('backends', []))} rows; worst "
            f"{worst['gpu']} {worst['learned_mape']:.1%}); 80% interval "
            f"from leave-one-GPU-out residuals (held-out coverage {p.get('coverage', float('nan')):.0%}); "
            f"per held-out GPU: {per}; " + self.model.assumptions(op)
        )

    def _paths(self, cols) -> tuple[np.ndarray, np.ndarray]:
        """Per row: answered by ``transfer``, answered from the GPU's spec (neither: not this predictor's)."""
        gpu = np.asarray(cols["gpu"], dtype=object)
        backend = np.asarray(cols["backend"], dtype=object)
        dtype = np.asarray(cols["dtype"], dtype=object)
        moved, spec = np.zeros(len(gpu), dtype=bool), np.zeros(len(gpu), dtype=bool)
        for i, (g, b, d) in enumerate(zip(gpu, backend, dtype)):
            key = f"{b}|{d}"
            if f"{g}|{key}" in self._covered or key not in self._known or not _nvidia(g):
                continue
            moved[i] = self._by_transfer(g, key, d)
            spec[i] = not moved[i] and self._by_spec(g, key, d)
        return moved, spec

    def covers(self, op: str, cols) -> np.ndarray:
        moved, spec = self._paths(cols)
        ok = moved | spec
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
            f"no learned answer on {gpu}: {backend} {dtype} was measured on {measured} only, and {op}'s kernels are "
            "answered from a GPU's spec only on an architecture measured (benchmarks/RESULTS.md §33, §39)"
        ]

    def predict_columns(self, op: str, cols, features) -> dict[str, np.ndarray]:
        moved, _ = self._paths(cols)
        n = len(moved)
        p50, q_low, q_high = np.empty(n), np.empty(n), np.empty(n)
        for mask, pooled in ((moved, (self.moved or {}).get("pooled")), (~moved, (self.logo or {}).get("pooled"))):
            if not mask.any():
                continue
            sub = (lambda d, m=mask: {k: np.asarray(v)[m] for k, v in d.items()}) if not mask.all() else (lambda d: d)
            if mask is moved:
                p50[mask] = self.transfer(op, sub(cols), sub(features))
            else:
                p50[mask] = self.model.predict({**sub(cols), **sub(features)}, measured=False)[0]
            q_low[mask], q_high[mask] = pooled["q_low"], pooled["q_high"]
        own = (self.moved or {}).get("backends_interval", {})
        if own and moved.any():  # a moved row of a backend with its own held-out interval takes it
            backend = np.asarray(cols["backend"], dtype=object)
            for name, q in own.items():
                mine = moved & (backend == name)
                q_low[mine], q_high[mine] = q["q_low"], q["q_high"]
        return {
            "latency_us": p50,
            "low_us": p50 * np.exp(q_low),
            "high_us": p50 * np.exp(q_high),
            "in_distribution": np.zeros(n, dtype=bool),
        }

    def transfer(self, op: str, cols: Mapping[str, Any], features: Mapping[str, Any]) -> np.ndarray:
        """The answer on a GPU of a measured architecture: the learned answer at the measured GPU (``reference``)
        split in two — the share its bytes keep HBM busy at peak (memory floor over the answer, at most all of it),
        which scales by the two GPUs' bandwidths, and the rest (latency, the SMs' work), which scales by their SMs x
        clock. The model's own features at the target scale every row by the bandwidth ratio, where the H100 ran the
        H200's strided copies and reductions at 1.06x their time and its large pointwise kernels at 1.41x
        (benchmarks/RESULTS.md §39)."""
        from kernelcast.features.vector import feature_columns

        gpu = np.asarray(cols["gpu"], dtype=object)
        keys = [f"{b}|{d}" for b, d in zip(np.asarray(cols["backend"], dtype=object), np.asarray(cols["dtype"]))]
        ref = np.asarray([self.reference(str(g), k) for g, k in zip(gpu, keys)], dtype=object)
        ref_cols = {**cols, "gpu": ref}
        ref_features = feature_columns(ref_cols, op, learned=True)
        at_ref, _, _ = self.model.predict({**ref_cols, **ref_features})
        floor_ref = np.asarray(ref_features["memory_floor_us"], dtype=np.float64)
        floor = np.asarray(features["memory_floor_us"], dtype=np.float64)
        memory = np.clip(floor_ref / at_ref, 0.0, 1.0)
        sm_ratio = np.asarray([_sm_clocks(str(r)) / _sm_clocks(str(g)) for r, g in zip(ref, gpu)])
        return at_ref * ((1.0 - memory) * sm_ratio + memory * floor / floor_ref)

    def reference(self, gpu: str, key: str) -> str:
        """The measured GPU a ``transfer`` starts from: one with ``key`` ("backend|dtype") of ``gpu``'s compute
        capability (the first by name)."""
        same = sorted(c.split("|", 1)[0] for c in self._covered if c.split("|", 1)[1] == key)
        return next(g for g in same if _major(g) == _major(gpu))


def _beats(figures: Mapping[str, Any]) -> bool:
    return figures["learned_mape"] < figures["analytical_mape"]


@functools.cache
def _sm_clocks(gpu: str) -> float:
    spec = get_gpu(gpu)
    return spec.sm_count * spec.boost_clock_hz
