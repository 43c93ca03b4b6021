"""A pytest plugin that marks case boundaries and outcomes, on channels of its own.

Loaded into each child pytest with ``-p orchestrator.markers.plugin`` (and ``-s``, so that
checker output is not swallowed by pytest's capture). It writes one line before and
after every test, and synchronizes the CUDA device at teardown so that errors of a
case's kernels are reported before its end marker. `orchestrator.markers.reader` reads
the markers back.

Where the markers go: with ``CSORCH_MARKERS=FILE`` (csorch's executor sets it), to that
file, opened once at start-up, and never to the case's stdout or stderr, so a test that
prints csorch's markers forges nothing (without it, to fd 2, as captured fixtures and
manual runs use). Under ASan the case boundaries are also written into the runtime's own
log (its ``__sanitizer_report_error_summary`` prints a line where its reports go, the
per-process ``log_path`` file), so that the reports between two of them belong to that
case. Each failing case's marker carries pytest's own reason (the exception's last line),
and a collection error its module and reason, for the attempt's record.

Under ASan with csorch's report-fold shim preloaded (orchestrator/backends/asan/shim.py),
it ends the shim's epoch at each case's start and end, so that the repeats the shim
counted are written between the markers of the case that made them.

It also serves csorch's executor, through the environment:
- ``CSORCH_FAST_EXIT=1`` (a run with no checker): once the session's end is marked and
  every other plugin has unconfigured, the process leaves with ``os._exit`` and pytest's
  exit status, skipping the interpreter's and torch's teardown, which nothing reads in
  a plain run. Read at start-up, so a test that changes the environment changes nothing;
  never under a checker, whose exit report (ASan's leak check, compute-sanitizer's
  summary) comes from that teardown.
- ``CSORCH_DONE_FILE``: node ids (one a line) already run by an earlier process of the
  same attempt; they are deselected, so a fresh process continues after a crash.
- ``CSORCH_PACKAGE_DIR`` and ``CSORCH_PACKAGES``: the build under test; if one of those
  packages would be imported from anywhere else (a dev install shadowing it), the
  session stops with an error instead of silently testing the wrong binary.
After a CUDA error at teardown the session stops (the context is gone: every later case
in this process would fail for no reason of its own); csorch reruns the rest elsewhere.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.util
import os
import re
import sys
import time
from pathlib import Path

import pytest

BEGIN = "[csorch-case-begin]"
END = "[csorch-case-end]"
OUTCOME = "[csorch-case-outcome]"
CUDA_ERROR = "[csorch-cuda-error]"
SESSION_END = "[csorch-session-end]"
IMPORT_ERROR = "[csorch-import-error]"
COLLECTED = "[csorch-collected]"
DEVICE = "[csorch-device]"
_device_named = False
CLOCK = "[csorch-clock]"
_fold_flush = None  # the fold shim's csorch_asan_fold_flush, where it is preloaded
_checker_line = None  # the ASan runtime's __sanitizer_report_error_summary, where loaded
_markers_fd = 2  # the markers file (CSORCH_MARKERS), else stderr
FAST_EXIT_VAR = "CSORCH_FAST_EXIT"
_fast_exit = False  # CSORCH_FAST_EXIT=1 at start-up and no checker watching
_session = None  # the session, for its final exit status at unconfigure
COLLECT_ERROR = "[csorch-collect-error]"
#: set by csorch under compute-sanitizer: each test runs under a frame naming its case
CASE_FRAMES_VAR = "CSORCH_CASE_FRAMES"
CONTEXT_LOST = "[csorch-context-lost]"
# a failure that means the CUDA context is gone (as markers.reader.LAUNCH_FAILURE_RE)
_LOST_RE = re.compile(r"unspecified launch failure|an illegal memory access was encountered")


def _process_start() -> float | None:
    """This process's start in epoch seconds (Linux /proc, 10 ms ticks), else None.
    Measured back from now through the uptime clock: /proc/stat's btime is whole
    seconds, which made the start up to a second early."""
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, starttime
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def _clock(event: str) -> None:
    # where an attempt's wall time goes (interpreter and checker start-up, collection,
    # cases, teardown): the executor's launch start is the other end. Timing, not evidence:
    # to the output log (fd 2), where `markers.reader.phases` reads it
    os.write(2, f"\n{CLOCK} {event} {time.time():.3f}\n".encode())


def _flush_folds() -> None:
    # the shim writes its counts to fd 2 itself, like the checker and these markers
    if _fold_flush is not None:
        _fold_flush()


def pytest_configure(config):
    global _fold_flush, _checker_line, _markers_fd, _fast_exit
    _fast_exit = (
        os.environ.get(FAST_EXIT_VAR) == "1" and os.environ.get("CSORCH_CHECKER") == "none"
    )
    path = os.environ.get("CSORCH_MARKERS")
    if path:
        _markers_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        _fold_flush = ctypes.CDLL(None).csorch_asan_fold_flush
    except (OSError, AttributeError):  # no shim in this process: nothing to flush
        _fold_flush = None
    try:
        _checker_line = ctypes.CDLL(None).__sanitizer_report_error_summary
        _checker_line.argtypes = [ctypes.c_char_p]
    except (OSError, AttributeError):  # no ASan runtime in this process
        _checker_line = None
    start = _process_start()
    if start is not None:
        os.write(2, f"\n{CLOCK} process {start:.3f}\n".encode())
    _clock("configure")


def _mark(kind: str, nodeid: str, extra: str = "") -> None:
    # os.write on the raw fd: unbuffered, so the order with the checker's writes holds.
    os.write(_markers_fd, f"\n{kind} {nodeid}{extra}\n".encode())


def _mark_checker(kind: str, nodeid: str) -> None:
    # a case boundary in the ASan runtime's own log, in order with its reports
    if _checker_line is not None:
        _checker_line(f"{kind} {nodeid}".encode(errors="replace"))


def pytest_collection_modifyitems(session, config, items):
    done_file = os.environ.get("CSORCH_DONE_FILE")
    if not done_file:
        return
    done = set(Path(done_file).read_text().splitlines())
    kept = [item for item in items if item.nodeid not in done]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid in done])
        items[:] = kept


def pytest_collection_finish(session):
    # how many cases this process will run (after -k and the done file): when a crash
    # ends it at its last one, the executor knows no fresh process is needed
    _clock("collected")
    _mark(COLLECTED, str(len(session.items)))
    root = os.environ.get("CSORCH_PACKAGE_DIR")
    if not root:
        return
    root_path = Path(root).resolve()
    for name in filter(None, os.environ.get("CSORCH_PACKAGES", "").split(",")):
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None) if module else None
        if origin is None:
            spec = importlib.util.find_spec(name)
            origin = spec.origin if spec is not None else None
        if origin is None or not Path(origin).resolve().is_relative_to(root_path):
            message = f"{name} comes from {origin}, not from the build under test {root}"
            if origin is not None and Path(origin).resolve().is_relative_to(
                session.config.rootpath.resolve()
            ):
                message += (
                    "; the tests' own tree is ahead of the build on sys.path: pytest's"
                    " default import mode puts a test's directory there (add"
                    " --import-mode=importlib to the case's args), a `pythonpath` setting"
                    " in the project's pytest configuration puts its own (-o pythonpath=),"
                    " a conftest.py may insert one (--noconftest)"
                )
            _mark(IMPORT_ERROR, name, f" {message}")
            pytest.exit(f"csorch: {message}", returncode=4)


_begun = 0  # the cases this process has begun (the index of the next one's frame)


def _case_frame(index: int, function):
    """`function` called through a Python frame named `csorch_case_<index>`: under
    compute-sanitizer, whose file holds no case markers, a host backtrace through it names
    the case (`Backend.attribute`), parametrized or not."""
    name = f"csorch_case_{index}"
    source = (
        f"def {name}(_csorch_call, *args, **kwargs):\n    return _csorch_call(*args, **kwargs)\n"
    )
    space: dict = {}
    exec(compile(source, __file__, "exec"), space)  # noqa: S102 - a fixed two-line trampoline
    trampoline = space[name]
    return functools.wraps(function)(functools.partial(trampoline, function))


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    if not os.environ.get(CASE_FRAMES_VAR):
        return (yield)
    original = pyfuncitem.obj
    pyfuncitem.obj = _case_frame(_begun - 1, original)
    try:
        return (yield)
    finally:
        pyfuncitem.obj = original


def pytest_runtest_logstart(nodeid, location):
    global _begun
    _begun += 1
    _clock("case-begin")
    _flush_folds()  # repeats from before this case (collection, an earlier teardown)
    _mark(BEGIN, nodeid)
    _mark_checker(BEGIN, nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    torch = sys.modules.get("torch")  # a test that never imported torch used no GPU
    if torch is None:
        return
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        _name_device(torch)
        try:
            # Load-bearing: flushes this case's kernel errors before its end marker.
            torch.cuda.synchronize()
        except RuntimeError as e:
            _mark(CUDA_ERROR, item.nodeid, f" {str(e).splitlines()[0]}")
            item.session.shouldstop = "csorch: the CUDA context is gone"


def _name_device(torch) -> None:
    """Once per process: the GPU this process really used, by UUID and PCI bus id, so that
    a per-rank attempt proves it ran on the GPU its rank was given. A process whose first
    case destroyed the context names none (reports: "not reported")."""
    global _device_named
    if _device_named:
        return
    try:
        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
    except RuntimeError:  # a lost context: a later process of the attempt names it
        return
    _device_named = True
    uuid = str(getattr(props, "uuid", "") or "")
    if uuid and not uuid.startswith(("GPU-", "MIG-")):
        uuid = "GPU-" + uuid
    domain, bus, dev = (getattr(props, f"pci_{k}_id", 0) for k in ("domain", "bus", "device"))
    pci = f"{domain:04x}:{bus:02x}:{dev:02x}.0"
    _mark(DEVICE, uuid or "unknown", f" pci={pci} index={index} name={props.name}")


def _why(report) -> str:
    """pytest's own reason for a failed report, on one line: the exception's message
    (`reprcrash`), else the last `E` line, else the last line of its text."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", "") or ""
    if not text:
        lines = str(report.longrepr or "").splitlines()
        errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
        text = errors[-1] if errors else next((ln for ln in reversed(lines) if ln.strip()), "")
    return " ".join(text.split())[:300]


