"""Reading a child pytest's case markers back: which nodes ran, how each ended, and
whether the process stopped before its session did.

The plugin (`markers.plugin`) writes the markers; this module reads one launch's log and
returns a `LaunchReport`. Pure: lines in, record out. The executor uses it to decide
whether the cases after a crash or a destroyed CUDA context need a fresh process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.model import NodeResult, Outcome

# (`.*\S|\s`: linear on a long run of spaces, where `.+?\s*$` is quadratic)
# [csorch-case-begin] tests/regression/test_rng_ownership.py::test_replay[cpu-64x96]
BEGIN_RE = re.compile(r"^\[csorch-case-begin\] (?P<node>.*\S|\s)\s*$")
# [csorch-case-end] tests/regression/test_rng_ownership.py::test_replay[cpu-64x96]
END_RE = re.compile(r"^\[csorch-case-end\] (?P<node>.*\S|\s)\s*$")
# [csorch-case-outcome] tests/regression/test_rng_ownership.py::test_replay[cpu-64x96] failed
OUTCOME_RE = re.compile(
    r"^\[csorch-case-outcome\] (?P<node>.+) (?P<outcome>passed|failed|skipped|error)\s*$"
)
# the reason pytest gave for a failed case, after its outcome:
# [csorch-case-outcome] tests/x.py::test_y failed ::reason:: AssertionError: planted
REASON_SEP = " ::reason:: "
# [csorch-collect-error] tests/test_x.py ModuleNotFoundError: No module named 'qext'
COLLECT_ERROR_RE = re.compile(r"^\[csorch-collect-error\] (?P<node>\S+) ?(?P<message>.*)$")
# [csorch-cuda-error] tests/x.py::test_y CUDA error: unspecified launch failure
CUDA_ERROR_RE = re.compile(
    r"^\[csorch-cuda-error\] (?P<node>\S+(?:\[[^\]]*\])?)(?: (?P<message>.*))?$"
)
# [csorch-context-lost] tests/x.py::test_y CUDA error: unspecified launch failure
CONTEXT_LOST_RE = re.compile(
    r"^\[csorch-context-lost\] (?P<node>\S+(?:\[[^\]]*\])?)(?: (?P<message>.*))?$"
)
# [csorch-session-end] 1
# (bounded digits: a corrupt marker is no marker, never a crash in int())
SESSION_END_RE = re.compile(r"^\[csorch-session-end\] (?P<status>-?[0-9]{1,9})\s*$")
# [csorch-import-error] qext qext comes from /src/qext/__init__.py, not from ...
IMPORT_ERROR_RE = re.compile(r"^\[csorch-import-error\] (?P<package>\S+) (?P<message>.*)$")
# [csorch-collected] 9
COLLECTED_RE = re.compile(r"^\[csorch-collected\] (?P<count>[0-9]{1,9})\s*$")
# [csorch-device] GPU-6a1c0c5e-... pci=0000:19:00.0 index=0 name=NVIDIA H200
DEVICE_RE = re.compile(r"^\[csorch-device\] (?P<uuid>\S+)(?: pci=(?P<pci>\S+))?(?: .*)?$")
# [csorch-clock] collected 1764582301.512
CLOCK_RE = re.compile(
    r"^\[csorch-clock\] (?P<event>[\w-]+) (?P<time>[0-9]{1,12}(?:\.[0-9]{1,9})?)\s*$"
)
# RuntimeError: CUDA error: unspecified launch failure   (anywhere in a line)
LAUNCH_FAILURE_RE = re.compile(
    r"unspecified launch failure|an illegal memory access was encountered"
)

#: where the plugin writes its markers: a file of their own, not the case's stdout/stderr
MARKERS_VAR = "CSORCH_MARKERS"

DIED = "the process died during this case"

_RANK = {Outcome.SKIPPED: 0, Outcome.PASSED: 1, Outcome.FAILED: 2, Outcome.ERROR: 3}


@dataclass(frozen=True)
class LaunchReport:
    """What one process's markers say."""

    nodes: tuple[NodeResult, ...]  # in the order they began
    session_status: int | None  # pytest's exit status; None: the session never finished
    context_lost: str = ""  # node id after which the CUDA context was gone
    import_error: str = ""
    collected: int | None = None  # the cases this process set out to run
    gpu: str = ""  # the GPU the process used (UUID), as the plugin saw it
    #: pytest's reason for each module that did not collect: "tests/t.py: ModuleNotFoundError: ..."
    collect_errors: tuple[str, ...] = ()

    @property
    def unrun(self) -> int | None:
        """Cases this process collected but did not run to a trusted end (None: unknown,
        the session never reported its collection)."""
        if self.collected is None:
            return None
        kept = len(self.began)
        if self.context_lost:
            kept = self.began.index(self.context_lost) + 1
        return max(self.collected - kept, 0)

    @property
    def finished(self) -> bool:
        """The session ended by itself and every node in it can be trusted."""
        return self.session_status is not None and not self.context_lost

    @property
    def began(self) -> tuple[str, ...]:
        return tuple(n.nodeid for n in self.nodes)


