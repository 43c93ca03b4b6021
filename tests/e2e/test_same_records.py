"""A change to how csorch is put together keeps what it records: the bundles of the C
subject's three configs (a fix, no fix, a patch that does not apply) under ASan, masked
by `tests/essence.py`, are the ones recorded from real runs in tests/fixtures/records/.
(qext's: tests/e2e/test_run_asan.py, beside the run it reuses.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import essence

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("verdict", ["pass", "fail", "inconclusive"])
def test_the_c_subject_records_what_it_recorded(
    cprog_bundles: dict[str, Path], verdict: str
) -> None:
    out = cprog_bundles[verdict]
    got = essence.essence(out, out.parent / "cache")
    assert got["results.json"]["verdict"] == {"inconclusive": "inconclusive"}.get(verdict, verdict)
    assert essence.compare(got, f"c-oob-{verdict}") == []
