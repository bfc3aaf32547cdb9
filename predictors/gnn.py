"""The fused-kernel GNN: op graphs from kernel sources, the network, and serving the shipped model.

A shipped GNN is ``models/<op>.gnn.pt`` (the network's weights and input scaling, a torch state) and
``models/<op>.gnn.json`` (its manifest: node and graph features, their version, training-data fingerprint,
metrics, versions, the ranges it saw, the kernel kinds it answers, and the sha256 of the weights). The graph-level
input is the same ``feature_matrix`` row the XGBoost model reads; the node inputs are
``fused_code.node_features``. It answers a row only where its description carries ``code`` and its kind is one the
frozen split chose it for (``serve_kinds``); XGBoost, then the roofline, answer the rest. Serving evaluates the
GraphSAGE network in numpy (``NumpySage``) from the weights torch saved: torch is imported once, to read them, when a
GNN first predicts; torch_geometric only for training (or a GIN network). The collector and other ops import neither.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernelcast.features.fused_code import NODE_CLASSES, NODE_FEATURES, node_features, parse_kernel
from kernelcast.features.vector import feature_version
from kernelcast.predictors.learned import MODEL_DIR, ModelFileError, feature_matrix, file_sha256, matrix_columns

GNN_FORMAT = 1
WEIGHTS = ".gnn.pt"
MANIFEST = ".gnn.json"
REQUIRED_KEYS = (
    "format",
    "op",
    "feature_version",
    "graph_features",
    "node_features",
    "node_classes",
    "net",
    "target",
    "data_fingerprint",
    "n_train",
    "covered",
    "ranges",
    "serve_kinds",
    "interval",
    "files",
)
_NAME = re.compile(r"^def (\w+)\(", re.M)


def node_feature_names() -> list[str]:
    """What each column of a node's input means (``fused_code.node_features`` order)."""
    return [
        *(f"cls={c}" for c in NODE_CLASSES),
        "in_loop",
        "elem_bytes/4",
        "broadcast",
        "strided",
        "log2_index_ops",
        "log2_vector_bytes/4",
    ]


@functools.lru_cache(maxsize=4096)
def kernel_graph(code: str) -> tuple[np.ndarray, np.ndarray]:
    """A kernel source -> (node inputs [n, NODE_FEATURES] float32, edges [2, 2e] int64, both directions, in the order
    of their target node: ``NumpySage`` sums a node's neighbours as one run, and graphs collated keep that order)."""
    m = _NAME.search(code)
    if m is None:
        raise ValueError("kernel_desc['code'] must be an Inductor Triton kernel source with a `def <name>(`; got none")
    kernel = parse_kernel(m[1], code)
    x = np.asarray([node_features(n) for n in kernel.nodes], dtype=np.float32).reshape(-1, NODE_FEATURES)
    e = np.asarray(kernel.edges, dtype=np.int64).reshape(-1, 2).T
    both = np.concatenate([e, e[::-1]], axis=1)
    return x, both[:, np.argsort(both[1], kind="stable")]


