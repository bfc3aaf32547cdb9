"""Real services for the nightly tests: a single-node Slurm (Debian's slurmctld, slurmd, munge, as root, no
accounting), a throwaway PostgreSQL cluster (Debian's postgresql) and an ``mlflow server`` on 127.0.0.1 with a sqlite
or PostgreSQL backend store. Each says why when it cannot start (the tests skip with it).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CONF = Path("/etc/slurm/slurm.conf")
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")


class Unavailable(RuntimeError):
    """The service cannot run here; the message says why."""


def _run(cmd: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _apt_install(what: str, packages: list[str], *options: str) -> None:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise Unavailable(
            f"{what} is not installed and this is not a root Debian host (apt-get install {' '.join(packages)})"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", *options, *packages]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(cmd)} failed: {done.stderr.strip()[-300:]}")


def _install() -> None:
    if shutil.which("sbatch") and shutil.which("slurmd") and shutil.which("munged"):
        return
    _apt_install("Slurm", list(PACKAGES))


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
def mlflow_server(folder: Path, backend: str | None = None):
    """``mlflow server`` on 127.0.0.1 with the backend store ``backend`` (a database URI; default a sqlite file under
    ``folder``), artifacts under ``folder``; yields its URL."""
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    mlflow = Path(sys.executable).with_name("mlflow")
    cmd = [str(mlflow), "server", "--backend-store-uri", backend or f"sqlite:///{folder / 'mlflow.db'}"]
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
        with contextlib.suppress(ProcessLookupError):  # a server that never came up is gone already
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:  # gunicorn's graceful stop waits on idle workers
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        log.close()


PG_PACKAGES = ("postgresql",)


def _pg_bindir() -> Path | None:
    """The newest Debian PostgreSQL server's bin folder (/usr/lib/postgresql/<major>/bin), else initdb's on PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


@dataclass(frozen=True)
class Postgres:
    """A running throwaway cluster: ``uri`` is the SQLAlchemy URI of its database (password auth over TCP)."""

    bindir: Path
    port: int
    user: str
    password: str
    database: str

    @property
    def uri(self) -> str:
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}"

    def query(self, sql: str) -> list[list[str]]:
        """Rows of ``sql`` as psql prints them (tab-separated text), through a TCP connection of its own."""
        cmd = [str(self.bindir / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user]
        cmd += ["-d", self.database, "-X", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql]
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=60, env={**os.environ, "PGPASSWORD": self.password}
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed on {sql!r}: {done.stderr.strip()}")
        return [line.split("\t") for line in done.stdout.splitlines() if line]


@contextlib.contextmanager
def postgres(database: str = "mlflow"):
    """A throwaway PostgreSQL cluster on 127.0.0.1 (a free port; Debian's postgresql, installed with apt when absent
    and root) in a temp folder, the server run in the foreground as the ``postgres`` user under root, with
    ``database`` created; stopped and removed after."""
    if importlib.util.find_spec("psycopg") is None:
        raise Unavailable("psycopg is not installed: SQLAlchemy's postgresql:// driver (pip install 'kernelcast[dev]')")
    if _pg_bindir() is None:
        _apt_install("PostgreSQL", list(PG_PACKAGES), "--no-install-recommends")
    bindir = _pg_bindir()
    if bindir is None:
        raise Unavailable("PostgreSQL's initdb is not found after installing postgresql")
    folder = Path(tempfile.mkdtemp(prefix="kc-pg-"))  # under /tmp: pytest's folders are root's, mode 0700
    # initdb and postgres refuse to run as root: as root they run as the postgres user (Debian's package makes it)
    owner = {"user": "postgres", "group": "postgres"} if os.geteuid() == 0 else {}
    if owner:
        shutil.chown(folder, "postgres", "postgres")
    password, user, port = secrets.token_hex(12), "kernelcast", _free_port()
    (folder / "pw").write_text(password + "\n")
    env = {**os.environ, "PGPASSWORD": password}
    data, log = folder / "data", open(folder / "postgres.log", "w")
    server = None
    try:
        cmd = [str(bindir / "initdb"), "-D", str(data), "-U", user, f"--pwfile={folder / 'pw'}", "-E", "UTF8"]
        cmd += ["--no-locale", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"]
        init = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=folder, **owner)
        if init.returncode != 0:
            raise Unavailable(f"initdb failed: {(init.stderr or init.stdout).strip()[-400:]}")
        # TCP on 127.0.0.1 only, the socket in the cluster's folder (not /run/postgresql); no fsync: it is thrown away
        cmd = [str(bindir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port), "-k", str(folder)]
        cmd += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        server = subprocess.Popen(cmd, stdout=log, stderr=log, cwd=folder, start_new_session=True, **owner)
        ready = [str(bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port), "-U", user]
        deadline = time.monotonic() + 60
        while _run(ready, timeout=20).returncode != 0:
            if server.poll() is not None or time.monotonic() > deadline:
                raise Unavailable(
                    f"PostgreSQL did not start on 127.0.0.1:{port}: {(folder / 'postgres.log').read_text()[-400:]}"
                )
            time.sleep(0.1)
        cmd = [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", user, database]
        created = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
        if created.returncode != 0:
            raise Unavailable(f"createdb {database} failed: {created.stderr.strip()[-300:]}")
        yield Postgres(bindir, port, user, password, database)
    finally:
        if server is not None and server.poll() is None:
            server.send_signal(signal.SIGINT)  # fast shutdown: clients disconnected, no wait for them
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=30)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
