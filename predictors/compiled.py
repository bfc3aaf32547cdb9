"""Learned forests walked in compiled C (``forest.c``): built once per machine into a cache folder, loaded
with ctypes, for one row and for batches alike.

The C file follows ``trees.Forest``'s semantics (XGBoost's CPU predictor), so a compiled forest gives the
numpy walk's margins. It is built by the system C compiler (``$CC``, else ``cc``) into
``$KERNELCAST_CACHE`` (else ``$XDG_CACHE_HOME/kernelcast``, else ``~/.cache/kernelcast``), named by the
sha256 of the source, the compiler and its flags, written to a temporary file and renamed into place, so
concurrent processes never load half a library. Without a compiler, or when the build fails, ``library``
says why and serving walks the trees in numpy, slower but the same answers
(benchmarks/RESULTS.md has both).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import numpy as np

from kernelcast.predictors.trees import Forest, tree_depth

SOURCE = Path(__file__).with_name("forest.c")
CFLAGS = ("-O3", "-shared", "-fPIC")
#: one packed node (``kc_node`` in forest.c), 8 bytes: a split's threshold or a leaf's value, the input column with
#: the leaf and default-right flags, and the left child's index in its tree (the right child follows it)
NODE = np.dtype([("value", "<f4"), ("feature", "<u2"), ("left", "<u2")])
LEAF_FLAG, RIGHT_FLAG = 1 << 14, 1 << 15
#: what an 8-byte node can address: input columns below the flags, trees of up to 65,535 nodes
MAX_FEATURES, MAX_TREE_NODES = LEAF_FLAG, 1 << 16
#: batches this large are split over every core (the C call releases the GIL); smaller ones stay on one
PARALLEL_ROWS = 4096
#: batches larger than this are walked in the order of their gate columns (and answered in theirs)
GATE_SORT_ROWS = 64
#: chunks per worker thread: on a shared machine a core another process holds finishes fewer chunks instead of
#: holding up half the batch
CHUNKS_PER_WORKER = 8
_P = ctypes.c_void_p
_I = ctypes.c_int64


def cache_dir() -> Path:
    explicit = os.environ.get("KERNELCAST_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelcast"


def _build(compiler: str, target: Path) -> str | None:
    """Compile ``SOURCE`` into ``target`` atomically; the compiler's first error line on failure."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        run = subprocess.run(
            [compiler, *CFLAGS, str(SOURCE), "-o", tmp], capture_output=True, text=True, timeout=120, check=False
        )
        if run.returncode != 0:
            lines = (run.stderr or run.stdout).strip().splitlines()
            return f"{compiler} failed on {SOURCE.name}: {lines[0] if lines else f'exit {run.returncode}'}"
        os.replace(tmp, target)
        return None
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{compiler} could not build {SOURCE.name}: {exc}"
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@functools.cache
def library() -> tuple[ctypes.CDLL | None, str]:
    """(the loaded walker, its path) or (None, why not); built on first use, then read from the cache."""
    name = os.environ.get("CC") or "cc"
    compiler = shutil.which(name)
    if compiler is None:
        return None, f"no C compiler: {name!r} is not on PATH (set CC)"
    key = hashlib.sha256(SOURCE.read_bytes() + "\0".join([compiler, *CFLAGS]).encode()).hexdigest()[:16]
    path = cache_dir() / f"forest-{key}.so"
    if not path.exists():
        try:
            problem = _build(compiler, path)
        except OSError as exc:  # the cache folder cannot be made
            problem = f"cannot write the cache folder {path.parent}: {exc}"
        if problem is not None:
            return None, problem
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        return None, f"{path}: cannot be loaded ({exc}); delete it to rebuild"
    lib.kc_forest_predict.argtypes = [_P, _I, _I, _I, _P, _P, _P, _P, _P, _P, _I, _I, _P, _P]
    lib.kc_forest_predict.restype = None
    return lib, str(path)


@functools.cache
def _pool() -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="kernelcast-forest")