def collate(graphs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Graphs -> one disjoint union: (node inputs, edges with offsets, graph index of each node)."""
    sizes = np.fromiter((len(x) for x, _ in graphs), np.int64, len(graphs))
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    x = np.concatenate([g[0] for g in graphs]) if graphs else np.zeros((0, NODE_FEATURES), np.float32)
    edges = np.concatenate([g[1] + o for g, o in zip(graphs, offsets)], axis=1) if graphs else np.zeros((2, 0))
    return x, edges.astype(np.int64), np.repeat(np.arange(len(graphs)), sizes)


def graph_inputs(matrix: np.ndarray) -> np.ndarray:
    """The graph-level feature row, squashed for a network: sign(v)·log1p(|v|) (then standardised by the model)."""
    m = np.asarray(matrix, dtype=np.float64)
    return (np.sign(m) * np.log1p(np.abs(m))).astype(np.float32)


def build_net(
    node_dim: int, graph_dim: int, width: int = 96, layers: int = 3, conv: str = "sage", inject: bool = False
):
    """The network: node encoder, ``layers`` residual message-passing blocks (GraphSAGE or GIN), sum + mean
    pooling concatenated with the encoded graph-level features, an MLP head giving log(latency / scale).
    ``inject``: the encoded graph-level features are also added to every node's input (sizes known to each node)."""
    import torch
    from torch import nn
    from torch_geometric.nn import GINConv, SAGEConv, global_add_pool, global_mean_pool

    def make_conv():
        if conv == "sage":
            return SAGEConv(width, width)
        if conv == "gin":
            return GINConv(nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)))
        raise ValueError(f"conv must be one of sage, gin; got {conv!r}")

    class FusedGNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("g_mean", torch.zeros(graph_dim))
            self.register_buffer("g_std", torch.ones(graph_dim))
            self.node_in = nn.Sequential(nn.Linear(node_dim + 1, width), nn.ReLU())
            self.convs = nn.ModuleList(make_conv() for _ in range(layers))
            self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(layers))
            self.graph_in = nn.Sequential(nn.Linear(graph_dim, 2 * width), nn.ReLU(), nn.Linear(2 * width, width))
            self.head = nn.Sequential(
                nn.Linear(3 * width, 2 * width), nn.ReLU(), nn.Linear(2 * width, width), nn.ReLU(), nn.Linear(width, 1)
            )

        def forward(self, x, edge_index, batch, g):
            n = g.shape[0]
            count = torch.bincount(batch, minlength=n).clamp(min=1).to(x.dtype)
            h = self.node_in(torch.cat([x, torch.log2(count)[batch, None] / 8], dim=1))
            z = self.graph_in((g - self.g_mean) / self.g_std)
            if inject:
                h = h + z[batch]
            for conv_, norm in zip(self.convs, self.norms):
                h = h + torch.relu(norm(conv_(h, edge_index)))
            pooled = torch.cat([global_add_pool(h, batch, n) / 16, global_mean_pool(h, batch, n)], dim=1)
            return self.head(torch.cat([pooled, z], dim=1)).squeeze(-1)

    return FusedGNN()


def forward(net, graphs: list[tuple[np.ndarray, np.ndarray]], g: np.ndarray) -> np.ndarray:
    """log(latency / scale) for graphs and their graph-level inputs (``graph_inputs`` rows), on CPU: the torch
    network, or its weights as a ``NumpySage`` (the same GraphSAGE network in numpy, ~20x faster for one kernel)."""
    x, edges, batch = collate(graphs)
    if isinstance(net, NumpySage):
        return net(x, edges, batch, np.asarray(g, dtype=np.float32))
    import torch

    with torch.inference_mode():
        out = net(torch.from_numpy(x), torch.from_numpy(edges), torch.from_numpy(batch), torch.from_numpy(g))
    return out.numpy().astype(np.float64)


#: graphs (or a batch of them) of at most this many nodes average their neighbours with a dense adjacency product:
#: for one kernel's graph (13 nodes median, 91 at most among 300 test kernels) 3-8x faster than numpy's reduceat
DENSE_NODES = 256


def _relu(a: np.ndarray) -> np.ndarray:
    return np.maximum(a, 0.0, out=a)


def _neighbours_mean(src: np.ndarray, dst: np.ndarray, nodes: int):
    """(h, out) -> out holds each node's mean over its incoming edges (0 without any), as torch_geometric's SAGE mean
    aggregation: up to ``DENSE_NODES`` one product with the row-normalised adjacency, past it sums in runs of one
    target node."""
    if nodes <= DENSE_NODES:
        adjacency = np.zeros((nodes, nodes), dtype=np.float32)
        np.add.at(adjacency, (dst, src), 1.0)
        adjacency /= np.maximum(adjacency.sum(axis=1, keepdims=True), 1.0)
        return lambda h, out: np.matmul(adjacency, h, out=out)
    if len(dst) > 1 and (dst[1:] < dst[:-1]).any():
        order = np.argsort(dst, kind="stable")
        src, dst = src[order], dst[order]
    starts = np.flatnonzero(np.concatenate([[True], dst[1:] != dst[:-1]])) if len(dst) else dst
    targets, deg = dst[starts], np.diff(np.append(starts, len(dst)))[:, None]

    def mean(h: np.ndarray, out: np.ndarray) -> None:
        out[:] = 0.0
        if len(src):  # numpy's reduceat: slow per element, but linear in the edges
            out[targets] = np.add.reduceat(h[src], starts, axis=0) / deg

    return mean


