"""cs_dispatch: one regex finds the row a loop over the table would."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.backends.dispatch import Dispatch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = sorted((FIXTURES / "compute-sanitizer").rglob("*.log"))


def loop(table, text: str) -> tuple[int, re.Match[str] | None]:
    for row, (pattern, _) in enumerate(table):
        if m := pattern.match(text):
            return row, m
    return -1, None


def bodies() -> list[str]:
    """Every checker line of the real logs, stripped as the parser sees it, plus the
    other logs' lines (ASan, application output): text the grammar must not misread."""
    out = set()
    for log in sorted(FIXTURES.rglob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            out.add(line.removeprefix(cs_log.PREFIX).strip())
    return sorted(out)


@pytest.mark.parametrize("table", [cs_log.HEADERS, cs_log.DETAILS], ids=["headers", "details"])
def test_dispatch_finds_the_row_a_loop_finds_on_every_line_of_every_log(table) -> None:
    dispatch = Dispatch(table)
    texts = bodies()
    assert len(texts) > 1000
    hits = 0
    for text in texts:
        row, m = loop(table, text)
        found, fm = dispatch.find(text)
        assert found == row, text
        if m is not None:
            hits += 1
            assert fm is not None and fm.groupdict() == m.groupdict()
            assert dispatch.key(text) == dispatch.key_of(row, m)
    assert hits > 50


@pytest.mark.parametrize("table", [cs_log.HEADERS, cs_log.DETAILS], ids=["headers", "details"])
def test_all_keyed_agrees_with_key_on_every_line_of_every_log(table) -> None:
    dispatch = Dispatch(table)
    by_key: dict[tuple, list[str]] = {}
    for text in bodies():
        by_key.setdefault(dispatch.key(text) or (), []).append(text)
    assert len(by_key) > 20
    items = sorted(by_key, key=repr)
    for item, texts in by_key.items():
        assert dispatch.all_keyed(texts, item), item
        other = items[(items.index(item) + 1) % len(items)]  # one text of another key
        assert not dispatch.all_keyed([*texts, by_key[other][0]], item), (item, other)
    assert dispatch.all_keyed([], ()) and dispatch.all_keyed([], items[-1])


def test_a_key_keeps_every_group_but_the_volatile_ones() -> None:
    details = Dispatch(cs_log.DETAILS)
    at = details.key("at k(float *)+0xb0 in /src/k.cu:41")
    assert at == (0, "k(float *)+0xb0 in /src/k.cu:41")
    assert details.key("by thread (1,0,0) in block (8,0,0)") == (1,)  # thread, block: volatile
    assert details.key("Access to 0x7f00 is out of bounds") == (2, "is out of bounds")
    assert details.key("nothing the grammar knows") is None
    headers = Dispatch(cs_log.HEADERS)
    one = headers.key("Error: Potential RAW hazard detected at __shared__ 0x400 in block (0,0,0) :")
    other = headers.key("Error: Potential RAW hazard detected at __shared__ 0x7 in block (1,2,0) :")
    assert one == other and one is not None and "RAW" in one


def test_classes_escapes_and_unnamed_groups_are_rewritten_not_broken() -> None:
    table = [
        (re.compile(r"^a[]()]+(x)$"), None),
        (re.compile(r"^\(b(?P<address>[^)]*)\)(?P<kept>[(])(?:c|d)$"), None),
        (re.compile(r"^(?P<v>.*)$"), None),
    ]
    dispatch = Dispatch(table)
    assert dispatch.find("a](x")[0] == 0 and dispatch.key("a](x") == (0, "x")
    assert dispatch.key("(b12)(c") == (1, "(")
    assert dispatch.key("zz") == (2, "zz")
    with pytest.raises(ValueError, match="back-references"):
        Dispatch([(re.compile(r"^(?P<a>x)(?P=a)$"), None)])
