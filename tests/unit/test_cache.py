"""cache: deterministic keys, the per-entry lock across processes, atomic publish, LRU."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator import cache


def test_keys_are_deterministic_and_order_free() -> None:
    a = cache.key({"tree": "t", "flags": {"cflags": ["-g"], "ldflags": []}, "kind": "jit"})
    b = cache.key({"kind": "jit", "flags": {"ldflags": [], "cflags": ["-g"]}, "tree": "t"})
    assert a == b and len(a) == 64
    assert cache.key({"tree": "t2", "flags": {"cflags": ["-g"], "ldflags": []}, "kind": "jit"}) != a
    assert cache.key({"tree": "t", "flags": {"cflags": [], "ldflags": []}, "kind": "jit"}) != a


def _publish(c: cache.Cache, k: str, payload: str = "x") -> Path:
    with c.lock(k):
        scratch = c.scratch(k)
        (scratch / "pkg").mkdir()
        (scratch / "pkg" / "lib.so").write_text(payload)
        return c.publish(k, scratch, {"build": {"k": k}})


def test_publish_is_a_rename_and_lookup_sees_only_finished_entries(tmp_path: Path) -> None:
    c = cache.Cache(tmp_path / "c")
    assert c.lookup("k1") is None
    with c.lock("k1"):
        scratch = c.scratch("k1")
        (scratch / "half").write_text("not yet")
        assert c.lookup("k1") is None  # nothing visible while it is being built
        entry = c.publish("k1", scratch, {"build": {"v": 1}})
    assert entry == c.entry("k1") and not scratch.exists()
    assert c.lookup("k1") == {"build": {"v": 1}}
    assert list((tmp_path / "c" / "tmp").iterdir()) == []


@pytest.mark.process
def test_the_lock_excludes_another_process(tmp_path: Path) -> None:
    c = cache.Cache(tmp_path / "c")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from orchestrator.cache import Cache\n"
            f"c = Cache({str(tmp_path / 'c')!r})\n"
            "with c.lock('k'):\n    print('held', flush=True); time.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with c.lock("k", blocking=False) as got:
            assert got is False
        with c.lock("other", blocking=False) as got:
            assert got is True
    finally:
        holder.kill()
        holder.wait()
    with c.lock("k", blocking=False) as got:  # the holder died: its lock went with it
        assert got is True


def test_lru_eviction_spares_pinned_entries(tmp_path: Path) -> None:
    c = cache.Cache(tmp_path / "c", max_entries=2)
    for k in ("old", "pinned", "mid", "new"):
        _publish(c, k)
        time.sleep(0.02)
    c.hold("pinned")
    c.lookup("old")  # used recently: no longer the oldest
    time.sleep(0.02)
    c.lookup("new")
    assert c.evict() == ["mid", "old"]  # least recently used first; "pinned" is in use
    assert sorted(p.name for p in (tmp_path / "c" / "entries").iterdir()) == ["new", "pinned"]
    c.max_entries = 1
    assert c.evict(keep=["new"]) == []  # over the limit, but nothing may go
    c.release()
    assert c.evict(keep=["new"]) == ["pinned"]


@pytest.mark.parametrize("limit", [1])
def test_eviction_by_size(tmp_path: Path, limit: int) -> None:
    c = cache.Cache(tmp_path / "c", max_bytes=limit)
    _publish(c, "a", "x" * 100)
    time.sleep(0.02)
    _publish(c, "b", "y" * 100)
    assert c.evict(keep=["b"]) == ["a"]
    assert c.lookup("b") is not None and c.lookup("a") is None


def test_leftovers_of_a_killed_build_are_cleared(tmp_path: Path) -> None:
    c = cache.Cache(tmp_path / "c")
    stale = tmp_path / "c" / "tmp" / "k.12345"
    stale.mkdir()
    with c.lock("k"):
        fresh = c.scratch("k")
    assert not stale.exists() and fresh.exists()
