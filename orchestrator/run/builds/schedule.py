"""The order of builds that can share compiled units: with a compile cache, the first build
of a group (one source, one build description, one sanitizer: variants that differ in a
few files, bisect probes of one repository) runs at once, and the others of its group
wait for it to end, then compile only what differs (their other units are served from
the cache). Builds of different groups never wait for each other, and once a group's
first build has ended nothing of that group waits again.

Which order is the default was decided from measurement (docs/benchmarks.md,
2026-12-05): on a 2-core host the gate took 137.5 s with a group's first build first and
155 s with every build at once (276.9 s without the compile cache): there the siblings
compete for the cores anyway, and compiling only what differs saves them. On a 16-core
GPU host (H100) it took 97 s first-then-siblings and 69 s all at once (68 s without the
compile cache): the waiting left cores idle. So the siblings wait only on a host with
fewer than FEW_CORES CPUs. `CSORCH_BUILD_SCHEDULE=together` starts every build at once
anywhere, `=first` orders them anywhere."""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

ENV = "CSORCH_BUILD_SCHEDULE"
POLL = 0.2  # seconds between looks at the cancel event while waiting

_lock = threading.Lock()
_first: dict[Hashable, threading.Event] = {}


FEW_CORES = 8


def together() -> bool:
    """Whether every build starts at once: `CSORCH_BUILD_SCHEDULE=together`, or, unless
    it says `first`, a host of FEW_CORES CPUs or more."""
    said = os.environ.get(ENV, "")
    if said in ("together", "first"):
        return said == "together"
    return (os.cpu_count() or 1) >= FEW_CORES


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
