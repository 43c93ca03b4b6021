"""builds/schedule: a group's first build runs at once, its siblings after it has ended;
other groups never wait; a cancel ends the wait. Real threads, no sleeps as assertions."""

from __future__ import annotations

import threading

import pytest

from orchestrator.run.builds import schedule


@pytest.fixture(autouse=True)
def fresh():
    schedule.forget()
    yield
    schedule.forget()


def test_siblings_start_after_the_first_and_other_groups_at_once() -> None:
    order: list[str] = []
    first_in, release = threading.Event(), threading.Event()

    def first() -> None:
        with schedule.turn("qext") as leads:
            assert leads
            order.append("first started")
            first_in.set()
            release.wait(10)
            order.append("first ended")

    def sibling() -> None:
        with schedule.turn("qext") as leads:
            assert not leads
            order.append("sibling started")

    lead = threading.Thread(target=first)
    lead.start()
    assert first_in.wait(10)
    follower = threading.Thread(target=sibling)
    follower.start()
    with schedule.turn("other") as leads:  # another group: no wait for qext's first
        assert leads
        order.append("other started")
    follower.join(0.3)
    assert follower.is_alive()  # still waiting for the first build
    release.set()
    lead.join(10)
    follower.join(10)
    assert order == ["first started", "other started", "first ended", "sibling started"]
    with schedule.turn("qext") as leads:  # once the first has ended, nothing waits
        assert not leads


def test_a_failed_first_build_lets_its_siblings_go() -> None:
    with pytest.raises(RuntimeError), schedule.turn("g"):
        raise RuntimeError("the first build failed")
    with schedule.turn("g") as leads:
        assert not leads


def test_a_cancel_ends_the_wait() -> None:
    cancel = threading.Event()
    hold = threading.Event()

    def first() -> None:
        with schedule.turn("g"):
            hold.wait(10)

    lead = threading.Thread(target=first)
    lead.start()
    while "g" not in schedule._first:  # the first has entered
        threading.Event().wait(0.01)
    cancel.set()
    with pytest.raises(KeyboardInterrupt), schedule.turn("g", cancel):
        pass
    hold.set()
    lead.join(10)


def test_the_default_order_follows_the_host_s_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(schedule.ENV, raising=False)
    monkeypatch.setattr(schedule.os, "cpu_count", lambda: 2)
    assert not schedule.together()  # few cores: siblings wait and compile what differs
    monkeypatch.setattr(schedule.os, "cpu_count", lambda: 16)
    assert schedule.together()  # many: waiting would leave cores idle
    monkeypatch.setenv(schedule.ENV, "first")
    assert not schedule.together()
    monkeypatch.setenv(schedule.ENV, "together")
    monkeypatch.setattr(schedule.os, "cpu_count", lambda: 2)
    assert schedule.together()
