"""datasets/files.toml lists every dataset file once, with a role; test files share no description with train files."""

from pathlib import Path

import pyarrow.parquet as pq
import tomllib

from kernelcast.training.data import ROLES

ROOT = Path(__file__).resolve().parents[1] / "datasets"


def _manifest():
    return tomllib.loads((ROOT / "files.toml").read_text())["file"]


def test_every_parquet_file_is_listed_once_with_a_role():
    files = _manifest()
    paths = [f["path"] for f in files]
    assert len(paths) == len(set(paths))
    on_disk = {
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*.parquet")
        # outside: gitignored caches; compiled: per-call task tables of the fused collector; compile_facts: what the
        # compiler allocated per Triton compile class (tests/test_register_model.py) — no latency rows
        if not p.name.startswith(".") and p.relative_to(ROOT).parts[0] not in ("outside", "compiled", "compile_facts")
    }
    assert on_disk <= set(paths), sorted(on_disk - set(paths))
    for f in files:
        assert f["role"] in ROLES and f["sweeps"] and len(f["collected"]) == 10, f
        # the outside caches (gitignored, written by `kernelcast import aiconfigurator`) are no card files
        assert (ROOT / f["path"]).exists() and not f["path"].startswith("outside/"), f["path"]


def test_test_files_hold_no_training_description():
    keys = {role: set() for role in ROLES}
    for f in _manifest():
        path = ROOT / f["path"]
        if not f["path"].startswith("collective/"):
            t = pq.read_table(path, columns=["desc_key", "repeat_of"]).to_pandas()
            keys[f["role"]] |= set(t.loc[t["repeat_of"].isna(), "desc_key"])
    assert keys["test"] and not keys["test"] & keys["train"]
