"""XGBoost latency model, a scikit-learn estimator (``BaseEstimator``: get_params, set_params, clone, repr come
from it): log-efficiency regressor + conformalised p10/p90 quantiles."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from kernelcast.features.vector import TARGET_COLUMNS, categories, feature_names
from kernelcast.predictors.learned import (
    feature_matrix,
    matrix_columns,
    onehot_codes,
    row_offsets,
    source_codes,
    to_latency,
)
from kernelcast.predictors.mlp import blend
from kernelcast.training.splits import bucket, calibration_slice

#: a source gets its own conformal offset (Mondrian calibration) from this many calibration rows on
MIN_SOURCE_CALIBRATION = 100
#: salt splitting the calibration slice (by shape) into the half that fits the error quantiles and the conformal half
QUANTILE_SALT = 0x6B63_7175_616E_7431  # "kcquant1"


def conformal_offset(scores: np.ndarray, coverage: float) -> float:
    """Split-conformal quantile of CQR scores: the ceil((n+1)·coverage)-th smallest (the largest if beyond n)."""
    n = len(scores)
    if n == 0:
        raise ValueError("calibration needs at least one row; got none")
    k = min(n, int(np.ceil((n + 1) * coverage)))
    return float(np.partition(np.asarray(scores, dtype=np.float64), k - 1)[k - 1])


def own_column(op: str, backend: str) -> int:
    """The matrix column that is 1 on ``backend``'s rows (its one-hot ``backend=…`` column)."""
    name = f"backend={backend}"
    columns = matrix_columns(op)
    if name not in columns:
        raise ValueError(f"own_trees: backend must be one of {op!r}'s backends; got {backend!r}")
    return columns.index(name)


def skipped_backends(own_trees: dict | None, shared_skips_own: bool) -> list[str]:
    """The own-tree backends whose rows the shared trees never see (``shared_skips_own``): all of them but those
    whose own trees answer only their measured GPUs (``measured_gpus_only``: the shared trees keep their rows)."""
    return [b for b, own in (own_trees or {}).items() if shared_skips_own and not own.get("measured_gpus_only")]


#: training rows kept with a fitted model, whose margins its exported forest is checked against
CHECK_ROWS = 64


