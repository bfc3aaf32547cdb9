"""`pip install .` (not editable) into a fresh virtualenv gives a working package, data files and CLI."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_install_dot_into_a_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # this interpreter's pip installs into the fresh venv's site-packages; --target leaves this
    # environment's own (editable) kernelcast alone; dependencies come from below, not a download
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(REPO),
        ],
        check=True,
        cwd=tmp_path,
    )
    assert (site / "kernelcast" / "features" / "gpus" / "h200_sxm.toml").is_file()
    assert not (site / "features").exists() and not (site / "collect").exists()  # one namespace only
    # dependencies (numpy, pandas, xgboost) from this test's environment, after the venv's own packages;
    # a path on PYTHONPATH runs no .pth files, so this environment's editable kernelcast stays out
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    code = (
        "import kernelcast; print(kernelcast.__file__); print(kernelcast.predict_latency("
        "{'op': 'gemm', 'gpu': 'H200', 'dtype': 'bf16', 'backend': 'cublas', 'm': 8, 'n': 8, 'k': 8}).model)"
    )
    out = subprocess.run([python, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    path, model = out.stdout.splitlines()
    assert path == str(site / "kernelcast" / "__init__.py")
    # the shipped models travel with the package and serve without xgboost
    assert model.startswith("learned:gemm@")
    # the console script (--target puts it in <site>/bin), run by the venv's interpreter
    cli = subprocess.run(
        [python, site / "bin" / "kernelcast", "gpus", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert '"h200_sxm"' in cli.stdout
