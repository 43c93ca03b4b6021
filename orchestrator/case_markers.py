"""A pytest plugin that marks case boundaries in the checker's output.

Loaded into each child pytest with ``-p orchestrator.case_markers`` (and ``-s``, so that
checker output is not swallowed by pytest's capture). It writes one line to fd 2 before
and after every test, and synchronizes the CUDA device at teardown so that errors of a
case's kernels are reported before its end marker. Lines written by the checker between
two markers belong to that case.
"""

from __future__ import annotations

import os

import pytest

BEGIN = "[csorch-case-begin]"
END = "[csorch-case-end]"


def _mark(kind: str, nodeid: str, extra: str = "") -> None:
    # os.write on the raw fd: unbuffered, so the order with the checker's writes holds.
    os.write(2, f"\n{kind} {nodeid}{extra}\n".encode())


def pytest_runtest_logstart(nodeid, location):
    _mark(BEGIN, nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        try:
            # Load-bearing: flushes this case's kernel errors before its end marker.
            torch.cuda.synchronize()
        except RuntimeError as e:
            _mark("[csorch-cuda-error]", item.nodeid, f" {str(e).splitlines()[0]}")


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _mark("[csorch-case-outcome]", report.nodeid, f" {report.outcome}")


def pytest_runtest_logfinish(nodeid, location):
    _mark(END, nodeid)
