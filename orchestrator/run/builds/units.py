"""Per-unit instrumentation: what the compiler wrappers recorded of one build
(run/builds/wrappers.py, ccwrap.py), read back and checked once the build is done.

Under a sanitizer (ASan) every unit must carry it:
- every recorded compile has `-fsanitize=X` (the wrapper added it last) and none of the
  switches that take it away again for some code (an ignore list, an
  `asan-*` parameter);
- every object a recorded link read was made by a recorded compile or link (by content),
  wherever it is, and so was every member of an archive and every shared library the build
  made itself (in its own tree or output, or written since the build began): a file
  compiled by /usr/bin/gcc (an absolute path, past the wrappers) leaves no record, and the
  object it made is named;
- every ELF binary the build produced (a library, a program, an object) is the output of a
  recorded compile or link, by content: one that a compiler called by absolute path linked
  is named.
System and toolchain libraries (outside the build's tree and output, older than the build)
pass.
Without a sanitizer (compute-sanitizer, plain) nothing is required: the record is kept as
evidence of what was compiled."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator import files
from orchestrator.files import file_digest
from orchestrator.sandbox import real_of

#: what the wrappers append to: one line per compile or link
RECORD = files.Kind("the compiler wrappers' record", 256 << 20)
#: a link input or built binary looked into (a system library is read through its link)
LINKED = files.Kind("a link input", 2 << 30, follow=True)
MAX_PROBLEMS = 4
ELF_MAGIC = b"\x7fELF"
AR_MAGIC = b"!<arch>\n"
ET_REL = 1
#: switches that take a sanitizer away from part of a unit even with -fsanitize= last
#: (a -fno-sanitize= before it does not: the wrapper adds -fsanitize= last, and it wins)
OPT_OUTS = ("-fsanitize-ignorelist", "-fsanitize-blacklist")
PARAM_OPT_OUT = "asan-"  # --param asan-instrument-reads=0, -mllvm -asan-...


class RecordError(ValueError):
    """The wrappers' record cannot be read (damaged, or too large)."""


@dataclass(frozen=True)
class Compile:
    """One recorded compiler invocation."""

    tool: str
    mode: str  # compile, link, compile+link, device-link
    argv: tuple[str, ...]
    cwd: str
    sources: tuple[str, ...]
    outputs: tuple[tuple[str, str], ...]  # (path, sha256)
    inputs: tuple[tuple[str, str, int, str], ...]  # (path, sha256, mtime_ns, elf/ar/other)
    cpu: float = 0.0  # the compiler's user + system seconds (with ccache's)
    nested: bool = False  # run by another recorded call (nvcc's host compiler): in its cpu

    @property
    def compiles(self) -> bool:
        return self.mode in ("compile", "compile+link")

    @property
    def links(self) -> bool:
        return self.mode in ("link", "compile+link", "device-link")


