"""The fast tier's guard: a unit test that starts a child process must say so.

`make test-fast` runs `tests/unit -m "not process"`: the pure-logic tests, which build
nothing and start no child. So that the tier stays what it claims, a test without the
`process` mark that starts a child fails here (at the fork, naming the argv), instead of
silently slowing the tier down. Modules whose tests run builds, sanitizers, git or the
CLI in a child carry `pytestmark = pytest.mark.process`.
"""

from __future__ import annotations

import subprocess

import pytest


@pytest.fixture(autouse=True)
def _no_child_unless_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    if request.node.get_closest_marker("process") is not None:
        return

    def refuse(self, args, *rest, **kw):
        raise AssertionError(
            f"{request.node.nodeid} starts a child process ({args!r}) but is not marked "
            "`process`: mark it (pytestmark = pytest.mark.process), or keep it pure"
        )

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)  # undone after the test
