"""Dispatch: the first predictor that covers a row answers it — a learned model where one covers the
op/backend/GPU/sizes, the analytical model everywhere else — and every answer says which."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kernelcast.features import num
from kernelcast.features.desc import parse_desc
from kernelcast.features.ops import get_op
from kernelcast.features.validate import columns_from_records, validate_frame
from kernelcast.features.vector import feature_columns
from kernelcast.predictors.analytical import AnalyticalPredictor

PREDICTOR_CHOICES = ("auto", "analytical")
RESULT_COLUMNS = ("latency_us", "low_us", "high_us", "floor_us", "bound", "model", "in_distribution")
#: what each answer also reports, as ncu and tritonbench print it (``achieved``)
ACHIEVED_COLUMNS = ("achieved_tflops", "achieved_gbps", "roofline_pct")
ANALYTICAL = AnalyticalPredictor()


@dataclass(frozen=True)
class Prediction:
    """One answer: the latency, its interval, the physical floor, and where it came from."""

    latency_us: float
    low_us: float
    high_us: float
    floor_us: float  # the physical floor (roofline; collectives: bytes over link bandwidth)
    bound: str  # compute | memory | latency | link
    model: str  # "learned:<op>@<version>" or "analytical"
    in_distribution: bool  # the learned model saw this backend, GPU, size range and config family
    assumptions: str
    extras: Mapping[str, float] = field(default_factory=dict)  # op-specific numbers (collectives: NCCL's own estimate)
    achieved_tflops: float = float("nan")  # the op's FLOPs over latency_us (NaN: an op without FLOPs)
    achieved_gbps: float = float("nan")  # its minimum bytes over latency_us (collectives: nccl-tests' algbw)
    roofline_pct: float = float("nan")  # floor_us / latency_us in percent: how close to the hardware's limit

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@functools.cache
def _learned(op: str, model_dir: str | None = None):
    """The learned model for ``op`` (shipped, or in ``model_dir``), or None (none there)."""
    try:
        from kernelcast.predictors import learned
    except ImportError:
        return None
    return learned.load_model(op, model_dir)


@functools.cache
def _gnn(op: str, model_dir: str | None = None):
    """The op's shipped graph model (reads its manifest only; torch on first prediction), or None."""
    from kernelcast.predictors import gnn

    return gnn.load_gnn(op, model_dir)


def check_predictor(predictor: Any) -> None:
    if not isinstance(predictor, str) or predictor not in PREDICTOR_CHOICES:
        raise ValueError(f"predictor must be one of {', '.join(PREDICTOR_CHOICES)}; got {predictor!r}")


def predictors_for(op: str, predictor: str, model_dir: str | None = None) -> list:
    """The predictors asked for ``op``, in order: a graph model (GNN) for the rows and kernel kinds it serves, the
    learned model where it saw the (GPU, backend, dtype), the same model on GPUs it did not see where
    leave-one-GPU-out says it beats the analytical model, the analytical model last (it covers everything)."""
    check_predictor(predictor)
    graph = _gnn(op, model_dir) if predictor == "auto" else None
    first = [graph] if graph is not None else []
    model = _learned(op, model_dir) if predictor == "auto" else None
    if model is None:
        return [*first, ANALYTICAL]
    unseen = _unseen(op, model_dir)
    return [*first, model] + ([unseen] if unseen is not None else []) + [ANALYTICAL]


@functools.cache
def _unseen(op: str, model_dir: str | None = None):
    """The unseen-GPU predictor over ``_learned(op, model_dir)`` (built once: it indexes the model's coverage), or
    None where no leave-one-GPU-out summary is shipped."""
    from kernelcast.predictors import unseen

    model = _learned(op, model_dir)
    summary = unseen.read_summary(op, Path(model.model_dir))
    return unseen.UnseenGpuModel(model, summary) if summary is not None else None


