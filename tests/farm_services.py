"""Real services for the nightly tests: a single-node Slurm (Debian's slurmctld, slurmd, munge, as root, no
accounting) and an ``mlflow server`` on 127.0.0.1. Each says why when it cannot start (the tests skip with it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CONF = Path("/etc/slurm/slurm.conf")
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")


class Unavailable(RuntimeError):
    """The service cannot run here; the message says why."""


def _run(cmd: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _install() -> None:
    if shutil.which("sbatch") and shutil.which("slurmd") and shutil.which("munged"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise Unavailable(
            "Slurm is not installed and this is not a root Debian host (apt-get install slurmctld slurmd)"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", *PACKAGES]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(cmd)} failed: {done.stderr.strip()[-300:]}")


def _conf() -> str:
    host = socket.gethostname().split(".")[0]
    node = _run(["slurmd", "-C"]).stdout.splitlines()[0]  # NodeName=... CPUs=... as slurmd sees them
    node = " ".join(p for p in node.split() if not p.startswith("RealMemory")) + " RealMemory=1000 State=UNKNOWN"
    return f"""ClusterName=kc
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
ReturnToService=2
MinJobAge=60
KillWait=10
SchedulerParameters=sched_interval=1
{node}
PartitionName=main Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _idle(wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        state = _run(["sinfo", "-h", "-o", "%t"], timeout=20)
        if state.returncode == 0 and state.stdout.strip() in ("idle", "mix", "alloc"):
            return True
        if state.returncode == 0 and state.stdout.strip().startswith(("drain", "down")):
            _run(["scontrol", "update", f"NodeName={socket.gethostname().split('.')[0]}", "State=RESUME"])
        time.sleep(0.5)
    return False


def start_slurmd() -> subprocess.Popen:
    return subprocess.Popen(
        ["slurmd", "-D"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


@contextlib.contextmanager
def slurm_node():
    """A running single-node Slurm: the host's own when one answers, else one started here (stopped after)."""
    if shutil.which("sinfo") and _idle(2):
        yield []
        return
    _install()
    if os.geteuid() != 0:
        raise Unavailable("starting slurmctld/slurmd needs root")
    for folder in ("/var/spool/slurmctld", "/var/spool/slurmd", "/run/munge", "/var/log/munge", "/etc/slurm"):
        Path(folder).mkdir(parents=True, exist_ok=True)
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        key.write_bytes(os.urandom(1024))
    shutil.chown(key, "munge", "munge")
    key.chmod(0o400)
    for folder in ("/run/munge", "/var/log/munge"):
        shutil.chown(folder, "munge", "munge")
    munged = None
    if _run(["munge", "-n"]).returncode != 0:
        _run(["runuser", "-u", "munge", "--", "munged", "--force"])  # daemonizes; its pid file says which
        munged = int(Path("/run/munge/munged.pid").read_text())
    CONF.write_text(_conf())
    ctld = subprocess.Popen(
        ["slurmctld", "-D"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    procs = [ctld, start_slurmd()]
    try:
        if not _idle(60):
            raise Unavailable(f"the Slurm node did not become idle within 60 s: {_run(['sinfo']).stdout.strip()}")
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
        if munged is not None:
            os.kill(munged, signal.SIGTERM)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def mlflow_server(folder: Path):
    """``mlflow server`` on 127.0.0.1 with a sqlite backend store under ``folder``; yields its URL."""
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    mlflow = Path(sys.executable).with_name("mlflow")
    cmd = [str(mlflow), "server", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}"]
    cmd += ["--artifacts-destination", str(folder / "artifacts"), "--host", "127.0.0.1", "--port", str(port)]
    log = open(folder / "mlflow_server.log", "w")
    proc = subprocess.Popen(cmd + ["--workers", "1"], stdout=log, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise Unavailable(
                    f"mlflow server did not answer on {url}: {(folder / 'mlflow_server.log').read_text()[-400:]}"
                )
            time.sleep(0.3)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:  # gunicorn's graceful stop waits on idle workers
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        log.close()
