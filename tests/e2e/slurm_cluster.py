"""A real single-node Slurm cluster in a temp directory, for tests/e2e/test_run_slurm.py.

munged, slurmctld and slurmd run in the foreground as this test's children (so the
test owns their pids and ends exactly those), on free localhost ports, with a
generated munge key and slurm.conf. What makes slurmd run in a container without a
GPU or systemd: proctrack/linuxproc and task/none (no cgroup plugins),
jobacct_gather/none, accounting_storage/none (no slurmdbd: sacct answers "accounting
storage is disabled", so the executor's squeue path is what gets exercised), and a
fake GPU: `Gres=gpu:1` with gres.conf `Name=gpu File=/dev/null`, which Slurm 22.05
accepts, so `--gres=gpu:1` is scheduled for real (one attempt at a time, and Slurm
sets CUDA_VISIBLE_DEVICES=0 in the task) while ASan does the checking on the CPU.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = {"munged": "/usr/sbin/munged", "slurmctld": "/usr/sbin/slurmctld",
           "slurmd": "/usr/sbin/slurmd"}  # fmt: skip
CLIENTS = ("sbatch", "squeue", "sacct", "scancel", "scontrol", "sinfo")
NODE = "csorch1"


def missing() -> list[str]:
    """The daemons and commands this machine lacks (`make slurm-deps` installs them)."""
    gone = [name for name, path in DAEMONS.items() if not os.access(path, os.X_OK)]
    return gone + [c for c in CLIENTS if shutil.which(c) is None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """Start with `start()`, end with `stop()`; `env` is what a client needs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.children: dict[str, subprocess.Popen] = {}

    def write_config(self) -> None:
        r = self.root
        for d in ("munge", "state", "spool", "log"):
            (r / d).mkdir(parents=True, exist_ok=True)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (r / "munge").chmod(0o700)
        cpus = os.cpu_count() or 1
        ctld, slurmd = _free_port(), _free_port()
        host = socket.gethostname()
        self.conf.write_text(
            f"""ClusterName=csorchtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={r}/munge/munge.socket
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
MinJobAge=600
KillWait=5
GresTypes=gpu
NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
"""
        )
        (r / "gres.conf").write_text("Name=gpu File=/dev/null\n")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "wb")  # noqa: SIM115 (kept open)
        self.children[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
        )

    def start(self, timeout: float = 60.0) -> None:
        self.write_config()
        m = self.root / "munge"
        self._spawn("munged", [DAEMONS["munged"], "--foreground", "--force",
                               f"--key-file={m}/munge.key", f"--socket={m}/munge.socket",
                               f"--log-file={m}/munged.log", f"--pid-file={m}/munged.pid",
                               f"--seed-file={m}/seed"])  # fmt: skip
        self._wait(lambda: (m / "munge.socket").exists(), timeout, "munged's socket")
        self._spawn("slurmctld", [DAEMONS["slurmctld"], "-D", "-f", str(self.conf)])
        self._spawn("slurmd", [DAEMONS["slurmd"], "-D", "-f", str(self.conf), "-N", NODE])
        self._wait(self._idle, timeout, f"node {NODE} idle in sinfo")

    def _idle(self) -> bool:
        out = self.client("sinfo", "--noheader", "--format=%T", check=False)
        return out.returncode == 0 and out.stdout.strip() == "idle"

    def _wait(self, ready, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [n for n, p in self.children.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the test cluster did not come up ({what}; exited: {dead}):\n" + self.logs()
                )
            time.sleep(0.2)

    def client(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=60, check=check
        )

    def logs(self) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            text = path.read_text(errors="replace").splitlines()[-15:]
            parts.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(parts)

    def stop(self) -> None:
        # slurmd first: its job steps go with it; munged last, the others need it
        for name in ("slurmd", "slurmctld", "munged"):
            child = self.children.get(name)
            if child is None or child.poll() is not None:
                continue
            child.terminate()
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