class CompiledForest:
    """A ``Forest`` packed for ``forest.c``: ``predict`` gives the same (rows, outputs) margins as
    ``Forest.predict``."""

    def __init__(self, forest: Forest, lib: ctypes.CDLL):
        self.nodes = pack_nodes(forest)
        self.roots = np.ascontiguousarray(forest.roots, dtype=np.int64)
        self.depths = np.asarray([tree_depth(forest.children, np.asarray([r])) for r in forest.roots], dtype=np.int32)
        self.outputs = np.ascontiguousarray(forest.combine.argmax(axis=1), dtype=np.int32)
        self.base = np.ascontiguousarray(forest.base, dtype=np.float64)
        self.n_features = forest.n_features
        self.zero_side, self.run_end = gate_runs(forest)
        #: the columns the runs' roots read: a batch is ordered by them so that its blocks rarely mix both sides
        self.gate_columns = np.unique(forest.feature[forest.roots[self.zero_side >= 0]])
        self._fn = lib.kc_forest_predict
        #: the forest's arguments to ``kc_forest_predict`` (its arrays' addresses, read once: they live as long as
        #: this object and are never reallocated)
        self._forest_args = (
            self.nodes.ctypes.data,
            self.roots.ctypes.data,
            self.depths.ctypes.data,
            self.outputs.ctypes.data,
            self.zero_side.ctypes.data,
            self.run_end.ctypes.data,
            len(self.roots),
            len(self.base),
            self.base.ctypes.data,
        )

    def _run(self, x: np.ndarray, out: np.ndarray) -> None:
        item = x.itemsize
        rows, cols = x.strides
        self._fn(
            x.ctypes.data,
            len(x),
            rows // item,
            cols // item,
            *self._forest_args,
            out.ctypes.data,
        )

    def predict(self, x: np.ndarray) -> np.ndarray:
        """(rows, features) float32 -> (rows, outputs) float64 margins; large batches on every core. Row-major and
        column-major matrices are read in place."""
        x = np.asarray(x, dtype=np.float32)
        if not (x.flags.c_contiguous or x.flags.f_contiguous):
            x = np.ascontiguousarray(x)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"x must be (rows, {self.n_features}); got shape {x.shape}")
        order = None
        if len(self.gate_columns) and len(x) > GATE_SORT_ROWS:
            order = np.lexsort(x[:, self.gate_columns].T)
            if (np.diff(order) == 1).all():  # already in the gates' order (a batch of one backend): no copy
                order = None
            else:
                x = x[order]
        out = self._predict_ordered(x)
        if order is None:
            return out
        unsorted = np.empty_like(out)
        unsorted[order] = out
        return unsorted

    def _predict_ordered(self, x: np.ndarray) -> np.ndarray:
        out = np.empty((len(x), len(self.base)), dtype=np.float64)
        workers = 1 if len(x) < PARALLEL_ROWS else os.cpu_count() or 1
        if workers == 1:
            self._run(x, out)
            return out
        chunks = min(workers * CHUNKS_PER_WORKER, len(x) // (PARALLEL_ROWS // 2))  # a busy core takes fewer of them
        bounds = np.linspace(0, len(x), chunks + 1).astype(int)
        jobs = [_pool().submit(self._run, x[a:b], out[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        for job in jobs:
            job.result()
        return out


def too_large(forest: Forest) -> str | None:
    """Why ``forest`` does not fit 8-byte nodes (None: it does)."""
    largest = int(np.diff(np.append(forest.roots, len(forest.feature))).max(initial=0))
    if forest.n_features > MAX_FEATURES:
        return f"{forest.n_features} input columns (the packed nodes hold {MAX_FEATURES})"
    if largest > MAX_TREE_NODES - 1:
        return f"a tree of {largest:,} nodes (the packed nodes hold {MAX_TREE_NODES - 1:,})"
    return None


def pack_nodes(forest: Forest) -> np.ndarray:
    """The nodes in ``NODE`` form, each tree renumbered within its own index range, breadth first, so that a split's
    children sit side by side (the right one after the left) and a tree's top levels share cache lines."""
    n = len(forest.feature)
    children = forest.children.reshape(-1, 2)
    leaf = children[:, 0] == np.arange(n)
    roots = forest.roots.astype(np.int64)
    new = np.full(n, -1, dtype=np.int64)  # old index -> new index (same tree range)
    new[roots] = roots
    free = roots + 1  # per tree: the next unused index
    frontier, tree = roots, np.arange(len(roots))
    while len(frontier):
        split = ~leaf[frontier]
        parents, tree = frontier[split], tree[split]  # grouped by tree, in tree order
        rank = np.arange(len(parents)) - np.searchsorted(tree, tree)  # a split's place among its tree's on this level
        left = free[tree] + 2 * rank
        new[children[parents, 0]], new[children[parents, 1]] = left, left + 1
        free += 2 * np.bincount(tree, minlength=len(roots))
        frontier, tree = children[parents].ravel(), np.repeat(tree, 2)
    unreached = np.flatnonzero(new < 0)  # nodes no root leads to (never walked): the free slots of their tree
    if len(unreached):
        owner = np.searchsorted(roots, unreached, side="right") - 1
        new[unreached] = free[owner] + np.arange(len(unreached)) - np.searchsorted(owner, owner)
    owner_root = roots[np.searchsorted(roots, np.arange(n), side="right") - 1]
    nodes = np.zeros(n, dtype=NODE)
    nodes["value"][new] = np.where(leaf, forest.leaf_value, forest.threshold)
    flags = np.where(leaf, LEAF_FLAG, forest.feature | (forest.default_right.astype(np.int64) * RIGHT_FLAG))
    nodes["feature"][new] = flags.astype(np.uint16)
    nodes["left"][new] = (np.where(leaf, new, new[children[:, 0]]) - owner_root).astype(np.uint16)
    return nodes


def gate_runs(forest: Forest) -> tuple[np.ndarray, np.ndarray]:
    """Per tree: which child of its root is a 0 leaf (0 left, 1 right; -1 where neither is, or the tree is a leaf),
    and the first tree after the run of consecutive trees whose roots make that same split (``forest.c`` decides a
    run once per block of rows)."""
    children = forest.children.reshape(-1, 2)
    roots = forest.roots
    zero = np.full(len(roots), -1, dtype=np.int32)
    for side in (1, 0):
        child = children[roots, side]
        is_zero_leaf = (children[child, 0] == child) & (forest.leaf_value[child] == 0) & (child != roots)
        zero[is_zero_leaf] = side
    split = np.stack(
        [forest.feature[roots], forest.threshold[roots].view(np.int32), forest.default_right[roots], zero], axis=1
    )
    new_run = np.ones(len(roots), dtype=bool)
    new_run[1:] = (zero[1:] < 0) | np.any(split[1:] != split[:-1], axis=1)
    starts = np.flatnonzero(new_run)
    ends = np.append(starts[1:], len(roots))
    run_end = np.repeat(ends, np.diff(np.append(starts, len(roots)))).astype(np.int64)
    return zero, run_end


def compile_forest(forest: Forest) -> CompiledForest | None:
    """The compiled form of ``forest``, or None (with a ``RuntimeWarning`` saying why) when no walker can be built."""
    lib, where = library()
    problem = too_large(forest)
    if lib is None or problem is not None:
        where = where if lib is None else problem
        warnings.warn(
            f"compiled tree walker unavailable ({where}): learned models walk their trees in numpy "
            "(the same answers, slower; benchmarks/RESULTS.md)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return CompiledForest(forest, lib)
