"""Folding repeated AddressSanitizer reports: the shim that counts them, and its lines.

Why (issue #14): in recover mode ASan prints every bad access in full. A use-after-free
inside a loop printed 132,096 reports in 6 minutes for one qext case; per report the cost
is the runtime's, not the log's (an unwind, a symbolization, and with gcc 12's runtime a
re-read of /proc/self/maps for every frame outside a module, which the fast unwinder
leaves in malloc/free stacks that pass through libffi). ASan has no print limit, and its
own `suppress_equal_pcs` drops repeats of a pc silently, per process (and kills the
process at the 26th distinct pc): it cannot keep a true count.

`shim.c` (built here with the runtime's compiler, cached by content) is preloaded
before the runtime. It prints the first report of each faulting instruction (pc, access,
size, shadow byte) per case in full and counts the rest; at each case's start and end
(csorch's pytest plugin calls it) and at exit it writes one line per folded key, which
closes the line its first counted repeat wrote:

    ==4540==csorch-asan-fold: folding READ of size 8 at pc 0x7f31344a21be shadow fd
    ==4540==csorch-asan-fold: 4999 more READ of size 8 at pc 0x7f31344a21be shadow fd

The ASan parser attaches each count to the printed report of that key in the same
process and case (`Finding.count`). A count that matches no printed report, and a key
opened whose count never came (a case whose end flush did not run, a process ended
without exit handlers), make the log's count inconclusive, never a silent undercount.
A child the process forks folds nothing (multiprocessing's workers end with `_exit`, so
their exit handlers never run): its reports are all printed, as without the shim. The
shim's own `_exit` flushes the loading process's counts and writes an end record
(`==PID==csorch-asan-exit: _exit(N)`) for a process that skips its exit handlers.
`CSORCH_ASAN_PRINT_LIMIT` in a run's env prints more of each key (0: every report,
nothing folded).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator import files, proc
from orchestrator.errors import CheckerUnavailable, ProcessStartError
from orchestrator.model import Finding
from orchestrator.model.record import Record

SOURCE = Path(__file__).with_name("shim.c")
LIBRARY = "libcsorch_asan_fold.so"
CFLAGS = ("-O2", "-fPIC", "-shared", "-Wall")
#: ASAN_OPTIONS the shim needs: it comes before the runtime in LD_PRELOAD
OPTIONS = ("verify_asan_link_order=0",)
#: how many reports of one key a case prints in full (the shim's default is 1)
PRINT_LIMIT_VAR = "CSORCH_ASAN_PRINT_LIMIT"

# ==4540==csorch-asan-fold: 4999 more READ of size 8 at pc 0x7f31344a21be shadow fd
# ==4540==csorch-asan-fold: folding READ of size 8 at pc 0x7f31344a21be shadow fd
FOLD_RE = re.compile(
    r"^==(?P<pid>[0-9]{1,9})==csorch-asan-fold: (?:(?P<count>[1-9][0-9]{0,18}) more|folding) "
    r"(?P<access>READ|WRITE) of size (?P<size>[0-9]{1,18}) at pc 0x(?P<pc>[0-9a-f]{1,16}) "
    r"shadow (?P<shadow>[0-9a-f]{2})$"
)
# any line of the shim's (one FOLD_RE does not read is an odd count, never ignored)
FOLD_ANY_RE = re.compile(r"^==\d+==csorch-asan-fold:")
# ==4540==ERROR: AddressSanitizer: heap-use-after-free on address 0x6030... at pc 0x55d0... bp
HEADER_PC_RE = re.compile(r"\bat pc 0x(?P<pc>[0-9a-fA-F]+)")
# =>0x0c547fff8040:[fd]fd fd fd fd fd fd fd fd fd fd fd fd fd fd fd
SHADOW_ROW_RE = re.compile(r"^=>0x[0-9a-fA-F]+:.*?\[(?P<shadow>[0-9a-fA-F]{2})\]")


@dataclass(frozen=True)
class Fold(Record):
    """One fold line: `count` more reports of a key, in process `pid`, in `case` (0: the
    line that opened the key, at its first counted repeat)."""

    pid: int
    case: str
    access: str  # "read" or "write"
    size: int
    pc: str  # hex digits, lower case, no 0x
    shadow: str  # the shadow byte of the address, two hex digits
    count: int


@dataclass(frozen=True)
class Key:
    """What a printed report offers to match a fold: its process, case, pc (the
    header's `at pc`, the instruction after the access), access, size and shadow byte
    ("" where the report showed none)."""

    pid: int | None
    case: str
    pc: str
    access: str
    size: int | None
    shadow: str = ""


def fold(text: str, case: str) -> Fold | None:
    """A fold line (stripped) as a record; None when the line is not one FOLD_RE reads."""
    m = FOLD_RE.match(text)
    if not m:
        return None
    return Fold(
        int(m["pid"]),
        case,
        m["access"].lower(),
        int(m["size"]),
        m["pc"].lstrip("0") or "0",
        m["shadow"].lower(),
        int(m["count"] or 0),
    )


def header_pc(header: str) -> str:
    """The `at pc 0x...` of a report's first line, normalized ("" when it has none)."""
    m = HEADER_PC_RE.search(header)
    return (m["pc"].lower().lstrip("0") or "0") if m else ""


def attach(
    findings: Sequence[Finding], keys: Sequence[Key], folds: Sequence[Fold]
) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    """Each fold's count added to the last printed report of its key (`keys[i]` is
    `findings[i]`'s): the findings, and what does not add up (described): a count that
    matches no printed report, a key opened and never counted."""
    out = list(findings)
    unmatched: list[str] = []
    opened: dict[tuple, Fold] = {}
    for f in folds:
        key = (f.pid, f.case, f.access, f.size, f.pc, f.shadow)
        if f.count == 0:
            opened[key] = f
            continue
        opened.pop(key, None)
        for i in range(len(out) - 1, -1, -1):
            k = keys[i]
            if (k.pid, k.case, k.pc, k.access, k.size) == (
                f.pid,
                f.case,
                f.pc,
                f.access,
                f.size,
            ) and k.shadow in ("", f.shadow):
                out[i] = replace(out[i], count=out[i].count + f.count)
                break
        else:
            where = f" in {f.case}" if f.case else ""
            unmatched.append(
                f"{f.count} folded {f.access.upper()} of size {f.size} at pc 0x{f.pc} "
                f"(pid {f.pid}{where}) match no printed report"
            )
    for f in opened.values():
        where = f" in {f.case}" if f.case else ""
        unmatched.append(
            f"{f.access.upper()} of size {f.size} at pc 0x{f.pc} (pid {f.pid}{where}) began "
            "folding and its count never came (the process ended without exit handlers?)"
        )
    return tuple(out), tuple(unmatched)


def build(compiler: str, directory: Path) -> Path:
    """The shim compiled by `compiler` under `directory`, built once per content: the key
    covers the source, the flags and the compiler's version. CheckerUnavailable if it
    does not compile."""
    try:
        version = proc.capture([compiler, "-dumpfullversion"], timeout=60).output.strip()
    except ProcessStartError as exc:
        raise CheckerUnavailable("asan", f"{compiler}: {exc.reason}") from None
    digest = hashlib.sha256()
    for part in (files.read_bytes(SOURCE), " ".join(CFLAGS), compiler, version):
        digest.update((part if isinstance(part, bytes) else part.encode()) + b"\0")
    # absolute: LD_PRELOAD is read in the child, which starts in another directory
    out = Path(directory).resolve() / digest.hexdigest()[:24] / LIBRARY
    if out.exists():
        return out
    files.make_dirs(out.parent, root=Path(directory).resolve())
    # built beside its final name and renamed: a concurrent csorch sees all of it or none
    fd, partial = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=out.parent)
    os.close(fd)
    try:
        done = proc.capture([compiler, *CFLAGS, str(SOURCE), "-o", partial, "-ldl"], timeout=120)
        if done.returncode != 0:
            raise CheckerUnavailable(
                "asan",
                f"the report-fold shim did not compile: {done.output.strip()[-400:]}",
                hint=f"check that `{compiler}` can build a shared library",
            )
        os.chmod(partial, 0o755)
        os.replace(partial, out)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return out
