"""A pytest plugin that bounds each test: a hung case ends as one inconclusive case, not
as a timeout of the whole attempt.

Loaded into the child pytest with ``-p orchestrator.markers.timeout`` when the run has a
`case_timeout`; ``CSORCH_CASE_TIMEOUT`` holds the seconds. Each test (setup, call and
teardown) runs under ``faulthandler.dump_traceback_later(..., exit=True)``: past the
limit, faulthandler's own C thread writes every thread's traceback to fd 2 and ends the
process, even when the test is stuck in C code holding the GIL (a Python timer thread or
SIGALRM handler would wait for it). The markers then show a case that began and never
ended: the reader records it as ERROR, and the executor runs the cases after it in a
fresh process. The attempt's own `timeout` still bounds everything.
"""

from __future__ import annotations

import faulthandler
import os
import re
import sys

ENV = "CSORCH_CASE_TIMEOUT"
# Timeout (0:00:30)!   (faulthandler's first line when dump_traceback_later fires)
FIRED_RE = re.compile(
    r"^Timeout \((?P<h>[0-9]{1,6}):(?P<m>[0-9]{2}):(?P<s>[0-9]{2}(?:\.[0-9]+)?)\)!"
)


def seconds() -> float | None:
    """The limit from the environment; None when unset, empty or not a positive number."""
    try:
        value = float(os.environ.get(ENV, ""))
    except ValueError:
        return None
    return value if value > 0 else None


def fired(lines) -> float | None:  # type: ignore[no-untyped-def]
    """The limit a log says faulthandler's timeout fired at, in seconds (None: it did not)."""
    for line in lines:
        if m := FIRED_RE.match(line):
            return int(m["h"]) * 3600 + int(m["m"]) * 60 + float(m["s"])
    return None


# logstart and logfinish bracket a test's setup, call and teardown. Plain hooks: this
# module imports no pytest, so the executor can read ENV and FIRED_RE cheaply.
def pytest_runtest_logstart(nodeid, location):  # type: ignore[no-untyped-def]
    limit = seconds()
    if limit is not None:
        sys.stderr.flush()
        # exit=True: the process ends; a hung kernel or lock never returns to Python
        faulthandler.dump_traceback_later(limit, exit=True, file=sys.__stderr__)


def pytest_runtest_logfinish(nodeid, location):  # type: ignore[no-untyped-def]
    if seconds() is not None:
        faulthandler.cancel_dump_traceback_later()