def _outcome(report, outcome: str) -> None:
    why = _why(report) if report.failed else ""
    _mark(OUTCOME, report.nodeid, f" {outcome}" + (f" {REASON_SEP} {why}" if why else ""))
    if report.failed and (m := _LOST_RE.search(str(report.longrepr or ""))):
        # the case lost the CUDA context: the cases after it run in a fresh process
        _mark(CONTEXT_LOST, report.nodeid, f" CUDA error: {m[0]}")


REASON_SEP = "::reason::"


def pytest_runtest_logreport(report):
    if report.when == "call":
        _outcome(report, report.outcome)
    elif report.outcome == "skipped" and report.when == "setup":
        _outcome(report, "skipped")
    elif report.outcome == "failed":  # pytest counts a failing fixture as an error
        _outcome(report, "error")


def pytest_collectreport(report):
    # a module that does not import (ModuleNotFoundError, a syntax error): its reason,
    # which would otherwise reach csorch only as the last line of the output
    if report.failed:
        _mark(COLLECT_ERROR, report.nodeid or ".", f" {_why(report)}")


def pytest_runtest_logfinish(nodeid, location):
    _flush_folds()  # this case's repeats, before its end marker
    _mark_checker(END, nodeid)
    _mark(END, nodeid)
    _clock("case-end")


def pytest_sessionfinish(session, exitstatus):
    global _session
    _session = session
    _clock("session-end")
    _mark(SESSION_END, str(int(exitstatus)))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    # the last hook of a session: every plugin has written what it writes
    if not _fast_exit or _session is None:
        return
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()
    os._exit(int(_session.exitstatus))
