"""The compile cache's remote storage: a Redis server every host that builds shares (the
login and CI nodes of a cluster, through the Slurm executor's config), so a cluster
compiles each unit once. ccache speaks to it (its `redis` storage); csorch only carries
the bytes.

A build runs in a sandbox without network (its own namespace, a loopback of its own), so
ccache cannot reach the server's address from there. csorch relays instead: a unix
socket in a directory of its own (`Relay.socket`; the builds' sandbox may write there and
nowhere else new), each connection to it forwarded to the server over TCP from csorch's
process, outside the sandbox. ccache is pointed at the socket (`redis+unix:PATH`), so
nothing in a build can reach any other address.

The address: `redis://HOST[:PORT][/DB]` (port 6379, database 0 by default), from
`--compile-cache-remote`, `CSORCH_COMPILE_CACHE_REMOTE` or the config's
`slurm: compile_cache:`. No credentials in the URL: a password in a config file or a
command line is readable by others; run the server on a private network, or
password-less on the cluster's own interface."""

from __future__ import annotations

import atexit
import contextlib
import socket
import tempfile
import threading
from pathlib import Path

from orchestrator import files
from orchestrator.config.compile_cache import ENV, Address, configured, parse

__all__ = ["ENV", "Address", "Relay", "configured", "parse", "reachable", "relay"]

CONNECT_TIMEOUT = 5.0


class Relay:
    """A unix socket whose connections are carried to `address` over TCP, each by two
    daemon threads (one per direction), for as long as csorch runs."""

    def __init__(self, address: Address) -> None:
        self.address = address
        self.directory = Path(tempfile.mkdtemp(prefix="csorch-ccache-"))  # short: 108 bytes
        self.socket = self.directory / "redis.sock"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.socket))
        self._server.listen(64)
        self.connections = 0
        self.failures = 0
        threading.Thread(target=self._accept, name="csorch-ccache-relay", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._carry, args=(client,), daemon=True).start()

    def _carry(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(
                (self.address.host, self.address.port), timeout=CONNECT_TIMEOUT
            )
        except OSError:
            self.failures += 1  # ccache reports the remote as failing and builds on
            client.close()
            return
        self.connections += 1
        upstream.settimeout(None)
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()

    def storage(self) -> str:
        """ccache's remote storage setting for this relay."""
        return f"redis+unix:{self.socket}" + (f"?db={self.address.db}" if self.address.db else "")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.close()
        files.remove_tree(self.directory, ignore_errors=True)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(1 << 16):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            source.close()


_relays: dict[Address, Relay] = {}
_lock = threading.Lock()


def relay(address: Address) -> Relay:
    """This process's relay to `address` (started once, closed at exit)."""
    with _lock:
        found = _relays.get(address)
        if found is None:
            found = _relays[address] = Relay(address)
            atexit.register(found.close)
        return found


def reachable(address: Address) -> str:
    """ "" when a TCP connection to the server opens, else why not (doctor's line)."""
    try:
        socket.create_connection((address.host, address.port), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        return exc.strerror or str(exc)
    return ""
