"""The progress journal of a run: what finished, durably, so that a killed run resumes.

    OUT/journal.jsonl   one JSON object a line, appended and fsync'd as things finish:
        {"kind": "begin", "run": {identity...}, "settings": {...}, "command": [...]}
        {"kind": "build", "build": {...}, "source": {...}}   (a variant built or not)
        {"kind": "attempt", "attempt": {...}, "logs": {"logs/...": sha256}}
        {"kind": "session", "command": [...], "session": ID}   (each resume)
      and every line carries "sha256": the digest of the rest of the line.

results.json and manifest.json are rewritten atomically too, but they are views; the
journal is what a resume trusts. A SIGKILL mid-append leaves a torn last line, which
fails to parse and is dropped (and cut off before the next append), so a kill at any
moment loses at most the attempts in flight. An attempt is kept only when its line is
intact and every log it names still hashes to the digest taken when it finished; a
tampered or half-written log makes it run again. A resume builds every variant through
the cache again (a hit costs a lookup); a variant whose cache key or binaries differ
from the journaled build its attempts ran against (an evicted entry rebuilt, another
compiler) runs them all again, and a failed build is tried again.

A resume must be the same run: the same experiment (after --case and --repeat), the
same config digest, backend and device fan-out, and each variant's source tree and
patches must hash as they did. Anything else is refused with what differs: mixing the
attempts of two different runs in one bundle would be evidence of neither. Reads and
writes files only; nothing here starts a process or prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import files, proc
from orchestrator.errors import CsorchError
from orchestrator.files import file_digest, loads
from orchestrator.model import Attempt, Build, SourceTree
from orchestrator.model.job import slot

JOURNAL = "journal.jsonl"
SCHEMA = "csorch.journal/1"


class ResumeError(CsorchError):
    """A directory cannot be resumed: no journal, or another run's."""


def resume_command(verb: str, out: Path | str) -> str:
    """The command line that continues the work kept in `out` (run, gate or bisect)."""
    return shlex.join(["csorch", verb, "--resume", str(out)])


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped the `verb` (run, gate, bisect) kept in `out`: what
    finished is journaled, and `resume` is the command that continues it."""

    def __init__(self, verb: str, out: Path) -> None:
        super().__init__(str(out))
        self.verb, self.out = verb, out
        self.resume = resume_command(verb, out)


class NotWritten(Exception):
    """The `verb`'s directory `out` (its bundle, journal or gate files) could not be
    written (`error`): what is journaled is kept, and `resume` continues once the cause is
    fixed; `ran` False: nothing ran, there is only the --out to fix. `failed`: the
    decision reached was a fail (it stays one)."""

    failed = False

    def __init__(self, error: OSError, verb: str, out: Path, ran: bool = True) -> None:
        super().__init__(str(error))
        self.error, self.verb, self.out, self.ran = error, verb, out, ran
        self.resume = resume_command(verb, out)


def _line(doc: Mapping[str, Any]) -> str:
    body = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(body.encode()).hexdigest()
    return json.dumps({**doc, "sha256": digest}, sort_keys=True, separators=(",", ":"))


def _parse(text: str) -> dict[str, Any] | None:
    """The record on one line, or None when it is torn or altered."""
    try:
        doc = loads(text)
    except ValueError:  # torn, altered, or nested past the parser's depth
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("sha256"), str):
        return None
    digest = doc.pop("sha256")
    body = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return doc if hashlib.sha256(body.encode()).hexdigest() == digest else None


def attempt_logs(root: Path, stem: str) -> list[Path]:
    """Every file under logs/ that belongs to the attempt with log name `stem`: its log,
    its later launches' logs and their lists of nodes already run."""
    base = root / "logs" / stem
    if not base.parent.is_dir():
        return []
    return sorted(
        p
        for p in base.parent.iterdir()
        if p.is_file()
        and not p.is_symlink()  # a link a subject planted is no log: verify names it
        and (p.name == base.name + ".log" or p.name.startswith(base.name + ".launch"))
    )


