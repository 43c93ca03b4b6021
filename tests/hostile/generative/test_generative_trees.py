"""Hostile source trees, generated, given to `csorch run` under the ASan backend with the
sandbox on: symlinks (out of the tree, climbing out, loops, to themselves, dangling,
inside), odd names (spaces, a newline, bytes that are not UTF-8, 255 bytes, a leading
dash, shell text), depth (up to hundreds) and special files (a named pipe, a socket)
beside the C subject. The promises (docs/threat-model.md, section 3):
- the user's tree and a decoy $HOME are as they were, the special files unopened;
- a link out of the tree, a pipe or socket, or a directory nested past csorch's bound
  is refused: INCONCLUSIVE, never PASS;
- whatever the tree holds, the verdict is never wrong: a real fix is never FAIL, a fix
  that fixes nothing is never PASS;
- every answer is a documented exit code, never a traceback or a hang.
"""

from __future__ import annotations

import os
import shutil
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from gen_promises import answered, csorch, needs_sandbox, profile, said, snapshot
from hypothesis import example, given
from hypothesis import strategies as st

E2E = Path(__file__).resolve().parents[2] / "fixtures" / "e2e"
MAX_DEPTH = 200  # files.MAX_DEPTH: deeper source trees are refused

CONFIG = """\
name: tree
source: subject
variants:
  - name: fixed
    patches: [fix.patch]
    build: {kind: command, command: [make], outputs: [pick]}
  - name: control
    build: {kind: command, command: [make], outputs: [pick]}
runs: [{name: memcheck, checker: memcheck}]
cases: [{name: sum, command: [./pick]}]
timeout: 1m
expect:
  controls: [control]
  fix: fixed
  target: {checker: asan, kind: heap-buffer-overflow, access: read, function: sum}
"""

ODD = (b"with space", b"new\nline", b"x" * 255, b"-rf",
       b"$(touch pwned)", b"'quoted\"", b"star*?", b"caf\xc3\xa9", b"tab\there", b" ")  # fmt: skip
#: entries that make csorch refuse the tree (section 3)
REFUSED = frozenset({"link-out", "link-up", "fifo", "socket"})


@dataclass(frozen=True)
class Entry:
    kind: str  # link-out, link-up, link-loop, link-self, link-dangling, link-in, link-dot,
    #            odd-file, odd-dir, deep, fifo, socket
    name: bytes
    where: bytes  # b"" (the top) or a subdirectory
    depth: int = 0

    @property
    def refused(self) -> bool:
        return self.kind in REFUSED or (self.kind == "deep" and self.depth > MAX_DEPTH)

    def make(self, tree: Path, outside: Path) -> bool:
        """Make the entry in `tree`; False where its name is taken (drawn twice)."""
        top = os.path.join(os.fsencode(tree), self.where) if self.where else os.fsencode(tree)
        os.makedirs(top, exist_ok=True)
        path = os.path.join(top, self.name)
        partner = self.name[:200] + b".other"  # a loop's other end (255 bytes is the most)
        if os.path.lexists(path) or os.path.lexists(os.path.join(top, partner)):
            return False  # a name drawn twice: the first one stands
        if self.kind == "link-out":
            os.symlink(os.fsencode(outside), path)
        elif self.kind == "link-up":
            os.symlink(b"../" * 12 + os.fsencode(outside).lstrip(b"/"), path)
        elif self.kind == "link-loop":
            os.symlink(partner, path)
            os.symlink(self.name, os.path.join(top, partner))
        elif self.kind == "link-self":
            os.symlink(self.name, path)
        elif self.kind == "link-dangling":
            os.symlink(b"nowhere/at/all", path)
        elif self.kind == "link-in":
            os.symlink(b"../" * (self.where.count(b"/") + bool(self.where)) + b"Makefile", path)
        elif self.kind == "link-dot":
            os.symlink(b".", path)
        elif self.kind == "odd-file":
            with open(path, "wb") as f:
                f.write(b"data\n")
        elif self.kind == "odd-dir":
            os.mkdir(path)
            with open(os.path.join(path, self.name), "wb") as f:
                f.write(b"inside\n")
        elif self.kind == "deep":
            os.makedirs(os.path.join(path, *[b"d"] * (self.depth - 1)))
        elif self.kind == "fifo":
            os.mkfifo(path)
        elif self.kind == "socket":
            os.mknod(path, 0o600 | stat.S_IFSOCK)
        return True


KINDS = ("link-out", "link-up", "link-loop", "link-self", "link-dangling", "link-in",
         "link-dot", "odd-file", "odd-dir", "deep", "fifo", "socket")  # fmt: skip


NOT_UTF8 = b"\xff\xfenot-utf8"  # a name that is not UTF-8 (a file's, a dir's, a target)
entries = st.builds(
    Entry,
    kind=st.sampled_from(KINDS),
    name=st.sampled_from((*ODD, NOT_UTF8)) | st.sampled_from((b"plain", b"inc", b"vendor")),
    where=st.sampled_from((b"", b"sub", b"sub/deeper", b"odd \xff dir")),
    depth=st.sampled_from((1, 30, 199, 201, 400)),
)


@profile()
@given(tree=st.lists(entries, min_size=1, max_size=4), real_fix=st.booleans())
@example(tree=[Entry("deep", b"vendor", b"", 400), Entry("odd-file", b"new\nline", b"")],
         real_fix=True)  # fmt: skip
@example(tree=[Entry("link-loop", b"caf\xc3\xa9", b"sub"), Entry("socket", b"-rf", b"")],
         real_fix=False)  # fmt: skip
def test_a_hostile_tree_keeps_every_promise(shared: Path, tree: list[Entry], real_fix: bool):
    _try(shared, tree, real_fix)


@pytest.mark.parametrize("kind", ["odd-file", "odd-dir", "link-self"])
def test_a_name_that_is_not_utf8_runs(shared: Path, kind: str) -> None:
    _try(shared, [Entry(kind, NOT_UTF8, b"")], True)


def _try(shared: Path, tree: list[Entry], real_fix: bool) -> None:
    needs_sandbox()
    place = shared / f"tree-{uuid.uuid4().hex[:12]}"
    src, home, outside = place / "subject", place / "home", place / "outside"
    shutil.copytree(E2E / "cprog", src)
    home.mkdir()
    (home / ".profile").write_text("the user's\n")
    outside.mkdir()
    (outside / "secret").write_text("not the tree's\n")
    made = [entry for entry in tree if entry.make(src, outside)]
    patch = "fix-oob.patch" if real_fix else "comment-only.patch"
    shutil.copy(E2E / patch, place / "fix.patch")
    (place / "tree.yaml").write_text(CONFIG)
    before = {"tree": snapshot(src), "home": snapshot(home), "outside": snapshot(outside)}

    done = csorch(place, "run", "tree.yaml", "--backend", "asan", "--out", "out",
                  home=home, cache=shared / "cache")  # fmt: skip
    answered(done)
    assert snapshot(src) == before["tree"], f"the user's tree changed\n{tree}"
    assert snapshot(home) == before["home"] and snapshot(outside) == before["outside"], tree
    if any(e.refused for e in made):
        assert done.returncode == 3, f"not refused\n{tree}\n{said(done)}"
    if real_fix:
        assert done.returncode != 1, f"a real fix failed\n{tree}\n{said(done)}"
    else:
        assert done.returncode != 0, f"no fix passed\n{tree}\n{said(done)}"
    assert done.returncode != 2, said(done)  # the config and flags are good
