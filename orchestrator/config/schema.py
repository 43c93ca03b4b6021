"""The config schema as data: every key allowed at each level, with the phrase that
error messages use for it, and the lexical rules (names, durations, URLs). The reader
is `config.py` (the `expect:` block: `config/expectations.py`); its docstring shows the schema as
an example file."""

from __future__ import annotations

import re
from dataclasses import dataclass

# \Z, not $: `$` also matches before a final newline, and "v\n" is no directory name
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
# (\Z, not $: "PATH\n" is no name)
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
DURATION_RE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>s|m|h)?$")
URL_RE = re.compile(r"^(?:[a-z+]+://|[\w.-]+@[\w.-]+:)")
UNITS = {None: 1, "s": 1, "m": 60, "h": 3600}
NAME_RULE = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"

TOP = {
    "name": "the experiment's name",
    "description": "free text for the report",
    "source": "the subject's source: a directory, or {git: REPO, ref: REF, subdir: DIR}",
    "variants": "the variants to build: a list of {name, patches, build}",
    "runs": "how to run the cases: a list of {name, checker, options, env}",
    "cases": "what to run: pytest paths or node ids, {name, pytest, marker}, or argv lists",
    "repeats": "how many times each variant x run x case runs (N)",
    "timeout": "time limit per attempt: seconds, or 90s / 10m / 2h",
    "case_timeout": "time limit per pytest case (a hung test ends as one inconclusive case)",
    "pytest_args": "extra pytest arguments for every pytest case (e.g. [-n, 4] for xdist)",
    "expect": "the causality claim: {controls, fix, min_hits, target}",
    "executor": "where the attempts run: local or slurm",
    "slurm": "Slurm settings: {partition, account, time, gres, sbatch, throttle, poll}",
    "python": "the interpreter the builds and cases use (a venv's bin/python)",
    "test_requires": "the cases' pinned test requirements: a list, or a requirements file",
    "wheels": "a wheel directory the test requirements install from (no index)",
    "cases_from": "config (case paths relative to this file) or variant (to each variant's tree)",
}
SOURCE = {
    "path": "a directory",
    "git": "a git repository (directory or URL)",
    "ref": "the git ref to check out",
    "subdir": "the subject's directory in the repository",
}
VARIANT = {
    "name": "the variant's name",
    "patches": "patch files, applied in order",
    "build": "jit, wheel, pip, prebuilt or command (or a mapping with kind)",
    "source": "this variant's own source",
    "description": "free text",
}
#: the build kinds, with what each one is for (the hint of a wrong kind)
BUILD_KINDS = {
    "jit": "csorch's build.py contract (python build.py --root --build-dir --package-dir)",
    "wheel": "pip wheel of the tree (setup.py or pyproject.toml), installed privately",
    "pip": "pip install --target of the tree (setup.py or pyproject.toml)",
    "prebuilt": "a release binary as users install it: wheel, requirement or installed",
    "command": "an argv in the tree (make), with import_path for the cases",
}
#: a prebuilt control's sources: exactly one
PREBUILT_SOURCES = ("wheel", "requirement", "installed")
BUILD = {
    "kind": ", ".join(BUILD_KINDS),
    "command": "the build argv (command builds)",
    "import_path": "the directory in the built tree the cases import from (command builds)",
    "description": "the build description inside the tree (jit builds)",
    "outputs": "files (globs in the tree) whose sha256 is recorded",
    "env": "environment for the build",
    "flags": "extra compile flags (jit, wheel and pip)",
    "wheel": "a wheel file (prebuilt)",
    "requirement": "a pinned requirement NAME==VERSION (prebuilt)",
    "find_links": "the wheel directory the requirement comes from (prebuilt)",
    "index": "the package index URL the requirement comes from (prebuilt)",
    "installed": "a distribution installed in the environment's python (prebuilt)",
}


