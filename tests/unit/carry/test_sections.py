"""carry.sections on real gcc builds (-g): a comment that moves no line leaves every
loaded section as it was although the debug information changed; a one-token change
changes .text; a comment that moves an assert's line changes .text too (its __LINE__),
which is why the token proof alone never carries a verdict; damaged ELF is refused."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.carry import sections

pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc here"),
]

SOURCE = """#include <assert.h>
int pick(const int* a, int n, int i) {{
  {comment}
  assert(i >= 0);
  if (i {op} n) return a[i];
  return -1;
}}
"""


def built(tmp_path: Path, name: str, comment: str = "", op: str = "<") -> bytes:
    """pick.c (assert's __FILE__ the same in every build) in a directory of its own."""
    where = tmp_path / name
    where.mkdir()
    (where / "pick.c").write_text(SOURCE.format(comment=comment, op=op))
    subprocess.run(["gcc", "-g", "-O1", "-shared", "-fPIC", "-o", "libpick.so", "pick.c"],
                   check=True, cwd=where)  # fmt: skip
    return (where / "libpick.so").read_bytes()


def test_what_executes_is_compared_not_the_debug_information(tmp_path: Path) -> None:
    base = built(tmp_path, "a", "/* one */")
    same = built(tmp_path, "b", "/* two, longer */")
    assert base != same  # the debug information names another directory
    assert sections.differences(sections.digests(base), sections.digests(same)) == []
    assert ".text" in sections.digests(base)
    assert not any(k.startswith(".debug") for k in sections.digests(base))

    one_token = built(tmp_path, "c", "/* one */", op="<=")
    assert ".text" in sections.differences(sections.digests(base), sections.digests(one_token))


def test_a_comment_that_moves_an_assert_changes_its_data(tmp_path: Path) -> None:
    base = built(tmp_path, "a", "/* one */")
    moved = built(tmp_path, "b", "/* one\n  more */")
    # the line is an immediate operand of the assert's call: the code itself differs
    assert sections.differences(sections.digests(base), sections.digests(moved)) == [".text"]


def test_damaged_or_foreign_files_are_compared_whole(tmp_path: Path) -> None:
    lib = built(tmp_path, "a")
    with pytest.raises(sections.NotELF):
        sections.digests(lib[:200])  # the section table cut off
    assert set(sections.identity(lib[:200])) == {"file"}
    assert set(sections.identity(b"print('hi')\n")) == {"file"}
    cut = bytearray(lib)
    cut[0x28:0x30] = (len(lib) * 4).to_bytes(8, "little")  # e_shoff past the end
    with pytest.raises(sections.NotELF):
        sections.digests(bytes(cut))