def read(record: Path, aliases: Sequence[tuple[str, str]] = ()) -> list[Compile]:
    """The record's invocations, in order; RecordError when it is not the wrappers' own.
    Paths a build named as its sandbox showed them (`aliases`: (real, seen)) are read as
    they are outside it."""
    try:
        text = files.read_text(record, RECORD)
    except FileNotFoundError:
        return []
    except OSError as exc:  # refused (a link, a pipe, too large) or not UTF-8 (NotText)
        raise RecordError(f"{record}: {exc}") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            d = json.loads(real_of(line, aliases) if aliases else line)
            out.append(
                Compile(
                    str(d["tool"]),
                    str(d["mode"]),
                    tuple(map(str, d["argv"])),
                    str(d["cwd"]),
                    tuple(map(str, d["sources"])),
                    tuple((str(o["path"]), str(o["sha256"])) for o in d["outputs"]),
                    tuple(
                        (str(i["path"]), str(i["sha256"]), int(i["mtime_ns"]), str(i["kind"]))
                        for i in d["inputs"]
                    ),
                    float(d.get("cpu", 0.0)),
                    bool(d.get("nested", False)),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise RecordError(f"{record}:{n}: not a compile record ({exc})") from None
    return out


def _undoes(word: str) -> bool:
    return word.startswith(OPT_OUTS) or word.startswith(
        (f"--param={PARAM_OPT_OUT}", f"-{PARAM_OPT_OUT}", f"--{PARAM_OPT_OUT}")
    )


def opt_out(argv: Sequence[str]) -> str:
    """The switch in `argv` that takes the sanitizer away from some code ("" if none);
    nvcc's host switches (-Xcompiler A,B) are read as the host compiler reads them."""
    for i, a in enumerate(argv):
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if a in ("-Xcompiler", "--compiler-options"):
            words = nxt.replace("'", "").split(",")
        elif a.startswith(("-Xcompiler=", "--compiler-options=")):
            words = a.partition("=")[2].replace("'", "").split(",")
        elif a in ("--param", "-mllvm"):
            if nxt.lstrip("-").startswith(PARAM_OPT_OUT):
                return f"{a} {nxt}"
            words = []
        else:
            words = [a]
        for w in words:
            if _undoes(w):
                return w
    return ""


def instrumented(c: Compile, sanitizer: str) -> bool:
    """Whether the compile's argv asks for `sanitizer` (directly, or nvcc's -Xcompiler)."""
    flag = f"-fsanitize={sanitizer}"
    for a in c.argv:
        if a == flag or (a.startswith("-fsanitize=") and sanitizer in a[11:].split(",")):
            return True
        if a.startswith(("-Xcompiler=", "--compiler-options=")) and flag in a.split("=", 1)[1]:
            return True
    return False


def _head(path: str, n: int = 18) -> bytes:
    try:
        with files.open_regular(Path(path), LINKED) as f:
            return f.read(n)
    except OSError:
        return b""


def _members(path: str) -> list[tuple[str, str]] | None:
    """(name, sha256) of each member of a GNU/BSD ar archive (symbol tables skipped); None
    when it is not one that can be read (a thin archive names files: its paths)."""
    found = members(path)
    return None if found is None else [(n, hashlib.sha256(b).hexdigest()) for n, b in found]


def members(path: str) -> list[tuple[str, bytes]] | None:
    """(name, bytes) of each member of the GNU/BSD ar archive at `path` (symbol tables
    skipped); None when it is not one that can be read (a thin archive names files)."""
    try:
        data = files.read_bytes(Path(path), LINKED)
    except OSError:
        return None
    if data.startswith(b"!<thin>\n"):
        return None
    if not data.startswith(AR_MAGIC):
        return None
    out, pos, names = [], len(AR_MAGIC), b""
    while pos + 60 <= len(data):
        header = data[pos : pos + 60]
        name = header[:16].decode("ascii", "replace").strip()
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            return None
        body = data[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name in ("/", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED"):
            continue
        if name == "//":
            names = body
            continue
        if name.startswith("#1/"):  # BSD: the name leads the body
            k = int(name[3:])
            name, body = body[:k].decode("utf-8", "replace").rstrip("\0"), body[k:]
        elif name.startswith("/") and name[1:].isdigit():
            start = int(name[1:])
            name = names[start : names.find(b"/\n", start)].decode("utf-8", "replace")
        out.append((name.rstrip("/"), body))
    return out


def system_archives(records: Sequence[Compile], area: Areas) -> list[str]:
    """The archives the recorded links read that are the system's or the toolchain's
    (outside the build's areas, older than the build, still the bytes the link read)."""
    out = []
    for c in records:
        for path, sha, mtime, kind in c.inputs if c.links else ():
            if kind != "ar" or area.made(path, mtime) or path in out:
                continue
            try:
                if Path(path).is_file() and file_digest(Path(path), LINKED) == sha:
                    out.append(path)
            except OSError:
                continue
    return out


@dataclass(frozen=True)
class Areas:
    """Where the build could have made a file: its tree and output, and when it began (a
    file written since is the build's, wherever it is)."""

    roots: tuple[str, ...]
    since_ns: int

    def show(self, path: str | Path) -> str:
        """`path` as a message names it: relative to the tree or the output where in one."""
        for root in self.roots[:2]:
            if str(path).startswith(root.rstrip("/") + "/"):
                return str(path)[len(root.rstrip("/")) + 1 :]
        return str(path)

    def made(self, path: str, mtime_ns: int) -> bool:
        real = os.path.realpath(path)
        inside = any(real == r or real.startswith(r.rstrip("/") + "/") for r in self.roots)
        return inside or mtime_ns >= self.since_ns


def areas(tree: Path, out: Path, since_ns: int) -> Areas:
    """The build's areas: `tree` and `out`; anywhere else (a temporary directory), what the
    build wrote since `since_ns` (an environment under /tmp holds torch's libraries)."""
    return Areas(tuple(dict.fromkeys(os.path.realpath(r) for r in (tree, out))), since_ns)


def problems(
    records: Sequence[Compile],
    sanitizer: str,
    area: Areas,
    binaries: Iterable[Path],
) -> list[str]:
    """What makes the build not instrumented unit by unit: one line per unit or object,
    naming it ([] when every unit carries the sanitizer)."""
    found: list[str] = []
    made = {sha for c in records for _, sha in c.outputs if sha}
    linked = {sha for c in records if c.links for _, sha in c.outputs if sha}
    for c in records:
        if not c.compiles:
            continue
        unit = ", ".join(map(area.show, c.sources)) or "(stdin)"
        bad = opt_out(c.argv)
        if bad:
            found.append(f"{unit}: compiled with {bad}, which takes {sanitizer} away again")
        elif not instrumented(c, sanitizer):
            found.append(f"{unit}: compiled by {c.tool} without -fsanitize={sanitizer}")
    for c in records:
        if not c.links:
            continue
        out = ", ".join(area.show(p) for p, _ in c.outputs)
        for path, sha, mtime, kind in c.inputs:
            found += _input_problems(path, sha, mtime, kind, made, area, out)
    for path in binaries:
        head = _head(str(path))
        if not head.startswith(ELF_MAGIC):
            continue
        sha = file_digest(path, LINKED)
        is_object = int.from_bytes(head[16:18], "little" if head[5] == 1 else "big") == ET_REL
        if sha not in (made if is_object else linked):
            what = "compiled" if is_object else "linked"
            found.append(
                f"{area.show(path)}: {what} by no recorded compiler (a compiler run by "
                "absolute path, or the file changed after it was built)"
            )
    return list(dict.fromkeys(found))


def _input_problems(
    path: str, sha: str, mtime: int, kind: str, made: set[str], area: Areas, out: str
) -> list[str]:
    """What is wrong with one link input, as the wrapper saw it when it linked (the file
    itself may be gone since: a build that removes its objects)."""
    if sha in made or kind not in ("object", "elf", "ar"):
        return []  # a recorded unit, or a linker script
    if kind != "object" and not area.made(path, mtime):
        return []  # a system or toolchain library (an object named on the line never is)
    shown = area.show(path)
    if kind in ("object", "elf"):
        return [
            f"{shown} (linked into {out}) was made by no recorded compile: a compiler run by "
            "absolute path, or an object that came with the source"
        ]
    members = (
        _members(path) if Path(path).is_file() and file_digest(Path(path), LINKED) == sha else None
    )
    if members is None:
        return [f"{shown} (linked into {out}) is an archive that cannot be checked now"]
    return [
        f"{name} in {shown} (linked into {out}) was made by no recorded compile"
        for name, digest in members
        if digest not in made
    ]
