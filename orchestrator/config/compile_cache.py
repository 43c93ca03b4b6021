"""The compile cache's remote storage as configured: `redis://HOST[:PORT][/DB]` from
`--compile-cache-remote` (which sets `CSORCH_COMPILE_CACHE_REMOTE`) or the config's
`slurm: compile_cache:`. Pure: run/builds/remote.py relays builds to it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from orchestrator.errors import CsorchError

ENV = "CSORCH_COMPILE_CACHE_REMOTE"
DEFAULT_PORT = 6379
_URL = re.compile(
    r"^redis://(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])"
    r"(?::(?P<port>[0-9]{1,5}))?(?:/(?P<db>[0-9]{1,2})?)?\Z"
)


@dataclass(frozen=True)
class Address:
    host: str
    port: int = DEFAULT_PORT
    db: int = 0

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/{self.db}"


def parse(url: str, where: str = ENV) -> Address:
    """`redis://HOST[:PORT][/DB]` as an Address; CsorchError naming `where` otherwise."""
    text = url.strip()
    m = _URL.match(text)
    if m is None:
        hint = "e.g. redis://cachehost:6379 (no credentials: see docs/slurm.md)"
        if "@" in text:
            raise CsorchError(
                f"{where}: credentials in the compile cache's URL are refused: a password in "
                "a config or a command line is readable by others",
                hint="run the Redis server password-less on a private network; " + hint,
            )
        raise CsorchError(f"{where}: {text!r} is not a Redis URL", hint=hint)
    port = int(m["port"] or DEFAULT_PORT)
    if not 0 < port < 65536:
        raise CsorchError(f"{where}: port {port} is out of range")
    return Address(m["host"].strip("[]"), port, int(m["db"] or 0))


def configured(config_value: str = "") -> Address | None:
    """The remote storage asked for: the environment's (a flag sets it) over the config's."""
    named = os.environ.get(ENV, "").strip()
    if named:
        return parse(named, ENV)
    if config_value:
        return parse(config_value, "slurm: compile_cache")
    return None
