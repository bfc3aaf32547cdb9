"""The op-family registry: a family defined in this test alone is validated, featurized and predicted
analytically by the shared code, with no edit anywhere else."""

import numpy as np
import pandas as pd
import pytest

from kernelcast.features.common import roofline_latency
from kernelcast.features.fields import IntField, Rule
from kernelcast.features.ops import OpSpec, get_op, op_names, register, unregister


def _copy_features(cols, gpu):
    """A device copy of ``elements`` values: read once, written once."""
    n = np.asarray(cols["elements"], dtype=np.float64) * 2  # bf16/fp16
    nbytes = 2 * n
    memory_floor = nbytes / gpu["memory_bandwidth_bps"] * 1e6
    return {
        "bytes": nbytes,
        "compute_floor_us": np.zeros_like(n),
        "memory_floor_us": memory_floor,
        "floor_us": memory_floor,
        "wave_efficiency": np.ones_like(n),
    }


@pytest.fixture
def toy():
    spec = register(
        OpSpec(
            name="toy_copy",
            doc="a contiguous device copy",
            fields={"elements": IntField(1, 1 << 40)},
            dtypes=("bf16", "fp16"),
            backends=("torch",),
            rules=(Rule("elements", lambda c: c["elements"] % 8 == 0, lambda c: "a multiple of 8"),),
            features=_copy_features,
            flops=lambda cols: np.zeros(len(np.atleast_1d(cols["elements"]))),
            analytical=lambda cols, f: roofline_latency(f, np.ones(len(f["floor_us"])), 1.0),
            analytical_assumptions="memory-bound copy at 75% of HBM bandwidth plus one kernel's fixed time",
            example={"elements": 1 << 20, "dtype": "bf16", "backend": "torch"},
        )
    )
    yield spec
    unregister("toy_copy")


def test_a_family_added_in_one_place_is_served(toy):
    import kernelcast

    assert "toy_copy" in op_names() and get_op("toy_copy") is toy
    desc = {"op": "toy_copy", "gpu": "H200", "dtype": "bfloat16", "backend": "torch", "elements": 1 << 28}
    parsed = kernelcast.parse_desc(desc)
    assert (parsed.dtype, parsed.elements, type(parsed).__name__) == ("bf16", 1 << 28, "ToyCopyDesc")
    pred = kernelcast.predict_latency(desc)
    floor = 2 * 2 * (1 << 28) / 4.8e12 * 1e6  # bytes over the H200's 4.8 TB/s
    assert pred.model == "analytical" and pred.floor_us == pytest.approx(floor)
    assert pred.latency_us == pytest.approx(floor / 0.75 + 2.5, rel=1e-3) and pred.bound == "memory"
    many = kernelcast.predict_many([desc, {**desc, "elements": 1 << 10}])
    assert many["latency_us"].iloc[0] == pytest.approx(pred.latency_us) and (many["model"] == "analytical").all()


def test_a_family_gets_the_shared_errors(toy):
    import kernelcast

    base = {"op": "toy_copy", "gpu": "H200", "dtype": "bf16", "backend": "torch", "elements": 64}
    with pytest.raises(ValueError, match=r"kernel_desc\['elements'\] must be a multiple of 8; got 65"):
        kernelcast.parse_desc({**base, "elements": 65})
    with pytest.raises(ValueError, match=r"row 1: kernel_desc\['elemnts'\] must be absent: .*did you mean 'elements'"):
        kernelcast.predict_many([base, {**base, "elemnts": 64}])
    with pytest.raises(
        ValueError, match=r"kernel_desc\['op'\] must be one of " + ", ".join(op_names()).replace(".", r"\.")
    ):
        kernelcast.parse_desc({**base, "op": "toy"})


def test_registering_twice_or_a_common_field_raises(toy):
    with pytest.raises(ValueError, match="already registered"):
        register(toy)
    with pytest.raises(ValueError, match="common to every op"):
        register(
            OpSpec(
                **{
                    **{
                        f: getattr(toy, f)
                        for f in (
                            "doc",
                            "dtypes",
                            "backends",
                            "features",
                            "flops",
                            "analytical",
                            "analytical_assumptions",
                            "example",
                        )
                    },
                    "name": "toy2",
                    "fields": {"gpu": IntField(1, 2)},
                }
            )
        )


def test_few_op_branches_outside_the_op_modules():
    """Shared code asks the registry; an `op == "<name>"` branch outside features/ops/ needs a reason."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    pattern = re.compile(r"""\bop\s*[!=]=\s*["'](gemm|attention|moe|collective)["']""")
    hits = [
        f"{p.relative_to(repo)}:{i}"
        for folder in ("features", "predictors", "training", "kernelcast", "collect")
        for p in (repo / folder).rglob("*.py")
        if "ops" not in p.relative_to(repo).parts[:2]
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert len(hits) <= 3, hits


def test_frames_of_a_new_family_validate_column_wise(toy):
    from kernelcast.features.validate import validate_frame

    frame = pd.DataFrame(
        {
            "op": ["toy_copy"] * 3,
            "gpu": ["H200", "h200_sxm", "NVIDIA H200"],
            "dtype": "fp16",
            "backend": "torch",
            "elements": [8, 16, 24],
        }
    )
    by_op, bad = validate_frame(frame)
    assert not bad and by_op["toy_copy"][1]["gpu"].tolist() == ["h200_sxm"] * 3