@dataclass
class NumpySage:
    """``build_net(conv="sage")`` evaluated in numpy from its state dict: what serving runs (no torch per call;
    tests/test_gnn.py checks it against the torch network). Weights are kept transposed, and each block's two
    linear maps (the neighbours' mean and the node itself) as one, so a forward is few numpy calls: for one kernel
    their fixed cost, not the arithmetic, is the time."""

    w: dict[str, np.ndarray]  # the state dict as float32 arrays
    layers: int
    inject: bool

    def __post_init__(self) -> None:
        w = self.w
        t = lambda name: np.ascontiguousarray(w[f"{name}.weight"].T)  # noqa: E731
        self._dense = {
            name: (t(name), w[f"{name}.bias"])
            for name in ("node_in.0", "graph_in.0", "graph_in.2", "head.0", "head.2", "head.4")
        }
        self._blocks = [
            (
                np.ascontiguousarray(np.concatenate([w[f"convs.{i}.lin_l.weight"], w[f"convs.{i}.lin_r.weight"]], 1).T),
                w[f"convs.{i}.lin_l.bias"],
                w[f"norms.{i}.weight"],
                w[f"norms.{i}.bias"],
            )
            for i in range(self.layers)
        ]

    def _mlp(self, names: tuple[str, ...], a: np.ndarray) -> np.ndarray:
        for j, name in enumerate(names):
            weight, bias = self._dense[name]
            a = a @ weight
            a += bias
            if j < len(names) - 1:
                _relu(a)
        return a

    def __call__(self, x, edges, batch, g) -> np.ndarray:
        n, nodes = len(g), len(x)
        count = np.maximum(np.bincount(batch, minlength=n), 1).astype(np.float32)
        h = _relu(self._mlp(("node_in.0",), np.concatenate([x, (np.log2(count) / 8)[batch, None]], axis=1)))
        z = self._mlp(("graph_in.0", "graph_in.2"), (g - self.w["g_mean"]) / self.w["g_std"])
        if self.inject:
            h = h + z[batch]
        width = h.shape[1]
        neighbours_mean = _neighbours_mean(*edges, nodes)
        both = np.empty((nodes, 2 * width), dtype=np.float32)  # [mean of the neighbours | the node]
        for weight, bias, scale, shift in self._blocks:
            neighbours_mean(h, both[:, :width])
            both[:, width:] = h
            out = both @ weight
            out += bias
            out -= out.mean(axis=1, keepdims=True)  # LayerNorm
            out *= scale / np.sqrt(np.mean(out * out, axis=1, keepdims=True) + 1e-5)
            out += shift
            h = h + _relu(out)
        graph_starts = np.concatenate([[0], np.cumsum(np.bincount(batch, minlength=n))[:-1]])
        sums = np.add.reduceat(h, np.minimum(graph_starts, nodes - 1), axis=0) if nodes else np.zeros((n, h.shape[1]))
        pooled = np.concatenate([sums / 16, sums / count[:, None], z], axis=1)
        return self._mlp(("head.0", "head.2", "head.4"), pooled)[:, 0].astype(np.float64)


