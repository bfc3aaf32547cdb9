"""Screenshot the MLflow UI of a kernelcast store in a headless browser: each op's runs table, its latest run's
overview and per-GPU error chart, and its registered model.

Needs a Chromium on PATH; on Debian/Ubuntu `apt-get install chromium-headless-shell` (or `chromium`). Playwright
is not needed: its browser download cannot be fetched here, and Chromium's own `--screenshot` serves.

    python scripts/mlflow_screenshots.py [--out DIR] [--json]   # the store: MLFLOW_TRACKING_URI, else mlruns/
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kernelcast.training import tracking

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
#: how long the page may run its scripts before the shot (virtual time: the MLflow UI renders from API calls)
RENDER_MS = 20_000


def browser() -> str:
    found = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if found is None:
        raise SystemExit(
            f"no headless browser on PATH (looked for {', '.join(BROWSERS)}): apt-get install chromium-headless-shell"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def mlflow_ui(uri: str, port: int):
    """`mlflow ui` on the store, in its own process group (ended, with its workers, on exit)."""
    mlflow_bin = Path(sys.executable).with_name("mlflow")
    cmd = [str(mlflow_bin), "ui", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"`{' '.join(cmd)}` did not come up") from None
                time.sleep(1)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def shoot(chrome: str, url: str, out: Path) -> Path:
    subprocess.run(
        [
            chrome,
            "--headless",
            "--no-sandbox",  # root in a container has no user namespace for Chromium's sandbox
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1600,1100",
            f"--virtual-time-budget={RENDER_MS}",
            f"--screenshot={out}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    return out


def pages(client, base: str) -> list[tuple[str, str]]:
    """(file name, URL) of every page to shoot, from what the store holds."""
    out = []
    for exp in client.search_experiments():
        if not exp.name.startswith("kernelcast-"):
            continue
        op = exp.name.removeprefix("kernelcast-")
        out.append((f"{op}_runs.png", f"{base}/#/experiments/{exp.experiment_id}"))
        runs = client.search_runs([exp.experiment_id], order_by=["attributes.start_time DESC"], max_results=1)
        if runs:
            run = f"{base}/#/experiments/{exp.experiment_id}/runs/{runs[0].info.run_id}"
            out.append((f"{op}_run.png", run))
            out.append((f"{op}_error_by_gpu.png", f"{run}/artifacts/error_by_gpu.png"))
    for model in client.search_registered_models():
        out.append((f"model_{model.name}.png", f"{base}/#/models/{model.name}"))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="folder for the PNGs (default: screenshots/ beside a sqlite store)")
    parser.add_argument("--json", action="store_true", help="print the shots as JSON")
    args = parser.parse_args()
    chrome, uri = browser(), tracking.tracking_uri()
    beside = (tracking.artifact_root(uri) or Path("mlruns/artifacts")).parent / "screenshots"
    out = Path(args.out) if args.out else beside
    out.mkdir(parents=True, exist_ok=True)
    client = tracking.setup()
    start = time.time()
    with mlflow_ui(uri, free_port()) as base:
        shots = [{"page": url, "file": str(shoot(chrome, url, out / name))} for name, url in pages(client, base)]
    if args.json:
        print(json.dumps({"store": uri, "shots": shots, "seconds": round(time.time() - start, 1)}, indent=1))
    else:
        print(f"{len(shots)} screenshots of {uri} in {out} ({time.time() - start:.0f} s)")
        for shot in shots:
            print(f"  {shot['file']}  <- {shot['page']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
