"""XGBoost tree ensembles as flat arrays, walked in numpy: what a shipped model is.

The shipped models are these arrays (``<op>.forest.npz``); ``compiled.py`` walks the same trees in C, and
this numpy walk (every tree one level per step) serves where no C compiler is.

``Forest.from_boosters`` reads the boosters' JSON models. Semantics follow XGBoost's CPU predictor:
a split sends ``value < split_condition`` left, a missing value takes the node's default direction;
a leaf's value is its ``split_conditions`` entry; each output adds its trees' leaves to its base
score. Numeric splits only: kernelcast's models one-hot their categories (predictors/learned.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: node indices one numpy walk step holds (rows x trees): bounds a batch's memory to ~50 MB a step
CHUNK_NODES = 1 << 21


@dataclass(frozen=True)
class Forest:
    """All trees of one or more boosters as flat node arrays; each tree feeds one output column."""

    feature: np.ndarray  # int64 per node: the input column a split reads (leaves: 0)
    threshold: np.ndarray  # float32 per node: go right when value >= threshold (leaves: +inf)
    default_right: np.ndarray  # bool per node: where a missing value goes (leaves: False)
    children: np.ndarray  # int64 per node × 2: left then right child (a leaf points at itself twice)
    leaf_value: np.ndarray  # float32 per node (0 on splits)
    roots: np.ndarray  # int64 per tree: its root node
    combine: np.ndarray  # float64 trees × outputs: 1 where a tree adds to an output column
    base: np.ndarray  # float64 per output column: the base score
    n_features: int  # input columns
    depth: int  # the deepest leaf's depth: walking this many levels reaches every leaf

    @classmethod
    def from_boosters(cls, *boosters, own: dict | None = None, bag: tuple = ()) -> Forest:
        """Every booster's outputs side by side, in order (a 1-target booster gives 1 column, etc.).

        ``own`` maps an input column (a one-hot backend column, 0 or 1, or a route column after the boosters' columns)
        to a 1-target booster fitted on the rows where it is 1: its trees answer the first output for those rows, the
        first booster's for the others. Each tree gets
        a root that reads the column(s) and leads the other rows to a 0 leaf; one more tree adds the difference of the
        base scores: the forest's margins are exactly the routed boosters' (``training.xgb.LatencyRegressor``).

        ``bag``: more (booster, own) pairs, the first booster and ``own`` fitted again from other seeds: the first
        output is the mean of every pair's margins (each of their trees' leaves divided by the pairs' number, their
        base scores averaged), one walk of one forest."""
        own = own or {}
        members = [(boosters[0], own), *bag]
        trees, outputs, member_bases, widths = [], [], [], set()
        for point, point_own in members:
            if list(point_own) != list(own):
                raise ValueError(
                    f"every bagged point model needs own trees on columns {list(own)}; got {list(point_own)}"
                )
            model = _booster_json(point)
            base = _base_scores(model)
            gate = (tuple(point_own), 0) if point_own else None
            for tree, out in _gbtree_trees(model, widths):
                trees.append(tree if gate is None else _gated(tree, gate))
                outputs.append(int(out) if gate is None else 0)
            for column, booster in point_own.items():  # the point output (0) for the column's rows
                mine = _booster_json(booster)
                trees.append(_gated(_leaf(float(_base_scores(mine)[0] - base[0])), ((column,), 1)))
                trees.extend(_gated(tree, ((column,), 1)) for tree, _ in _gbtree_trees(mine, widths))
                outputs.extend([0] * (len(trees) - len(outputs)))
            member_bases.append(base)
        if len(members) > 1:
            if len({len(b) for b in member_bases}) > 1:
                raise ValueError(f"bagged point models give different output counts: {[len(b) for b in member_bases]}")
            trees = [_scaled(tree, 1.0 / len(members)) for tree in trees]
        bases = [float(b) for b in np.mean(member_bases, axis=0)]
        for booster in boosters[1:]:
            model = _booster_json(booster)
            for tree, out in _gbtree_trees(model, widths):
                trees.append(tree)
                outputs.append(len(bases) + int(out))
            bases.extend(float(b) for b in _base_scores(model))
        combine = np.zeros((len(trees), len(bases)))
        combine[np.arange(len(trees)), outputs] = 1.0
        (n_features,) = widths
        n_features = max([n_features, *(column + 1 for column in own)])  # a gate may read a column after the boosters'
        return cls._from_trees(trees, combine, np.asarray(bases, dtype=np.float64), n_features)

    @classmethod
    def _from_trees(cls, trees: list[dict], combine: np.ndarray, bases: np.ndarray, n_features: int) -> Forest:
        sizes = np.asarray([len(t["left_children"]) for t in trees], dtype=np.int64)
        roots = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        cat = lambda key, dtype: np.concatenate([np.asarray(t[key], dtype=dtype) for t in trees])  # noqa: E731
        left, right = cat("left_children", np.int64), cat("right_children", np.int64)
        leaf = left < 0
        node, own_root = np.arange(len(left), dtype=np.int64), np.repeat(roots, sizes)
        left = np.where(leaf, node, left + own_root)
        right = np.where(leaf, node, right + own_root)
        conditions = cat("split_conditions", np.float32)
        children = np.column_stack([left, right]).ravel()
        return cls(
            feature=np.where(leaf, 0, cat("split_indices", np.int64)),
            threshold=np.where(leaf, np.float32(np.inf), conditions).astype(np.float32),
            default_right=~cat("default_left", np.int64).astype(bool) & ~leaf,
            children=children,
            leaf_value=np.where(leaf, conditions, np.float32(0)).astype(np.float32),
            roots=roots,
            combine=combine,
            base=bases,
            n_features=n_features,
            depth=tree_depth(children, roots),
        )

    def save(self, path: str | os.PathLike) -> Path:
        """Write the arrays (compressed npz, atomically): loading them needs neither xgboost nor JSON parsing."""
        path = Path(path)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
        np.savez_compressed(
            tmp,
            feature=self.feature.astype(np.int32),
            threshold=self.threshold,
            default_right=self.default_right,
            # each child as its distance from its parent (a leaf's: 0): small numbers that compress 6x better than
            # node indices (the GEMM forest's 3.8 M nodes: 10.8 -> 1.8 MB)
            child_offsets=(self.children - _parents(len(self.feature))).astype(np.int32),
            leaf_value=self.leaf_value,
            roots=self.roots,
            combine=self.combine,
            base=self.base,
            shape=np.asarray([self.n_features, self.depth]),
        )
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> Forest:
        with np.load(path) as z:
            n_features, depth = (int(v) for v in z["shape"])
            return cls(
                feature=z["feature"].astype(np.int64),
                threshold=z["threshold"],
                default_right=z["default_right"],
                children=z["child_offsets"].astype(np.int64) + _parents(len(z["feature"])),
                leaf_value=z["leaf_value"],
                roots=z["roots"],
                combine=z["combine"],
                base=z["base"],
                n_features=n_features,
                depth=depth,
            )

    def predict(self, x: np.ndarray) -> np.ndarray:
        """(rows, features) float32 -> (rows, outputs) float64 margins, as XGBoost's; large batches in chunks (the
        walk holds a node index per row and tree)."""
        x = np.asarray(x, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"x must be (rows, {self.n_features}); got shape {x.shape}")
        rows = max(1, CHUNK_NODES // len(self.roots))
        if len(x) <= rows:
            return self._walk(np.ascontiguousarray(x))
        return np.vstack([self._walk(np.ascontiguousarray(x[i : i + rows])) for i in range(0, len(x), rows)])

    def _walk(self, x: np.ndarray) -> np.ndarray:
        flat = x.ravel()
        node = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        row_start = (np.arange(len(x)) * x.shape[1])[:, None]
        any_missing = bool(np.isnan(flat).any())
        for _ in range(self.depth):
            value = flat.take(row_start + self.feature.take(node))
            go_right = value >= self.threshold.take(node)  # NaN compares False
            if any_missing:
                go_right |= np.isnan(value) & self.default_right.take(node)
            node = self.children.take(2 * node + go_right)
        return self.leaf_value.take(node).astype(np.float64) @ self.combine + self.base


def _booster_json(booster) -> dict:
    return json.loads(booster.save_raw("json"))


def _base_scores(model: dict) -> np.ndarray:
    return np.atleast_1d(np.asarray(json.loads(model["learner"]["learner_model_param"]["base_score"]), dtype=float))


def _gbtree_trees(model: dict, widths: set) -> list[tuple[dict, int]]:
    """A booster's (tree, output) pairs, its input width added to ``widths`` (boosters that read different widths are
    refused); only what the walk can do: gbtree with one parallel tree, scalar leaves, numeric splits."""
    model = model["learner"]
    gbtree = model["gradient_booster"]
    if gbtree.get("name") != "gbtree" or int(gbtree["model"]["gbtree_model_param"]["num_parallel_tree"]) != 1:
        raise ValueError(f"only gbtree boosters with one parallel tree are supported; got {gbtree.get('name')!r}")
    widths.add(int(model["learner_model_param"]["num_feature"]))
    if len(widths) > 1:
        raise ValueError(f"boosters read different feature counts: {sorted(widths)}")
    for tree in gbtree["model"]["trees"]:
        if int(tree["tree_param"]["size_leaf_vector"]) > 1:
            raise ValueError("vector-leaf (multi_output_tree) boosters are not supported")
        if any(tree["split_type"]):
            raise ValueError(
                "categorical splits are not supported: one-hot the categories "
                "(as predictors/learned.feature_matrix does)"
            )
    return list(zip(gbtree["model"]["trees"], gbtree["model"]["tree_info"]))


def _scaled(tree: dict, share: float) -> dict:
    """``tree`` with its leaves' values times ``share`` (its splits' thresholds as they were)."""
    leaf = np.asarray(tree["left_children"]) < 0
    values = np.asarray(tree["split_conditions"], dtype=np.float64)
    return {**tree, "split_conditions": np.where(leaf, values * share, values).tolist()}


def _leaf(value: float) -> dict:
    """A one-node tree (XGBoost's JSON fields ``_from_trees`` reads)."""
    return {
        "left_children": [-1],
        "right_children": [-1],
        "split_conditions": [value],
        "split_indices": [0],
        "default_left": [0],
    }


def _gated(tree: dict, gate: tuple[tuple[int, ...], int]) -> dict:
    """``tree`` behind splits on 0/1 ``columns``: with ``side`` 1 rows where the (one) column is 1 reach it, with
    ``side`` 0 the rows where every column is 0 do; the others end on a 0 leaf (each gate adds 2 nodes on top)."""
    columns, side = gate
    for column in columns:  # each gate: node 0 splits at 0.5, node 1 is the 0 leaf, the tree starts at node 2
        shift = lambda ids: [c + 2 if c >= 0 else -1 for c in ids]  # noqa: E731
        inner_left, inner_right = (1, 2) if side == 1 else (2, 1)
        tree = {
            "left_children": [inner_left, -1, *shift(tree["left_children"])],
            "right_children": [inner_right, -1, *shift(tree["right_children"])],
            "split_conditions": [0.5, 0.0, *tree["split_conditions"]],
            "split_indices": [column, 0, *tree["split_indices"]],
            "default_left": [1, 0, *tree["default_left"]],
        }
    return tree


def _parents(nodes: int) -> np.ndarray:
    """Each entry of a ``children`` array's node: 0, 0, 1, 1, … (left then right child of every node)."""
    return np.repeat(np.arange(nodes, dtype=np.int64), 2)


def tree_depth(children: np.ndarray, roots: np.ndarray) -> int:
    """Levels from the roots to the deepest leaf (a leaf's children are itself)."""
    frontier, depth = roots, 0
    while True:
        splits = frontier[children[2 * frontier] != frontier]
        if not len(splits):
            return depth
        depth += 1
        frontier = np.concatenate([children[2 * splits], children[2 * splits + 1]])
