"""Hostile bundles, generated: a real bundle (made once by `csorch run`
under ASan with the sandbox on) with one file edited, emptied, replaced by another,
symlinked, removed, turned into a named pipe, or a file added, and then, or not, every
digest csorch writes recomputed (what anyone who can write the files can do). Judged by
`csorch verify`, `compare --from` and `report` as a user runs them, and held to the
promises of docs/threat-model.md (section 2):
- a change the digests do not cover (none recomputed), a link, a pipe, a removed or an
  added file never verifies;
- a bundle that does not verify is never judged better than INCONCLUSIVE, and its
  report says INCONCLUSIVE;
- a change covered by recomputed digests either does not verify or leaves the verdict
  what it was: one file changed cannot change a verdict unseen (results.json is
  re-derived from the logs, the logs from the runtime's records);
- every answer is a documented exit code, never a traceback or a hang.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from gen_promises import answered, csorch, needs_sandbox, profile, said
from hypothesis import example, given
from hypothesis import strategies as st

E2E = Path(__file__).resolve().parents[2] / "fixtures" / "e2e"
CONFIGS = {"pass": "c-oob.yaml", "fail": "c-oob-nofix.yaml"}
PATCHES = ("fix-oob.patch", "comment-only.patch")


@pytest.fixture(scope="module")  # after the module's sandbox opt-in
def real_bundles(shared: Path) -> dict[str, tuple[Path, int, str]]:
    """verdict -> (a real bundle, `compare --from`'s exit on it, its report's verdict
    line): made once per module, read-only (each example edits a copy)."""
    needs_sandbox()
    place = shared / "bundles"
    shutil.copytree(E2E / "cprog", place / "cprog")
    for name in (*CONFIGS.values(), *PATCHES):
        shutil.copy(E2E / name, place / name)
    (place / "home").mkdir()
    made = {}
    for verdict, config in CONFIGS.items():
        done = csorch(place, "run", config, "--backend", "asan", "--out", verdict,
                      home=place / "home", cache=shared / "cache")  # fmt: skip
        assert done.returncode == {"pass": 0, "fail": 1}[verdict], said(done)
        judged = _judge(place / verdict, place, shared)
        assert judged[0] == 0, judged
        made[verdict] = (place / verdict, judged[1], judged[2])
    return made


def _judge(bundle: Path, place: Path, shared: Path) -> tuple[int, int, str]:
    """(verify's exit, compare --from's exit, the report's verdict line), each answered."""
    kw = dict(home=place / "home", cache=shared / "cache")
    verified = csorch(place, "verify", bundle, **kw)
    compared = csorch(place, "compare", "--from", bundle, **kw)
    shown = csorch(place, "report", bundle, "-f", "markdown", **kw)
    for done in (verified, compared, shown):
        answered(done)
    verdict = next((line for line in shown.stdout.splitlines() if "**Verdict" in line), "")
    return verified.returncode, compared.returncode, verdict


@dataclass(frozen=True)
class Edit:
    how: str  # flip, cut, append, empty, json, replace, link, remove, fifo, add
    target: int  # which of the bundle's files (an index into its sorted list)
    at: float  # where in the file, 0..1
    data: bytes  # what is written or added
    path: tuple[int, ...] = ()  # json: the way down to the value (modulo each length)
    value: object = None  # json: the new value
    recompute: bool = False  # every digest csorch writes recomputed afterwards
    file: str = ""  # the file by name (an explicit example's), instead of `target`

    @property
    def structural(self) -> bool:
        """A change the manifest's digests cannot cover, whatever is recomputed."""
        return self.how in ("link", "fifo")


def _files(bundle: Path) -> list[Path]:
    return sorted(p for p in bundle.rglob("*") if p.is_file() and p.name != ".csorch.lock")


def _walk_to(doc: object, path: tuple[int, ...]) -> tuple[object, object] | None:
    """The container and key the drawn path reaches (indexes taken modulo the length)."""
    parent, key, here = None, None, doc
    for step in path:
        if isinstance(here, dict) and here:
            keys = sorted(here)
            parent, key = here, keys[step % len(keys)]
        elif isinstance(here, list) and here:
            parent, key = here, step % len(here)
        else:
            break
        here = parent[key]
    return (parent, key) if parent is not None else None


def apply(edit: Edit, bundle: Path, outside: Path) -> str:
    """Make the edit in `bundle`; what changed, for the failure message ("" for nothing)."""
    files = _files(bundle)
    victim = bundle / edit.file if edit.file else files[edit.target % len(files)]
    rel = victim.relative_to(bundle).as_posix()
    old = victim.read_bytes()
    if edit.how == "flip" and old:
        i = int(edit.at * (len(old) - 1))
        new = (
            old[:i]
            + bytes([old[i] ^ (edit.data[0] if edit.data and edit.data[0] else 1)])
            + old[i + 1 :]
        )
        victim.write_bytes(new)
    elif edit.how == "cut" and old:
        victim.write_bytes(old[: int(edit.at * (len(old) - 1))])
    elif edit.how == "append":
        victim.write_bytes(old + (edit.data or b"\n"))
    elif edit.how == "empty" and old:
        victim.write_bytes(b"")
    elif edit.how == "json" and victim.suffix == ".json":
        doc = json.loads(old)
        reached = _walk_to(doc, edit.path)
        if reached is None:
            return ""
        parent, key = reached
        if parent[key] == edit.value:
            return ""
        parent[key] = edit.value
        victim.write_text(json.dumps(doc, indent=1))
    elif edit.how == "replace":
        other = files[(edit.target + 1 + int(edit.at * len(files))) % len(files)]
        if other.read_bytes() == old:
            return ""
        victim.write_bytes(other.read_bytes())
    elif edit.how == "link":
        copy = outside / uuid.uuid4().hex
        copy.write_bytes(old)
        victim.unlink()
        victim.symlink_to(copy)
    elif edit.how == "remove":
        victim.unlink()
    elif edit.how == "fifo":
        victim.unlink()
        os.mkfifo(victim)
    elif edit.how == "add":
        where = victim.parent
        name = edit.data.decode("ascii", "replace").replace("/", "_").replace("\0", "_")
        name = "added" if name in ("", ".", "..") else name
        added = where / name
        if added.exists() or added.is_symlink():
            return ""
        added.write_bytes(b"added after the run\n")
        return f"add {added.relative_to(bundle).as_posix()}"
    else:
        return ""
    return f"{edit.how} {rel}"


def recompute(bundle: Path) -> None:
    """Every digest csorch writes, recomputed over the bundle as it is now: results.json's,
    each log's (the added ones listed too), the journal's and the kept trees'."""
    path = bundle / "manifest.json"
    if not path.is_file() or path.is_symlink():  # a pipe would block this read forever
        return
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):  # the edit broke the manifest itself: nothing to redo
        return
    if not isinstance(doc, dict):
        return

    def sha(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    if isinstance(doc.get("results"), dict) and (bundle / "results.json").is_file():
        doc["results"]["sha256"] = sha(bundle / "results.json")
    doc["logs"] = {
        p.relative_to(bundle).as_posix(): sha(p)
        for p in sorted((bundle / "logs").rglob("*"))
        if p.is_file() and not p.is_symlink()
    } if (bundle / "logs").is_dir() else {}  # fmt: skip
    kept = [bundle / "journal.jsonl", *sorted((bundle / "trees").rglob("*"))]
    doc["files"] = {
        p.relative_to(bundle).as_posix(): sha(p) for p in kept if p.is_file() and not p.is_symlink()
    }
    path.write_text(json.dumps(doc, indent=1))


json_values = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 10**6), st.sampled_from(
        ["pass", "fail", "inconclusive", "passed", "", "memcheck", "heap-buffer-overflow"]),
    st.just([]), st.just({}),
)  # fmt: skip
edits = st.builds(
    Edit,
    how=st.sampled_from(("flip", "cut", "append", "empty", "json", "json", "replace", "link",
                         "remove", "fifo", "add")),
    target=st.integers(0, 200),
    at=st.floats(0, 1),
    data=st.binary(min_size=1, max_size=24) | st.sampled_from(
        [b"r0.launch0.checker.99", b"r0.launch0.checker.started.99", b"r9.log",
         b"==1==ERROR: AddressSanitizer: heap-buffer-overflow\n"]),
    path=st.lists(st.integers(0, 1000), max_size=8).map(tuple),
    value=json_values,
    recompute=st.booleans(),
)  # fmt: skip