class LatencyRegressor(RegressorMixin, BaseEstimator):
    """Predicts latency_us from ``build_features`` output; the target is log(latency / scale_us).

    ``fit`` trains the point model on every row. The interval is the point model's error: a probe point model fitted
    without a calibration slice (shapes and Triton configs drawn by hash) errs on the slice; the p10/p90 quantile
    model of that error is fitted on half the slice, and the split-conformal (CQR) offsets on the other half make it
    reach ``coverage``.
    """

    def __init__(
        self,
        op: str,
        n_estimators: int = 300,
        max_depth: int = 8,
        learning_rate: float = 0.1,
        subsample: float = 0.8,
        colsample_bytree: float = 0.8,
        min_child_weight: float = 1.0,
        max_bin: int = 256,
        quantile_estimators: int = 40,
        quantile_depth: int = 5,
        quantiles: tuple = (0.1, 0.9),
        coverage: float = 0.8,
        calibration_percent: int = 20,
        n_jobs: int = 2,
        random_state: int = 0,
        own_trees: dict | None = None,
        shared_skips_own: bool = False,
        bag: int = 1,
    ):
        self.op = op  # op family: fixes the feature columns
        self.n_estimators = n_estimators  # boosting rounds of the point model
        self.max_depth = max_depth  # tree depth (interactions of size × GPU × dtype)
        self.learning_rate = learning_rate  # shrinkage per round
        self.subsample = subsample  # row fraction per tree
        self.colsample_bytree = colsample_bytree  # feature fraction per tree
        self.min_child_weight = min_child_weight  # smallest hessian sum in a leaf
        self.max_bin = max_bin  # histogram bins per feature
        self.quantile_estimators = (
            quantile_estimators  # boosting rounds of the quantile model (conformal fixes its bias)
        )
        self.quantile_depth = quantile_depth  # tree depth of the quantile model (small: fast to serve)
        self.quantiles = quantiles  # (low, high) quantile levels before calibration
        self.coverage = coverage  # interval coverage the conformal offset targets
        self.calibration_percent = calibration_percent  # % of shapes held out of the quantile fit for calibration
        self.n_jobs = n_jobs  # CPU threads
        self.random_state = random_state  # seed of row/column subsampling
        # backend -> {max_depth, n_estimators, learning_rate[, colsample_bytree][, measured_gpus_only]}: that
        # backend's rows get point trees of their own, fitted on its rows alone (the shared trees serve the others);
        # exported as one forest, gated on the backend. With ``measured_gpus_only`` the own trees answer only the GPUs
        # the backend was measured on (the forest's route column, ``predictors.learned.route_column``); the shared
        # trees keep its rows and answer it on GPUs no row of it measured, from the spec they learned off every GPU's
        # rows
        self.own_trees = own_trees
        # the shared trees are fitted without the rows of own-tree backends they never answer
        self.shared_skips_own = shared_skips_own
        # point models fitted on the same rows from seeds random_state … random_state + bag - 1 (XGBoost's row and
        # column draws, the networks' initial weights and batches), served as the mean of their margins: on the frozen
        # split's held-out training shapes three seeds' mean beat the best one seed on every attention backend
        # (RESULTS §62-§63)
        self.bag = bag

    def _params(self, seed: int | None = None, **extra) -> dict:
        return {
            "tree_method": "hist",
            "max_depth": self.max_depth,
            "eta": self.learning_rate,
            "subsample": self.subsample,
            "colsample_bytree": self.colsample_bytree,
            "min_child_weight": self.min_child_weight,
            "max_bin": self.max_bin,
            "nthread": self.n_jobs,
            "seed": self.random_state if seed is None else seed,
            **extra,
        }

    def _dmatrix(self, x: np.ndarray, y: np.ndarray, weight: np.ndarray | None):
        import xgboost as xgb

        return xgb.DMatrix(x, label=y, weight=weight, feature_names=matrix_columns(self.op), nthread=self.n_jobs)

    def _validate(self, features: pd.DataFrame, latency_us) -> tuple[np.ndarray, np.ndarray]:
        missing = [c for c in [*feature_names(self.op), *categories(self.op), *TARGET_COLUMNS] if c not in features]
        if missing:
            raise ValueError(f"features must be build_features(frame, {self.op!r}) output; missing {missing[:5]}")
        y = np.asarray(latency_us, dtype=np.float64)
        scale = features["scale_us"].to_numpy(dtype=np.float64)
        if len(y) != len(features) or not (np.isfinite(y) & (y > 0)).all():
            raise ValueError(
                f"latency_us must be {len(features)} positive finite values; got {len(y)} "
                f"with {int((~(np.isfinite(y) & (y > 0))).sum())} bad"
            )
        if not (np.isfinite(scale) & (scale > 0)).all():
            raise ValueError("features['scale_us'] must be positive and finite on every row")
        return feature_matrix(features, self.op), np.log(y / scale)

    def fit(
        self, features: pd.DataFrame, latency_us, shape_hashes=None, sample_weight=None, configs=None
    ) -> LatencyRegressor:
        """Fit on ``build_features`` rows and measured latency; ``shape_hashes`` (of the description without its
        config) and ``configs`` (each row's config text, None for none) pick the calibration slice
        (``splits.calibration_slice``)."""
        import xgboost as xgb

        if not (isinstance(self.bag, (int, np.integer)) and self.bag >= 1):
            raise ValueError(f"bag must be an integer >= 1 (point models averaged); got {self.bag!r}")
        x, target = self._validate(features, latency_us)
        hashes = np.arange(len(x), dtype=np.uint64) if shape_hashes is None else np.asarray(shape_hashes)
        calib, probe_rows = calibration_slice(
            hashes, features["backend"].to_numpy(dtype=object), configs, self.calibration_percent
        )
        if not calib.any() or not probe_rows.any():
            raise ValueError(
                f"calibration needs shapes on both sides; {len(x)} rows, {int(calib.sum())} in calibration, "
                f"{int(probe_rows.sum())} to fit the probe on"
            )
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        self.members_, self.mlps_ = self._fit_point(x, target, w, np.ones(len(x), dtype=bool))
        # The interval is the quantiles of the point model's error, learned where that error is honest: a probe (the
        # same point model fitted on rows sharing no shape or config with the calibration slice) errs on the slice as
        # the served model errs on shapes and configs it never saw. Half of the slice fits the error's p10/p90 (small
        # quantile trees: the error varies with the features far less than latency does), the other half sets the
        # split-conformal offsets.
        probe = self._fit_point(x, target, w, probe_rows)
        rows = np.flatnonzero(calib)
        residual = target[rows] - self._margin(*probe, x[rows])
        half = bucket(hashes[rows], QUANTILE_SALT) < 50
        if half.all() or not half.any():
            raise ValueError(f"the calibration slice needs shapes in both halves; {len(rows)} rows, {int(half.sum())}")
        qparams = self._params(
            objective="reg:quantileerror", quantile_alpha=list(self.quantiles), max_depth=self.quantile_depth
        )
        fit_rows, conf_rows = rows[half], rows[~half]
        self.quantile_booster_ = xgb.train(
            qparams,
            self._dmatrix(x[fit_rows], residual[half], None if w is None else w[fit_rows]),
            self.quantile_estimators,
        )
        q, r = self._quantiles(x[conf_rows]), residual[~half]
        scores = np.maximum(q[:, 0] - r, r - q[:, -1])
        self.conformal_ = self._calibrate(x[conf_rows], scores)
        self.conformal_offset_ = self.conformal_["offset"]
        self.raw_calibration_coverage_ = float(np.mean(scores <= 0))
        self.calibrated_calibration_coverage_ = float(
            np.mean(scores <= row_offsets(x[conf_rows], self.op, self.conformal_))
        )
        self.n_train_, self.n_calibration_ = int(len(x)), len(conf_rows)
        pick = np.random.default_rng(self.random_state).choice(len(x), min(CHECK_ROWS, len(x)), replace=False)
        self.check_x_ = x[np.sort(pick)]  # rows whose XGBoost margins the shipped forest must reproduce
        return self

    def _fit_point(self, x: np.ndarray, target: np.ndarray, w: np.ndarray | None, rows: np.ndarray):
        """The point model on ``rows``, ``bag`` times from successive seeds: each member's (shared trees, each own-tree
        backend's trees on its rows alone), and each network asked for (an own-tree backend's ``mlp``) with every
        member's networks as one (the network's answer is its members' mean)."""
        from kernelcast.training.mlp import merged

        members, nets = [], {}
        for i in range(self.bag):
            booster, own, mlps = self._fit_member(x, target, w, rows, i)
            members.append((booster, own))
            for backend, net in mlps.items():
                nets.setdefault(backend, []).append(net)
        return members, {backend: merged(parts) for backend, parts in nets.items()}

    def _fit_member(self, x: np.ndarray, target: np.ndarray, w: np.ndarray | None, rows: np.ndarray, i: int):
        """Bag member ``i``: the shared trees, each own-tree backend's trees on its rows alone, and the network of each
        own-tree backend that asks for one (``mlp``), on the same rows, from seed ``random_state + i`` (a network of
        several members from ``random_state + i × members``, so no two members share a seed)."""
        import xgboost as xgb

        from kernelcast.training.mlp import DEFAULTS as MLP_DEFAULTS
        from kernelcast.training.mlp import fit_mlp

        seed = self.random_state + i
        own_rows = {backend: rows & (x[:, own_column(self.op, backend)] == 1) for backend in self.own_trees or {}}
        shared = rows.copy()
        for backend in skipped_backends(self.own_trees, self.shared_skips_own):
            shared &= ~own_rows[backend]
        booster = xgb.train(
            self._params(seed, objective="reg:squarederror"),
            self._dmatrix(x[shared], target[shared], None if w is None else w[shared]),
            self.n_estimators,
        )
        own_boosters, mlps = {}, {}
        for backend, params in (self.own_trees or {}).items():
            mine = own_rows[backend]
            if not mine.any():
                continue
            if "mlp" in params:
                net = {k: v for k, v in params["mlp"].items() if k != "weight"}
                net_seed = self.random_state + i * net.get("members", MLP_DEFAULTS["members"])
                mlps[backend] = fit_mlp(
                    x[mine], target[mine], None if w is None else w[mine], net, net_seed, self.n_jobs
                )
            own = {"max_depth": params["max_depth"], "eta": params["learning_rate"]}
            if "colsample_bytree" in params:  # else the shared trees' fraction
                own["colsample_bytree"] = params["colsample_bytree"]
            own_boosters[backend] = xgb.train(
                self._params(seed, objective="reg:squarederror", **own),
                self._dmatrix(x[mine], target[mine], None if w is None else w[mine]),
                params["n_estimators"],
            )
        return booster, own_boosters, mlps

    def _margin(self, members: list, mlps: dict, x: np.ndarray) -> np.ndarray:
        """A point model's margin: the bag members' mean of each row from its backend's own trees where it has them,
        else the shared ones; blended with its backend's network where there is one (``mlp_weight``)."""
        margin = self._tree_margin(members, x)
        for backend, net in mlps.items():
            mine = x[:, own_column(self.op, backend)] == 1
            if mine.any():
                margin[mine] = blend(margin[mine], net.predict(x[mine]), self.mlp_weight(backend))
        return margin

    def _tree_margin(self, members: list, x: np.ndarray) -> np.ndarray:
        total = np.zeros(len(x))
        for booster, own_boosters in members:
            margin = np.asarray(booster.inplace_predict(x), dtype=np.float64)
            for backend, own in own_boosters.items():
                mine = x[:, own_column(self.op, backend)] == 1
                if mine.any():
                    margin[mine] = own.inplace_predict(x[mine])
            total += margin
        return total / len(members)

    def mlp_weight(self, backend: str) -> float:
        """The share of ``backend``'s network in its rows' margin (its own-tree params' ``mlp.weight``)."""
        return float(self.own_trees[backend]["mlp"].get("weight", 0.5))

    def _calibrate(self, x: np.ndarray, scores: np.ndarray) -> dict:
        """Global CQR offset, plus one per source and one per (source, backend) with enough calibration rows: the
        shared quantile trees fit the backends of a mixed model unevenly (cuBLAS's 80% interval covered ~70% of its
        test rows under one offset per source), so each backend is covered as asked, and scarce sources too."""
        codes = source_codes(x, self.op)
        backends = categories(self.op).get("backend", ())
        backend = onehot_codes(x, self.op, "backend") if len(backends) > 1 else None
        by_source, by_backend = {}, {}
        for code, name in enumerate(categories(self.op)["source"]):
            mine = codes == code
            if mine.sum() >= MIN_SOURCE_CALIBRATION:
                by_source[name] = conformal_offset(scores[mine], self.coverage)
            for b, bname in enumerate(backends if len(backends) > 1 else ()):
                cell = mine & (backend == b)
                if cell.sum() >= MIN_SOURCE_CALIBRATION:
                    by_backend[f"{name}/{bname}"] = conformal_offset(scores[cell], self.coverage)
        out = {"offset": conformal_offset(scores, self.coverage), "by_source": by_source}
        return {**out, "by_backend": by_backend} if by_backend else out

    @property
    def routes(self) -> list[str]:
        """The own-tree backends whose trees answer only the GPUs they were measured on: the shipped forest's route
        columns (``predictors.learned.route_column``), in order."""
        own = self.members_[0][1] if hasattr(self, "members_") else {}
        return [b for b in own if self.own_trees[b].get("measured_gpus_only")]

    def forest_input(self, x: np.ndarray) -> np.ndarray:
        """Training-matrix rows as the shipped forest reads them: each route column set as served for a GPU the model
        was trained on (every training row's): 1 on its backend's rows."""
        return np.column_stack([x, *(x[:, own_column(self.op, b)] for b in self.routes)]) if self.routes else x

    def point_margin(self, x: np.ndarray) -> np.ndarray:
        """The served point model's margin (log efficiency)."""
        return self._margin(self.members_, self.mlps_, x)

    def tree_margin(self, x: np.ndarray) -> np.ndarray:
        """The trees' part of ``point_margin`` (what the shipped forest must give back)."""
        return self._tree_margin(self.members_, x)

    def _quantiles(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.quantile_booster_.inplace_predict(x)).reshape(len(x), -1)

    def _check_fitted(self) -> None:
        # scikit-learn's NotFittedError is a ValueError: "This LatencyRegressor instance is not fitted yet. …"
        check_is_fitted(self, "members_")

    def predict(self, features: pd.DataFrame) -> np.ndarray:
        """p50 latency (µs)."""
        return self.predict_interval(features)[0]

    def predict_interval(self, features: pd.DataFrame, calibrated: bool = True):
        """(p50, low, high) in µs; ``calibrated=False`` gives the raw quantile interval."""
        self._check_fitted()
        x = feature_matrix(features, self.op)
        offset = row_offsets(x, self.op, self.conformal_) if calibrated else 0.0
        return to_latency(features["scale_us"].to_numpy(), self.point_margin(x), self._quantiles(x), offset)

    def feature_importance(self) -> pd.Series:
        """Total gain per feature of the shared trees (summed over the bag's members), largest first."""
        self._check_fitted()
        gains = [pd.Series(b.get_score(importance_type="total_gain"), dtype=np.float64) for b, _ in self.members_]
        return (
            pd.concat(gains, axis=1)
            .sum(axis=1)
            .reindex(matrix_columns(self.op), fill_value=0.0)
            .sort_values(ascending=False)
        )
