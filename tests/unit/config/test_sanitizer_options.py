"""The sanitizer runtimes' option string: a value csorch writes reads back exactly, or is
refused (both quotes); a user's string is split as the runtime splits it, or refused
where the runtime would stop. Checked against the runtime itself in
tests/unit/backends/asan/test_options_runtime.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.config import sanitizer_options as so
from tests.unit.hostile_text import QUICK, hostile, long_text


@QUICK
@given(hostile)
def test_a_value_round_trips_or_is_refused(text: str) -> None:
    try:
        item = so.pair("log_path", text)
    except so.OptionsError:
        assert "\0" in text or ('"' in text and "'" in text)
        return
    items = so.split(f"halt_on_error=0:{item},atexit=1")
    assert items[0] == "halt_on_error=0" and items[-1] == "atexit=1"
    assert len(items) == 3 and so.value(items[1]) == ("log_path", text)


@QUICK
@given(st.one_of(hostile, long_text))
def test_any_user_string_splits_or_is_refused_by_name(text: str) -> None:
    try:
        items = so.split(text)
    except so.OptionsError as exc:
        assert str(exc)
        return
    assert all("=" in i for i in items)
    assert so.split(":".join(items)) == items  # what csorch passes on reads the same


def test_quoted_values_keep_their_separators() -> None:
    text = "suppressions=\"/a b/s.supp\":log_path='/x:y,z' detect_leaks=1"
    assert so.split(text) == ['suppressions="/a b/s.supp"', "log_path='/x:y,z'", "detect_leaks=1"]
    assert so.value(so.split(text)[1]) == ("log_path", "/x:y,z")


@pytest.mark.parametrize("bad", ["halt_on_error", 'a="open', "a='x'b=1", "x=\0"])
def test_what_the_runtime_refuses_is_refused(bad: str) -> None:
    with pytest.raises(so.OptionsError):
        so.split(bad)
