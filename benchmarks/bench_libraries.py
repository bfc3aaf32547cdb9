"""Own code against the library that could replace it, where the own code was kept (benchmarks/RESULTS.md §13):
leave-one-GPU-out folds (scikit-learn's LeaveOneGroupOut) and the frozen split's stability (GroupShuffleSplit).

    python benchmarks/bench_libraries.py [--json]    # after `kernelcast import aiconfigurator`
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupShuffleSplit, LeaveOneGroupOut

from kernelcast.training.data import DATASETS
from kernelcast.training.splits import frozen_test, logo_splits


def sklearn_logo(gpus: np.ndarray) -> list[tuple[str, np.ndarray]]:
    out = []
    for _, test_idx in LeaveOneGroupOut().split(np.zeros(len(gpus)), groups=gpus):
        test = np.zeros(len(gpus), dtype=bool)
        test[test_idx] = True
        out.append((str(gpus[test_idx[0]]), test))
    return out


def best_of(fn, arg, repeats: int = 5) -> float:
    fn(arg)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    gpus = pd.read_parquet(DATASETS / "outside" / "aiconfigurator_gemm.parquet", columns=["gpu"])["gpu"].to_numpy()
    own, lib = logo_splits(gpus), sklearn_logo(gpus)
    same = len(own) == len(lib) and all(a.fold == f and (a.test == t).all() for a, (f, t) in zip(own, lib))
    rng = np.random.default_rng(0)
    shapes = rng.integers(0, 2**63, 20_000).astype(np.uint64)
    grown = np.concatenate([shapes, rng.integers(0, 2**63, 200).astype(np.uint64)])

    def gss_test(hashes):
        _, test = next(GroupShuffleSplit(n_splits=1, test_size=0.2, random_state=0).split(hashes, groups=hashes))
        return np.isin(shapes, hashes[test])

    result = {
        "rows": len(gpus),
        "logo_folds_identical": bool(same),
        "logo_own_s": round(best_of(logo_splits, gpus), 3),
        "logo_sklearn_s": round(best_of(sklearn_logo, gpus), 3),
        "shapes": len(shapes),
        "added_shapes": len(grown) - len(shapes),
        "moved_group_shuffle_split": int((gss_test(shapes) != gss_test(grown)).sum()),
        "moved_frozen_bucket": int((frozen_test(shapes) != frozen_test(grown)[: len(shapes)]).sum()),
    }
    print(json.dumps(result, indent=1) if args.json else "\n".join(f"{k:28s} {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
