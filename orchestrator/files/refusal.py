"""What csorch refuses to read or write, and why: the kinds of file it reads whole (each
with its size bound), and the errors that name a refused path."""

from __future__ import annotations

import errno
import stat
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import CsorchError

#: the deepest directory csorch walks into or copies: deeper trees are refused by name
#: (Python's recursive tree tools, copytree, rmtree and rglob among them, fail near 500
#: levels; csorch's own walk, copy and removal do not recurse)
MAX_DEPTH = 200


@dataclass(frozen=True)
class Kind:
    """A kind of file csorch reads whole: what to call it in a message, the most bytes one
    may hold, and whether it is the user's own input (`follow`: a symlink at its last
    component is followed, and the file it names must be regular; csorch's own files are
    never read through a link)."""

    what: str
    limit: int
    follow: bool = False


#: an experiment, a gate policy, a suppressions file, an allowed-signers file: a page
CONFIG = Kind("a config", 1 << 20, follow=True)
#: a patch the user gives a variant
PATCH = Kind("a patch", 64 << 20, follow=True)
#: another file the user names (a wheel, a requirements file): digested, never read whole
INPUT = Kind("a file the user gave", 1 << 40, follow=True)
#: a JSON document csorch wrote (results.json, manifest.json, gate.json, bisect.json, a
#: cache entry's record, a Slurm task's result): 100,000 attempts fit with room to spare
DOCUMENT = Kind("a JSON document csorch wrote", 1 << 30)
#: a run's journal (one line per attempt, each with its record): read whole on a resume
JOURNAL = Kind("a journal", 2 << 30)
#: a small text file csorch or a child wrote (a done-file, report.md read back, a source
#: file csorch hashes, a /proc entry)
TEXT = Kind("a text file csorch reads", 64 << 20)
#: a binary csorch looks into (an ELF's sections)
BINARY = Kind("a binary csorch inspects", 2 << 30)


class FileRefused(CsorchError, OSError):
    """A path csorch will not read or write as asked. Both a CsorchError (the CLI's boundary
    prints it and exits 2) and an OSError naming the file (a reader that turns an
    unreadable file into a reason, as `bundle/verify` does, keeps doing so)."""

    def __init__(
        self, path: Path | str, problem: str, *, code: int = errno.EINVAL, hint: str = ""
    ) -> None:
        OSError.__init__(self, code, problem, str(path))
        self.path = Path(path)
        self.problem = problem
        self.message = f"{path}: {problem}"
        self.hint = hint

    def __str__(self) -> str:
        return CsorchError.__str__(self)


class NotRegularFile(FileRefused):
    """A named pipe, a device, a socket or a directory where csorch reads or writes a
    file: reading it could block forever (a pipe with no writer) or never end (/dev/zero)."""

    def __init__(self, path: Path | str, kind: str, *, target: Path | None = None) -> None:
        through = f"links to {target}, " if target is not None else ""
        super().__init__(
            path,
            f"{through}{kind}, not a regular file",
            hint="give a regular file (csorch reads no pipe, device or socket)",
        )
        self.kind = kind


class HardLinked(FileRefused):
    """A file csorch writes in place (a journal it appends to, a log it truncates) that has
    other names: the write would land in the file under those names too, wherever they
    are (outside csorch's directories)."""

    def __init__(self, path: Path | str, links: int) -> None:
        super().__init__(
            path,
            f"has {links} hard links; csorch does not write in place into a file with "
            "other names (the write would reach them too)",
            code=errno.EMLINK,
            hint="remove the other names, or the file (something other than csorch linked it)",
        )


class LinkRefused(FileRefused):
    """A symlink where csorch reads or writes its own file or directory (a lock, a journal,
    a bundle's logs/): following it would read or write wherever it points."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(
            path,
            "is a symlink; csorch does not read or write its own files through a link",
            code=errno.ELOOP,
            hint="remove the link (something other than csorch put it there)",
        )


class TooLarge(FileRefused):
    """A file past the bound of its kind: read whole, it would exhaust memory."""

    def __init__(self, path: Path | str, size: int, kind: Kind) -> None:
        more = f"{size:,} bytes" if size > kind.limit else "more than that"
        super().__init__(
            path,
            f"the file holds {more}; {kind.what} is at most {kind.limit:,} bytes",
            code=errno.EFBIG,
            hint="is this the file you meant?",
        )
        self.size = size
        self.limit = kind.limit


class TooDeep(FileRefused):
    """A directory nested deeper than `MAX_DEPTH` (or the bound a walk was given)."""

    def __init__(self, path: Path | str, limit: int) -> None:
        super().__init__(
            path,
            f"nested more than {limit} directories deep",
            code=errno.ELOOP,
            hint="no tree csorch reads, copies or removes is that deep",
        )
        self.limit = limit


class NotText(FileRefused):
    """A file read as text that is not UTF-8: names the byte and its line."""

    def __init__(self, path: Path | str, data: bytes, exc: UnicodeDecodeError) -> None:
        line = data.count(b"\n", 0, exc.start) + 1
        super().__init__(
            path,
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} (line {line})",
            code=errno.EILSEQ,
            hint="save the file as UTF-8",
        )
        self.line = line


_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symlink"),
)


def special_kind(mode: int) -> str:
    """What a file that is not a regular one is ("" for a regular file)."""
    if stat.S_ISREG(mode):
        return ""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")