def check_manifest(manifest: Any, op: str, path: Path | str) -> None:
    """A GNN manifest this code cannot serve is a clear error naming what differs."""
    if not isinstance(manifest, Mapping):
        raise ModelFileError(f"{path}: a GNN manifest must be a JSON object; got {type(manifest).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in manifest]
    if missing:
        raise ModelFileError(
            f"{path}: GNN manifest lacks {', '.join(missing)} — retrain with `kernelcast train --op {op}`"
        )
    problems = []
    if manifest["format"] != GNN_FORMAT:
        problems.append(f"format {manifest['format']!r}, this code reads {GNN_FORMAT}")
    if manifest["op"] != op:
        problems.append(f"op {manifest['op']!r}, expected {op!r}")
    if manifest["feature_version"] != feature_version(op):
        problems.append(f"feature_version {manifest['feature_version']!r}, this code builds {feature_version(op)!r}")
    if list(manifest["graph_features"]) != matrix_columns(op):
        diff = sorted(set(map(str, manifest["graph_features"])) ^ set(matrix_columns(op))) or ["(order)"]
        problems.append(f"graph feature names differ from this code's: {', '.join(diff[:6])}")
    if list(manifest["node_features"]) != node_feature_names() or list(manifest["node_classes"]) != list(NODE_CLASSES):
        problems.append("node features or node classes differ from this code's (features/fused_code.py)")
    if problems:
        raise ModelFileError(
            f"{path}: GNN for {op!r} does not match this kernelcast: {'; '.join(problems)} — retrain with "
            f"`kernelcast train --op {op}`"
        )


@dataclass
class GnnModel:
    """A shipped GNN bound to its manifest; implements the predictor contract for the kinds it serves."""

    op: str
    manifest: dict
    model_dir: Path
    _net: Any = field(default=None, repr=False)
    needs_learned_features = True

    @property
    def name(self) -> str:
        return f"gnn:{self.op}@{self.manifest['data_fingerprint'][:8]}"

    def assumptions(self, op: str | None = None) -> str:
        m = self.manifest
        return (
            f"GNN ({m['net']['conv']}, {m['net']['layers']} blocks × {m['net']['width']}) over the kernel's op graph "
            f"plus the XGBoost features, on {m['target']}, {m['n_train']:,} training rows (feature version "
            f"{m['feature_version']}); 80% interval from held-out residual quantiles"
        )

    @property
    def net(self):
        if self._net is None:
            self._net = _read_net(self.model_dir, self.op, self.manifest)
        return self._net

    def covers(self, op: str, cols: Mapping[str, Any]) -> np.ndarray:
        """Rows with a kernel source, of a kind the GNN serves, on a (GPU, backend, dtype) it saw."""
        code = np.atleast_1d(np.asarray(cols["code"], dtype=object)) if "code" in cols else None
        n = len(np.atleast_1d(cols["gpu"]))
        if code is None:
            return np.zeros(n, dtype=bool)
        kinds, covered = set(self.manifest["serve_kinds"]), set(self.manifest["covered"])
        keys = zip(*(np.atleast_1d(np.asarray(cols[c], dtype=object)) for c in ("gpu", "backend", "dtype", "kind")))
        return np.fromiter(
            (isinstance(c, str) and k in kinds and f"{g}|{b}|{d}" in covered for c, (g, b, d, k) in zip(code, keys)),
            bool,
            n,
        )

    def unseen_reasons(self, cols: Mapping[str, Any], graphs, features: Mapping[str, Any]) -> list[list[str]]:
        """Per row, why its graph is unlike every training graph: node count, a range column or a graph-level feature
        outside what training saw."""
        out = []
        lo, hi = self.manifest["ranges"]["nodes"]
        bounds = [(c, a, b, cols) for c, (a, b) in self.manifest["ranges"].items() if c != "nodes"]
        bounds += [(c, a, b, features) for c, (a, b) in self.manifest.get("feature_ranges", {}).items()]
        values = {c: np.atleast_1d(np.asarray(src[c], dtype=np.float64)) for c, _, _, src in bounds}
        for i, (x, _) in enumerate(graphs):
            why = [f"{len(x)} graph nodes (trained on {lo}-{hi})"] if not lo <= len(x) <= hi else []
            for col, a, b, _ in bounds:
                v = values[col][i]
                if not a <= v <= b:
                    why.append(f"{col}={v:.4g} (trained on {a:.4g}-{b:.4g})")
            out.append(why)
        return out

    def predict_columns(self, op: str, cols, features) -> dict[str, np.ndarray]:
        graphs = [kernel_graph(c) for c in np.atleast_1d(np.asarray(cols["code"], dtype=object))]
        g = graph_inputs(feature_matrix({**cols, **features}, self.op))
        p50 = np.asarray(features["scale_us"], dtype=np.float64) * np.exp(forward(self.net, graphs, g))
        q_low, q_high = self.manifest["interval"]["q_low"], self.manifest["interval"]["q_high"]
        return {
            "latency_us": p50,
            "low_us": p50 * np.exp(min(q_low, 0.0)),
            "high_us": p50 * np.exp(max(q_high, 0.0)),
            "in_distribution": np.asarray([not w for w in self.unseen_reasons(cols, graphs, features)], dtype=bool),
        }

    def notes(self, op: str, cols: Mapping[str, Any]) -> list[str]:
        """What one row's answer should also say about the GNN: why it did not answer, or why it is unsure."""
        code = np.atleast_1d(np.asarray(cols.get("code", [None]), dtype=object))[0]
        kind = str(np.atleast_1d(cols["kind"])[0])
        if not isinstance(code, str):
            return ["no `code` in the description: the GNN needs the kernel's Triton source, so XGBoost answers"]
        if kind not in self.manifest["serve_kinds"]:
            return [f"{kind} kernels are answered by XGBoost: it beat the GNN on them on the frozen split"]
        if not self.covers(op, cols)[0]:
            return []
        from kernelcast.features.vector import feature_columns

        why = self.unseen_reasons(cols, [kernel_graph(code)], feature_columns(cols, op))[0]
        return [f"outside the GNN's training graphs: {', '.join(why)}"] if why else []


def _read_net(folder: Path, op: str, manifest: Mapping[str, Any]):
    import torch

    path = Path(folder) / f"{op}{WEIGHTS}"
    want = manifest["files"].get(path.name) if isinstance(manifest["files"], Mapping) else None
    if not path.exists():
        raise ModelFileError(
            f"{path}: missing (its manifest {op}{MANIFEST} lists it) — retrain with `kernelcast train`"
        )
    if want is None or file_sha256(path) != want:
        raise ModelFileError(f"{path}: sha256 does not match its manifest {op}{MANIFEST} (a stale or altered file)")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if manifest["net"]["conv"] == "sage":
        w = {k: v.numpy().astype(np.float32) for k, v in state.items()}
        layers = manifest["net"]["layers"]
        shapes = {k: v.shape for k, v in w.items()}
        ok = (
            shapes.get("node_in.0.weight", (0, 0))[1] == NODE_FEATURES + 1
            and shapes.get("graph_in.0.weight", (0, 0))[1] == len(manifest["graph_features"])
            and f"convs.{layers - 1}.lin_l.weight" in w
            and f"convs.{layers}.lin_l.weight" not in w
        )
        if not ok:
            raise ModelFileError(f"{path}: weights do not fit the network its manifest describes ({manifest['net']})")
        return NumpySage(w, layers, manifest["net"].get("inject", False))
    net = build_net(NODE_FEATURES, len(manifest["graph_features"]), **manifest["net"])
    try:
        net.load_state_dict(state)
    except (RuntimeError, ValueError) as exc:
        raise ModelFileError(f"{path}: weights do not fit the network its manifest describes ({exc})") from None
    return net.eval()


def read_manifest(op: str, model_dir: Path | None = None) -> dict | None:
    path = Path(model_dir or MODEL_DIR) / f"{op}{MANIFEST}"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path}: not a valid GNN manifest ({exc})") from None


@functools.cache
def _load(op: str, model_dir: str) -> GnnModel | None:
    manifest = read_manifest(op, Path(model_dir))
    if manifest is None:
        return None
    check_manifest(manifest, op, Path(model_dir) / f"{op}{MANIFEST}")
    needs = "torch" if manifest["net"].get("conv") == "sage" else "torch_geometric"  # sage is served in numpy
    if importlib.util.find_spec(needs) is None:
        warnings.warn(
            f"{needs} is not installed: the shipped {op} GNN is not loaded and XGBoost or the roofline "
            "answers (pip install 'kernelcast[graphs]' torch-geometric)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return GnnModel(op, manifest, Path(model_dir))


def load_gnn(op: str, model_dir: str | Path | None = None) -> GnnModel | None:
    """The shipped GNN for ``op`` (cached; weights read on first prediction), None when none is shipped.

    A manifest that does not match this code raises ``ModelFileError`` (a ``ValueError``) naming what differs.
    """
    return _load(op, str(Path(model_dir or MODEL_DIR).resolve()))


__all__ = ["GnnModel", "build_net", "collate", "forward", "graph_inputs", "kernel_graph", "load_gnn"]
