"""The order of builds that can share compiled units: with a compile cache, the first build
of a group (one source, one build description, one sanitizer: variants that differ in a
few files, bisect probes of one repository) runs at once, and the others of its group
wait for it to end, then compile only what differs (their other units are served from
the cache). Builds of different groups never wait for each other, and once a group's
first build has ended nothing of that group waits again.

Measured (docs/benchmarks.md): building the siblings together compiles every unit once
per sibling; after the first, each compiles only its own files, which costs less wall
time than the first build's share of the cores. `CSORCH_BUILD_SCHEDULE=together` starts
every build at once, as without a compile cache."""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

ENV = "CSORCH_BUILD_SCHEDULE"
POLL = 0.2  # seconds between looks at the cancel event while waiting

_lock = threading.Lock()
_first: dict[Hashable, threading.Event] = {}


def together() -> bool:
    """Whether every build starts at once (`CSORCH_BUILD_SCHEDULE=together`)."""
    return os.environ.get(ENV, "") == "together"


@contextmanager
def turn(group: Hashable, cancel: threading.Event | None = None) -> Iterator[bool]:
    """Held around one build of `group`: the group's first build enters at once (yields
    True) and the others wait until it has ended (yield False). `cancel` set while
    waiting raises KeyboardInterrupt."""
    with _lock:
        done = _first.get(group)
        leads = done is None
        if leads:
            done = _first[group] = threading.Event()
    assert done is not None
    if not leads:
        while not done.wait(POLL):
            if cancel is not None and cancel.is_set():
                raise KeyboardInterrupt
    try:
        yield leads
    finally:
        if leads:
            done.set()


def forget() -> None:
    """Every group's first build forgotten (a new run in the same process: tests)."""
    with _lock:
        _first.clear()
