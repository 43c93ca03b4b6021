"""What a bundle records, without what differs between two runs of the same code.

`essence(out, cache)` reads a bundle's results.json and manifest.json and masks what no
change of csorch's can keep equal (times, CPU seconds, pids, addresses, log digests, the
host, scratch directory names) and the paths of the interpreter, this checkout, the bundle
and the cache.
Everything else (verdicts, reasons, attempts, outcomes, findings, signatures, argv and
environment, build records, the manifest's layout) must come out the same from a run of
the same experiment: tests/fixtures/records/ holds the essence of real runs, and a change
that alters it either fixes a defect (the fixture is made again, and the commit says
why) or is one.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "tests" / "fixtures" / "records"

#: fields whose values are the run's moment or the host's, never the code's (the jobs and
#: each child's thread share follow the host's CPU count; the compile cache's hits and
#: misses, whether the host has ccache and how warm its store is)
VOLATILE = frozenset(
    {"duration", "cpu", "started", "finished", "pid", "csorch", "host", "command", "sha256",
     "size", "gpu", "jobs", "OMP_NUM_THREADS", "compile_hits", "compile_misses",
     "compile_remote_hits", "compile_cpu", "executes"}
)  # fmt: skip
#: maps of file -> digest (a log's digest holds its pids and addresses)
DIGEST_MAPS = frozenset({"logs", "files"})
#: a source a bundle keeps is named by its digest (bundle/trees.py): the files beside the
#: cases (this checkout's conftest.py, pyproject.toml) change with the checkout
KEPT_SOURCE = re.compile(r"(?<=^trees/objects/)[0-9a-f]{64}$")
MASKS = (
    (re.compile(r"run-[A-Za-z0-9_]{8}"), "run-X"),  # the scratch tree's mkdtemp name
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),  # addresses, pcs
    (re.compile(r"==\d+=="), "==P=="),  # ASan's pid prefix
    (re.compile(r"\.\d{3,}\b"), ".P"),  # a checker file's pid suffix
    # ... which in the sandbox's PID namespace is a small number (the command is pid 2)
    (re.compile(r"(\.checker(?:\.started)?)\.\d+\b"), r"\1.P"),
)


#: the subject's own assertion about a defect's data: what freed memory held differs by run
SUBJECT_ASSERTION = re.compile(r"^AssertionError: .*")
DIGITS = re.compile(r"\d+")


def _mask(value: Any, roots: list[tuple[str, str]]) -> Any:
    if isinstance(value, dict):
        return {
            _mask(k, roots): "<v>"
            if k in VOLATILE
            else {KEPT_SOURCE.sub("<sha256>", _mask(f, roots)): "<d>" for f in v}
            if k in DIGEST_MAPS and isinstance(v, dict)
            else DIGITS.sub("N", v)
            if k == "detail" and isinstance(v, str) and SUBJECT_ASSERTION.match(v)
            else _mask(v, roots)
            for k, v in sorted(value.items())
        }
    if isinstance(value, list):
        return [_mask(v, roots) for v in value]
    if isinstance(value, str):
        for path, name in roots:
            value = value.replace(path, name)
        for pattern, to in MASKS:
            value = pattern.sub(to, value)
    return value


def essence(out: Path, cache: Path, root: Path = ROOT) -> dict[str, Any]:
    """The bundle in `out` (its cache in `cache`), masked as the module says."""
    roots = [
        (sys.executable, "<PYTHON>"),  # the checkout's venv, or any interpreter running this
        (sys.prefix, "<PREFIX>"),
        (str(out), "<OUT>"),
        (str(cache), "<CACHE>"),
        (str(root), "<ROOT>"),
    ]
    return {
        name: _mask(json.loads((out / name).read_text()), roots)
        for name in ("results.json", "manifest.json")
    }


def differences(got: dict[str, Any], want: dict[str, Any], where: str = "") -> list[str]:
    """Where two essences differ, as `path: want -> got` lines (empty: the same)."""
    if isinstance(got, dict) and isinstance(want, dict):
        out = []
        for key in sorted(set(got) | set(want)):
            if key not in got or key not in want:
                out.append(f"{where}/{key}: {'missing' if key not in got else 'new'}")
            else:
                out += differences(got[key], want[key], f"{where}/{key}")
        return out
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        pairs = enumerate(zip(got, want, strict=True))
        return [d for i, (g, w) in pairs for d in differences(g, w, f"{where}[{i}]")]
    return [] if got == want else [f"{where}: {str(want)[:200]!r} -> {str(got)[:200]!r}"]


def load(name: str) -> dict[str, Any]:
    """The recorded essence `tests/fixtures/records/<name>.json`."""
    return json.loads((RECORDS / f"{name}.json").read_text())


#: `CSORCH_RECORD=1 pytest tests/e2e/test_same_records.py ...` writes the essences anew
#: (a change that alters what csorch records on purpose: its commit says why)
RECORD = "CSORCH_RECORD"


def compare(got: dict[str, Any], name: str) -> list[str]:
    """`differences` against the recorded essence `name`; with CSORCH_RECORD=1, the
    essence written as the new record instead (and nothing to report)."""
    if os.environ.get(RECORD) == "1":
        (RECORDS / f"{name}.json").write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        return []
    return differences(got, load(name))