def predict_columns(
    cols: Mapping[str, np.ndarray],
    op: str,
    predictor: str = "auto",
    model_dir: str | None = None,
    feats: Mapping[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """``RESULT_COLUMNS`` (and the op's extras) for validated description columns of one op; ``feats``: their
    ``feature_columns(cols, op, learned=True)`` where the caller has them already (config search)."""
    chain = predictors_for(op, predictor, model_dir)
    cols = _with_top_configs(cols, op, predictor, model_dir)
    n = len(np.atleast_1d(cols["gpu"]))
    todo = np.ones(n, dtype=bool)
    claims = []
    for p in chain:
        mine = todo & p.covers(op, cols)
        if mine.any():
            claims.append((p, mine))
            todo &= ~mine
            if not todo.any():  # every row answered: the predictors after it are not asked
                break
    if feats is None:
        feats = feature_columns(cols, op, learned=any(p.needs_learned_features for p, _ in claims))
    analytical_us, bound = get_op(op).analytical(cols, feats)  # every row's bound; the fallback's answer
    out: dict[str, np.ndarray] = {
        "latency_us": np.empty(n),
        "low_us": np.empty(n),
        "high_us": np.empty(n),
        "floor_us": np.atleast_1d(np.asarray(feats["floor_us"], dtype=np.float64)),
        "bound": bound,
        "model": np.empty(n, dtype=object),
        "in_distribution": np.zeros(n, dtype=bool),
    }
    for p, mine in claims:
        whole = mine.all()
        sub = (lambda d: d) if whole else (lambda d, m=mine: {k: np.asarray(v)[m] for k, v in d.items()})
        if p is ANALYTICAL:
            answer = ANALYTICAL.answer(op, sub(cols)["backend"], analytical_us[mine], out["floor_us"][mine])
        else:
            answer = p.predict_columns(op, sub(cols), sub(feats))
        rows = slice(None) if whole else mine  # every row: a slice write (no mask)
        for key in ("latency_us", "low_us", "high_us", "in_distribution"):
            out[key][rows] = answer[key]
        out["model"][rows] = p.name
    for name, feature in get_op(op).extras.items():
        out[name] = np.atleast_1d(np.asarray(feats[feature], dtype=np.float64))
    out.update(achieved(feats, out["latency_us"]))
    return out


def achieved(feats: Mapping[str, np.ndarray], latency_us: np.ndarray) -> dict[str, np.ndarray]:
    """Achieved TFLOP/s and GB/s (the op's ``flops`` and ``bytes`` features over the latency; NaN for an op without
    one) and the share of the roofline reached, floor / latency in percent (columns, or one description's numbers)."""
    missing = num.of(latency_us).full(latency_us, np.nan)
    return {
        "achieved_tflops": feats["flops"] / latency_us / 1e6 if "flops" in feats else missing,  # FLOP/µs / 1e6
        "achieved_gbps": feats["bytes"] / latency_us / 1e3 if "bytes" in feats else missing,  # B/µs / 1e3 = GB/s
        "roofline_pct": 100 * feats["floor_us"] / latency_us,
    }


def _untuned_one(op: str, backend: str, config: str | None) -> bool:
    """One description of a Triton backend that carries no config (answered at the config search's top pick)."""
    return get_op(op).triton_config is not None and backend == "triton" and config is None


def _untuned(cols: Mapping[str, np.ndarray], op: str) -> np.ndarray:
    """Rows of a Triton backend that carry no config (the predictors answer at the config search's top pick)."""
    if get_op(op).triton_config is None or "config" not in cols:
        return np.zeros(len(np.atleast_1d(cols["gpu"])), dtype=bool)
    backend = cols["backend"]
    if getattr(backend, "shape", None) == (1,) and getattr(cols["config"], "shape", None) == (1,):  # one row
        return np.asarray([_untuned_one(op, backend[0], cols["config"][0])])
    backend = np.atleast_1d(np.asarray(cols["backend"], dtype=object))
    return (backend == "triton") & np.equal(np.atleast_1d(np.asarray(cols["config"], dtype=object)), None)


def _with_top_configs(
    cols: Mapping[str, np.ndarray], op: str, predictor: str, model_dir: str | None = None
) -> Mapping[str, np.ndarray]:
    """``cols`` with each untuned Triton row's config set to its top-ranked one (``predictors.configs``)."""
    missing = _untuned(cols, op)
    if not missing.any():
        return cols
    from kernelcast.predictors.configs import best_configs

    config = np.array(cols["config"], dtype=object)
    config[missing] = best_configs({k: np.asarray(v)[missing] for k, v in cols.items()}, op, predictor, model_dir)
    return {**cols, "config": config}


def _one_row(values: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """One description's row (``Desc.to_row``) as columns of one value."""
    cols = {}
    for k, v in values.items():
        cell = np.empty(1, dtype=object if isinstance(v, (str, type(None))) else None)
        cell[0] = v
        cols[k] = cell
    return cols


def _one_description_features(op: str, values: Mapping[str, Any]) -> dict[str, float] | None:
    """The learned features of one description from its Python numbers (``OpSpec.scalar_features``: the same formulas
    as columns, without a numpy call per value); None for an op without them, or where a formula divides by zero
    (numpy's columns say inf there)."""
    if not get_op(op).scalar_features:
        return None
    try:
        return feature_columns(values, op)
    except ZeroDivisionError:
        return None


def _learned_row(chain: list, op: str, values: Mapping[str, Any]) -> Prediction | None:
    """One description's answer in Python numbers, no columns: where the op's features are scalar
    (``OpSpec.scalar_features``), the first predictor of ``chain`` is a learned model that covers the description
    (``covers_row``) and a config says what runs; None for any other, which ``predict_columns`` answers (the same
    answers: tests/test_predict.py holds them to ``predict_many``'s)."""
    spec, model = get_op(op), chain[0]
    if not spec.scalar_features or not hasattr(model, "predict_row") or not model.covers_row(values):
        return None
    if _untuned_one(op, values["backend"], values.get("config")):
        return None  # answered at the config search's top pick
    feats = _one_description_features(op, values)
    if feats is None:
        return None
    try:
        _, bound = spec.analytical(values, feats)
    except ZeroDivisionError:  # numpy's columns say inf there
        return None
    latency, low, high, in_family = model.predict_row(values, feats)
    notes = (n for p in chain if hasattr(p, "notes") for n in p.notes(op, values))
    return Prediction(
        latency,
        low,
        high,
        float(feats["floor_us"]),
        bound,
        model.name,
        in_family,
        "; ".join([model.assumptions(op), *notes]),
        {k: float(feats[feature]) for k, feature in spec.extras.items()},
        **achieved(feats, latency),
    )


def predict_latency(desc: Mapping[str, Any], predictor: str = "auto") -> Prediction:
    """Predict one kernel's device time (µs) from its description (a mapping or a parsed desc).

    ``predictor="auto"`` answers with a learned model where one covers the op/backend/GPU/sizes and
    analytically otherwise; ``"analytical"`` always gives the op's analytical (roofline + waves, or NCCL) answer.
    """
    d = parse_desc(desc)
    chain = predictors_for(d.op, predictor)
    values = d.to_row()
    answer = _learned_row(chain, d.op, values)
    if answer is not None:
        return answer
    row = _one_row(values)
    tuned = _with_top_configs(row, d.op, predictor)
    feats = _one_description_features(d.op, values) if tuned is row else None  # a config search's pick: its own columns
    out = predict_columns(tuned, d.op, predictor, feats=feats)
    name = str(out["model"][0])
    source = next(p for p in chain if p.name == name)
    extras = {k: float(out[k][0]) for k in get_op(d.op).extras}
    if source is ANALYTICAL:
        said = source.assumptions(d.op, d.backend)
    else:  # an unseen-GPU answer says which of its paths gave it
        said = source.row_assumptions(d.op, tuned) if hasattr(source, "row_assumptions") else source.assumptions(d.op)
    assumptions = "; ".join([said, *(n for p in chain if hasattr(p, "notes") for n in p.notes(d.op, tuned))])
    if tuned is not row:
        assumptions += (
            f"; no config given: predicted at the top-ranked config {tuned['config'][0]} of the "
            f"{d.op} config space that fits {d.gpu} (kernelcast.rank_configs)"
        )
    return Prediction(
        float(out["latency_us"][0]),
        float(out["low_us"][0]),
        float(out["high_us"][0]),
        float(out["floor_us"][0]),
        str(out["bound"][0]),
        name,
        bool(out["in_distribution"][0]),
        assumptions,
        extras,
        **{k: float(out[k][0]) for k in ACHIEVED_COLUMNS},
    )


def predict_many(
    descs: pd.DataFrame | Iterable[Mapping[str, Any]], predictor: str = "auto", model_dir: str | None = None
) -> pd.DataFrame:
    """Predict many descriptions at once (any mix of ops); row i of the result answers row i of the input,
    with the input's index (duplicates and all). ``model_dir``: learned models from there instead of the shipped
    ones (the MLflow model serves its own copy of the shipped files this way). A Triton row without a config is
    answered at its top-ranked config (``kernelcast.rank_configs``), as ``predict_latency`` answers it."""
    check_predictor(predictor)  # a bad name fails before any work
    frame = descs if isinstance(descs, pd.DataFrame) else columns_from_records(descs)
    by_op, _ = validate_frame(frame)
    n = len(frame)
    extras = sorted({k for op in by_op for k in get_op(op).extras})
    result = {
        c: np.full(n, np.nan) for c in ("latency_us", "low_us", "high_us", "floor_us", *ACHIEVED_COLUMNS, *extras)
    }
    result.update(
        {
            "bound": np.full(n, None, dtype=object),
            "model": np.full(n, None, dtype=object),
            "in_distribution": np.zeros(n, dtype=bool),
        }
    )
    for op, (pos, cols) in by_op.items():
        out = predict_columns(cols, op, predictor, model_dir)
        for key in result:
            if key in out:
                result[key][pos] = out[key]
    return pd.DataFrame(result, index=frame.index, columns=[*RESULT_COLUMNS, *ACHIEVED_COLUMNS, *extras])