@profile()
@given(edit=edits, verdict=st.sampled_from(sorted(CONFIGS)))
@example(edit=Edit("json", 0, 0.0, b"x", (14,), "pass", True, "results.json"), verdict="fail")
@example(edit=Edit("add", 3, 0.5, b"r0.launch0.checker.99", recompute=True), verdict="pass")
def test_a_tampered_bundle_keeps_every_promise(
    shared: Path, real_bundles: dict, edit: Edit, verdict: str
):
    original, compared, shown = real_bundles[verdict]
    place = shared / f"tamper-{uuid.uuid4().hex[:12]}"
    (place / "home").mkdir(parents=True)
    (place / "outside").mkdir()
    bundle = place / "bundle"
    shutil.copytree(original, bundle, symlinks=True)
    what = apply(edit, bundle, place / "outside")
    if not what:
        return  # the drawn edit changes nothing here
    if edit.recompute:
        recompute(bundle)
    v, c, line = _judge(bundle, place, shared)
    context = f"{what} (digests recomputed: {edit.recompute}) in the {verdict} bundle"
    if not edit.recompute or edit.structural or edit.how in ("remove",):
        assert v != 0, f"tampered, verified: {context}"
    if v != 0:
        assert c in (2, 3), f"judged {c} though it does not verify: {context}"
        assert "INCONCLUSIVE" in line or not line, f"report says {line!r}: {context}"
    else:
        assert (c, line) == (compared, shown), f"verdict changed unseen: {context}"
