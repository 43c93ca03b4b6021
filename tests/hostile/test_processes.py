"""A process csorch does not see: a "fix" whose program forks a child (no exec) that
makes the bad access after its parent has exited, in the parent's group or out of its
session. Unsandboxed, the child was killed with the group without a trace, or outlived
csorch, and the run was PASS; in the sandbox the launch's stragglers make the attempt
inconclusive, named, and the run is not PASS."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
from harness import csorch, experiment, said

from orchestrator import sandbox

HOSTILE_FIX = """\
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int sum(const int *values, int n) {{
    int total = 0;
    for (int i = 0; i < n; ++i)
        total += values[i];
    return total;
}}

int main(void) {{
    int n = 8;
    int *values = malloc(n * sizeof *values);
    for (int i = 0; i < n; ++i)
        values[i] = i;
    printf("sum %d\\n", sum(values, n));
    fflush(stdout);
    if (fork() == 0) {{  /* no exec: the same program, once its parent is gone */
        {leave}
        usleep(300000);
        printf("late %d\\n", sum(values, n + 1));  /* the defect, one past the end */
        _exit(0);
    }}
    return 0;
}}
"""
LEAVE = {
    "same-group": "",
    "setsid-double-fork": "setsid(); if (fork() != 0) _exit(0);",
}


@pytest.mark.parametrize("leave", sorted(LEAVE))
def test_a_fix_whose_child_does_the_bad_access_late_is_not_a_pass(
    place: Path, leave: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(sandbox.ENV, "1")  # the opt-in, passed on to csorch's process
    sandbox.probe.cache_clear()
    support = sandbox.probe()
    sandbox.probe.cache_clear()  # the next test asks with its own environment
    if not support.works:
        pytest.skip(f"this host cannot sandbox: {support.fact}")
    original = (place / "subject" / "pick.c").read_text().splitlines(keepends=True)
    hostile = HOSTILE_FIX.format(leave=LEAVE[leave]).splitlines(keepends=True)
    patch = "".join(difflib.unified_diff(original, hostile, "a/pick.c", "b/pick.c"))
    (place / "fix.patch").write_text(patch)
    config = experiment(place)
    done = csorch(place, "run", config, "--backend", "asan", "--out", "out")
    results = json.loads((place / "out" / "results.json").read_text())
    assert results["verdict"] != "pass", said(done)[-3000:]
    assert done.returncode != 0
    errors = [a.get("error", "") for a in results["attempts"] if a["variant"] == "fixed"]
    assert errors and all("outlived the launch" in e and "pick" in e for e in errors), errors
