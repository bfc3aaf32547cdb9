"""`pip install .` (not editable) gives a working package, data files and CLI."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_install_dot_gives_a_working_import_and_cli(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(REPO)], check=True, cwd=tmp_path)
    assert not (target / "features").exists() and not (target / "collect").exists()   # one namespace only
    assert (target / "kernelcast" / "features" / "gpus" / "h200_sxm.toml").is_file()
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = "import kernelcast, sys; print(kernelcast.__file__); print(kernelcast.predict_latency(" \
           "{'op': 'gemm', 'gpu': 'H200', 'dtype': 'bf16', 'backend': 'cublas', 'm': 8, 'n': 8, 'k': 8}).model)"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    path, model = out.stdout.splitlines()
    assert path == str(target / "kernelcast" / "__init__.py")
    # the shipped models travel with the package: learned wherever xgboost is installed
    assert model.startswith("learned:gemm@" if importlib.util.find_spec("xgboost") else "analytical")
    cli = subprocess.run([sys.executable, str(target / "bin" / "kernelcast"), "gpus", "--json"], env=env, cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert '"h200_sxm"' in cli.stdout