def read(lines: Iterable[str]) -> LaunchReport:
    """Parse one launch's log."""
    order: dict[str, None] = {}  # an ordered set: each node once, in the order it began
    outcomes: dict[str, Outcome] = {}
    details: dict[str, str] = {}
    ended: set[str] = set()
    current = ""
    status: int | None = None
    lost = ""
    import_error = ""
    collected: int | None = None
    gpu = ""
    collect_errors: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line.startswith("[csorch-"):
            if LAUNCH_FAILURE_RE.search(line) and current and not lost:
                lost = current  # the context died inside this case
                details.setdefault(current, "CUDA context lost: " + line.strip()[:200])
            continue
        if m := BEGIN_RE.match(line):
            current = m["node"]
            order.setdefault(current)
        elif m := END_RE.match(line):
            ended.add(m["node"])
            current = ""
        elif line.startswith("[csorch-case-outcome] ") and (
            m := OUTCOME_RE.match(line.split(REASON_SEP, 1)[0])
        ):
            node, outcome = m["node"], Outcome(m["outcome"])
            order.setdefault(node)
            if _RANK[outcome] >= _RANK.get(outcomes.get(node, Outcome.SKIPPED), 0):
                outcomes[node] = outcome
                if REASON_SEP in line:  # pytest's own reason for the failure
                    details[node] = line.split(REASON_SEP, 1)[1].strip()[:300]
        elif m := CUDA_ERROR_RE.match(line):
            node = m["node"]
            order.setdefault(node)  # its teardown ran, so it began (its marker was lost)
            lost = lost or node
            details[node] = "CUDA error at teardown: " + (m["message"] or "").strip()
            outcomes[node] = Outcome.ERROR
        elif m := CONTEXT_LOST_RE.match(line):
            node = m["node"]
            order.setdefault(node)
            lost = lost or node
            details.setdefault(node, "CUDA context lost: " + (m["message"] or "").strip()[:200])
        elif m := SESSION_END_RE.match(line):
            status = int(m["status"])
        elif m := IMPORT_ERROR_RE.match(line):
            import_error = m["message"]
        elif m := COLLECTED_RE.match(line):
            collected = int(m["count"])
        elif m := DEVICE_RE.match(line):
            gpu = gpu or m["uuid"]
        elif m := COLLECT_ERROR_RE.match(line):
            collect_errors.append(f"{m['node']}: {m['message'].strip()}"[:300])
    nodes = []
    for node in order:
        if node in outcomes and node in ended:
            outcome, detail = outcomes[node], details.get(node, "")
        else:
            outcome = Outcome.ERROR
            detail = details.get(node, DIED)
        nodes.append(NodeResult(node, outcome, detail))
    return LaunchReport(
        tuple(nodes), status, lost, import_error, collected, gpu, tuple(collect_errors)
    )


@dataclass(frozen=True)
class Phases:
    """Where one launch's wall time went, in seconds, from its clock marks and the
    executor's start and duration. A phase whose marks are missing is None."""

    startup: float | None  # launch to the Python process (a checker that starts first)
    interpreter: float | None  # Python, pytest, plugins and the rootdir conftests (torch?)
    collection: float | None  # conftest and test modules imported (torch, the extension)
    cases: float | None  # first case begins to the session's end
    first_case: float | None  # the first case alone (lazy init, a CUDA context)
    other_cases: tuple[float, ...]  # each later case
    exit: float | None  # session end to the process's exit (a checker's final report)


def phases(lines: Iterable[str], started: float, duration: float) -> Phases:
    """Split a launch's wall time by its `[csorch-clock]` marks (see case_markers)."""
    marks: dict[str, list[float]] = {}
    for line in lines:
        if line.startswith("[csorch-clock]") and (m := CLOCK_RE.match(line.rstrip())):
            marks.setdefault(m["event"], []).append(float(m["time"]))

    def one(event: str) -> float | None:
        return marks[event][0] if marks.get(event) else None

    def span(a: float | None, b: float | None) -> float | None:
        # the process start has 10 ms ticks: never report a negative phase
        return max(b - a, 0.0) if a is not None and b is not None else None

    begins, ends = marks.get("case-begin", []), marks.get("case-end", [])
    each = [max(e - b, 0.0) for b, e in zip(begins, ends, strict=False)]
    end = started + duration if started else None
    return Phases(
        startup=span(started or None, one("process")),
        interpreter=span(one("process"), one("configure")),
        collection=span(one("configure"), one("collected")),
        cases=span(begins[0] if begins else None, one("session-end")),
        first_case=each[0] if each else None,
        other_cases=tuple(each[1:]),
        exit=span(one("session-end"), end),
    )
