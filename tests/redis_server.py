"""A real Redis server on loopback for the compile cache's remote storage tests: started
in a temp directory on a free port, nothing saved to disk, stopped at the end."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path


def missing() -> str:
    """Why no server can be started here ("" when one can)."""
    return "" if shutil.which("redis-server") else "redis-server is not installed (make slurm-deps)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def keys(port: int) -> int:
    """How many keys the server holds (DBSIZE)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"DBSIZE\r\n")
        return int(s.recv(64).strip().lstrip(b":"))


@contextlib.contextmanager
def server(directory: Path) -> Iterator[int]:
    """A running server; yields its port."""
    port = _free_port()
    directory.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(directory), "--logfile", str(directory / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not _ping(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start: {directory / 'redis.log'}")
            time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
