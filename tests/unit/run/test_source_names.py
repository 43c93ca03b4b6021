"""A source tree's file names are bytes on Linux, not text: a name that is not UTF-8, or
that holds spaces, quotes, colons or newlines, is digested as its own bytes (before, a
name that is not UTF-8 was a UnicodeEncodeError out of `tree_digest`)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from hypothesis import given

from orchestrator.run import sources
from tests.unit.hostile_text import QUICK, hostile_name


def test_a_name_that_is_not_utf8_is_digested(tmp_path: Path) -> None:
    (tmp_path / os.fsdecode(b"caf\xe9.c")).write_text("int x;\n")
    os.symlink(os.fsdecode(b"caf\xe9.c"), tmp_path / "link")
    digest = sources.tree_digest(tmp_path)
    assert set(sources.listing(tmp_path)) == {os.fsdecode(b"caf\xe9.c"), "link"}
    (tmp_path / os.fsdecode(b"caf\xe9.c")).rename(tmp_path / os.fsdecode(b"caf\xe8.c"))
    assert sources.tree_digest(tmp_path) != digest  # the name's own bytes count


def test_a_utf8_tree_keeps_its_digest(tmp_path: Path) -> None:
    # the same bytes as before the names' encoding changed: cached builds stay valid
    (tmp_path / "é.c").write_text("x")
    entry = sources.listing(tmp_path)["é.c"]
    assert sources.tree_digest(tmp_path) == hashlib.sha256(f"é.c\0{entry}\n".encode()).hexdigest()


@QUICK
@given(hostile_name)
def test_any_name_is_listed_and_digested(tmp_path_factory, name: str) -> None:
    root = tmp_path_factory.getbasetemp() / "names"
    root.mkdir(exist_ok=True)
    try:
        (root / name).write_text("x")
    except OSError:  # a name the file system refuses (too long in bytes) is no source
        return
    try:
        listed = sources.listing(root)
        kept = [n for n in os.listdir(root) if not sources._excluded(n, True)]
        assert sorted(listed) == sorted(kept)
        assert len(sources.tree_digest(root)) == 64
    finally:
        (root / name).unlink()