@dataclass(frozen=True)
class Preset:
    """A named set of compute-sanitizer options that projects converge on; the argv itself
    is the backend's (backends/compute_sanitizer/backend.py's PRESETS, kept equal by a
    test), this is what the config reader and the docs need."""

    what: str  # what it is for
    source: str  # who runs it that way
    checkers: tuple[str, ...]  # the tools that take these options


PRESETS = {
    "cccl": Preset(
        "guard bytes past each allocation, use-after-free through the stream-ordered "
        "allocator, and the device heap checked",
        "NVIDIA CCCL's compute-sanitizer CI (--padding 512 --track-stream-ordered-races all "
        "--check-device-heap yes)",
        ("memcheck",),
    ),
    "leaks": Preset(
        "device allocations not freed at exit, as findings",
        "CCCL and RAPIDS cuDF's memcheck runs (--leak-check full)",
        ("memcheck",),
    ),
    "pool-allocator": Preset(
        "a pool allocator's sub-allocations seen as allocations, through its NVTX memory "
        "annotations (RMM, PyTorch's caching allocator kept on)",
        "compute-sanitizer's NVTX memory API support (--nvtx yes), as RMM documents it",
        ("memcheck", "initcheck"),
    ),
    "blocking": Preset(
        "every kernel launch made synchronous, so a report is attributed to the launch "
        "that made it (fewer reports: the first faulting thread per kernel)",
        "compute-sanitizer's --force-blocking-launches, PyTorch's CUDA_LAUNCH_BLOCKING=1 "
        "habit under memcheck",
        ("memcheck", "initcheck", "racecheck", "synccheck"),
    ),
}
#: compute-sanitizer's --target-processes values
TARGET_PROCESSES = ("all", "application-only")

RUN = {
    "name": "the run's name",
    "checker": "none, memcheck, initcheck, racecheck or synccheck",
    "options": "extra compute-sanitizer options",
    "preset": "a named set of compute-sanitizer options: " + ", ".join(PRESETS),
    "target_processes": "which processes compute-sanitizer follows: all or application-only",
    "suppressions": "compute-sanitizer suppression XML files (paths relative to this file)",
    "env": "environment for the cases",
    "repeats": "N for this run",
    "timeout": "time limit per attempt for this run",
    "case_timeout": "time limit per pytest case for this run",
    "description": "free text",
}
CASE = {
    "name": "the case's name",
    "pytest": "pytest paths or node ids",
    "marker": "a pytest -m expression",
    "command": "an argv list",
    "args": "extra pytest arguments",
    "backend_args": "extra pytest arguments per backend: {asan: [...], compute-sanitizer: [...]}",
}
#: the backends a case's `backend_args` may name
BACKENDS = ("asan", "compute-sanitizer")
EXPECT = {
    "controls": "the unpatched variants that must show the target",
    "fix": "the variant that must not show it",
    "min_hits": "k: the target must appear in at least k of N repeats of each control",
    "target": "what the defect looks like (a mapping or a list of them)",
}
TARGET = {
    "checker": "the tool that reports it",
    "kind": "finding kind",
    "access": "read, write, ...",
    "space": "global, shared, local",
    "size": "bytes",
    "function": "kernel or function (glob)",
    "frame": "any top frame (glob)",
    "run": "only this run's attempts",
    "case": "case names (glob)",
    "outcome": "failed or error: a test outcome instead of a finding",
}
SIGNATURE_KEYS = ("checker", "kind", "access", "space", "size", "function", "frame")

#: compute-sanitizer options csorch drives itself; a run's `options` may not set them
RESERVED_OPTIONS = {
    "--tool": "the run's `checker` picks the tool",
    "--log-file": "csorch decides where the checker's log goes",
    "--error-exitcode": "csorch judges the test's exit code and the checker's log "
    "separately; a changed exit code would mix them",
    "--save": "csorch parses the text log",
    "--xml": "csorch parses the text log",
    "--read": "a run executes its cases; it does not replay a saved log",
    "--prefix": "the log parser expects the default prefix",
    "--target-processes": "write the run's target_processes: all or application-only",
}
