"""judge/optouts: what a fix adds over its controls, and the verdict it makes."""

from __future__ import annotations

from orchestrator.judge import optouts

CONTROL = ("__asan_poison_memory_region alloc.c:10", "no_sanitize_address pool.c:3")


def test_an_opt_out_the_controls_share_is_not_the_fixs() -> None:
    assert optouts.added(CONTROL, [CONTROL]) == []


def test_moving_an_opt_out_to_another_file_adds_none() -> None:
    assert optouts.added(("no_sanitize_address arena.c:9",), [CONTROL]) == []


def test_one_more_of_a_marker_is_named_where_it_was_added() -> None:
    fix = (*CONTROL, "no_sanitize_address pick.c:6")
    assert optouts.added(fix, [CONTROL]) == [("no_sanitize_address", "pick.c:6")]
    fix = ("no_sanitize_address pool.c:3", "no_sanitize_address pool.c:40")
    assert optouts.added(fix, [CONTROL]) == [("no_sanitize_address", "pool.c:3")]


def test_against_every_control_the_most_any_has() -> None:
    fix = ("ASAN_OPTIONS t.py:4",)
    assert optouts.added(fix, [(), ("ASAN_OPTIONS t.py:9",)]) == []
    assert optouts.added(fix, [(), ()]) == [("ASAN_OPTIONS", "t.py:4")]


def test_without_a_control_tree_nothing_is_compared() -> None:
    assert optouts.added(("no_sanitize x.c:1",), []) == []
    marks = {"fixed": ("no_sanitize x.c:1",)}
    assert optouts.reasons("fixed", ("release",), marks) == []


def test_the_reason_names_the_fix_the_marker_and_the_place() -> None:
    marks = {"fixed": ("no_sanitize x.c:1",), "control": ()}
    (reason,) = optouts.reasons("fixed", ("control",), marks)
    assert reason.startswith("fix fixed adds no_sanitize (x.c:1), which none of the controls has")