@dataclass
class Journal:
    """An open journal: `record` appends one finished attempt (from any thread, under the
    caller's lock)."""

    path: Path
    identity: dict[str, Any]
    settings: dict[str, Any]
    command: list[str]
    started: str
    attempts: list[tuple[Attempt, dict[str, str]]] = field(default_factory=list)
    builds: dict[str, tuple[Build, SourceTree | None]] = field(default_factory=dict)
    dropped: int = 0  # lines that were torn or altered
    sessions: list[str] = field(default_factory=list)  # proc.SESSION of each session

    @classmethod
    def create(
        cls,
        root: Path,
        identity: Mapping[str, Any],
        settings: Mapping[str, Any],
        command: list[str],
        started: str,
    ) -> Journal:
        """A new journal in an empty bundle directory (written by one rename)."""
        path = root / JOURNAL
        doc = {
            "kind": "begin",
            "schema": SCHEMA,
            "run": dict(identity),
            "settings": dict(settings),
            "command": list(command),
            "started": started,
            "session": proc.SESSION,
        }
        files.atomic_write(path, _line(doc) + "\n", root=root)
        return cls(path, dict(identity), dict(settings), list(command), started)

    @classmethod
    def read(cls, root: Path) -> Journal:
        """The journal in `root`; ResumeError when there is none or its first line is
        not a journal's."""
        path = Path(root) / JOURNAL
        try:
            # a pipe put in its place would block the read, a link read a stranger's file
            raw = files.read_bytes(path, files.JOURNAL)
        except FileNotFoundError:
            raise ResumeError(
                f"{root} holds no run to resume (no {JOURNAL})",
                hint="give the --out of a `csorch run` or `csorch gate` that was interrupted",
            ) from None
        except OSError as exc:
            raise ResumeError(f"cannot read {path}: {exc.strerror or exc}") from None
        lines = raw.decode("utf-8", errors="replace").split("\n")
        begin = _parse(lines[0]) if lines else None
        if begin is None or begin.get("kind") != "begin" or begin.get("schema") != SCHEMA:
            raise ResumeError(
                f"{path}: the first line is not a {SCHEMA} header (damaged or not a journal)",
                hint="start again with a new --out",
            )
        journal = cls(
            path,
            begin["run"],
            begin.get("settings", {}),
            begin.get("command", []),
            begin.get("started", ""),
            sessions=[begin.get("session", "")],
        )
        kept: dict[tuple, tuple[Attempt, dict[str, str]]] = {}
        for text in lines[1:]:
            if not text:
                continue
            doc = _parse(text)
            if doc is None:
                journal.dropped += 1
                continue
            if doc.get("kind") == "session":
                journal.sessions.append(str(doc.get("session", "")))
            elif doc.get("kind") == "attempt":
                try:
                    attempt = Attempt.from_dict(doc["attempt"])
                except (KeyError, TypeError, ValueError):
                    journal.dropped += 1
                    continue
                kept[slot(attempt)] = (attempt, dict(doc.get("logs", {})))
            elif doc.get("kind") == "build":
                try:
                    built = Build.from_dict(doc["build"])
                    tree = SourceTree.from_dict(doc["source"]) if doc.get("source") else None
                except (KeyError, TypeError, ValueError):
                    journal.dropped += 1
                    continue
                journal.builds[built.variant] = (built, tree)
        journal.attempts = list(kept.values())
        return journal

    def differences(self, identity: Mapping[str, Any]) -> list[str]:
        """What differs between this journal's run and `identity` (empty: the same)."""
        out = []
        for name in sorted(set(self.identity) | set(identity)):
            old, new = self.identity.get(name), identity.get(name)
            if old != new:
                out.append(f"{name} {_short(old)} -> {_short(new)}")
        return out

    def reopen(self, command: list[str]) -> None:
        """Start a new session: cut a torn tail so appends begin on a clean line."""
        with files.open_file(self.path, "r+", root=self.path.parent, binary=True) as f:
            data = f.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                f.truncate(end)
        self._append({"kind": "session", "command": list(command), "session": proc.SESSION})

    def record(self, attempt: Attempt, root: Path, stem: str) -> None:
        """Append a finished attempt with the digest of each of its files under logs/."""
        logs = {p.relative_to(root).as_posix(): file_digest(p) for p in attempt_logs(root, stem)}
        self._append({"kind": "attempt", "attempt": attempt.to_dict(), "logs": logs})

    def record_build(self, built: Build, tree: SourceTree | None) -> None:
        """Append a variant's build (ok or not) and the source tree it was built from."""
        self._append(
            {"kind": "build", "build": built.to_dict(), "source": tree.to_dict() if tree else None}
        )

    def _append(self, doc: Mapping[str, Any]) -> None:
        with files.open_file(self.path, "a", root=self.path.parent) as f:
            f.write(_line(doc) + "\n")
            f.flush()
            os.fsync(f.fileno())


def intact(root: Path, logs: Mapping[str, str], stem: str) -> bool:
    """Whether an attempt's files are exactly the ones journaled, each with its digest."""
    now = {p.relative_to(root).as_posix(): p for p in attempt_logs(root, stem)}
    if set(now) != set(logs):
        return False
    try:
        return all(file_digest(now[rel]) == sha for rel, sha in logs.items())
    except OSError:
        return False


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."
