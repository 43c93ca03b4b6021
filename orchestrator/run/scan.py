"""A scan: the first thing a user tries, `csorch scan -- pytest ARGS` (or `-- ./binary
ARGS`). One variant (the tree as it is, or built by `--build`), one run under the checker,
one case (the command), no expectations: the per-case findings table and a bundle, with
no config file to write.

`experiment` makes the Experiment the command line describes (the pipeline runs it as any
other; the bundle records it, so `csorch report` and `verify` read a scan's bundle too);
`verdict` says what a scan found, since there is no causality claim to judge: FAIL when the
checker reported a finding no suppression marked, INCONCLUSIVE when the tree did not build
or an attempt's evidence cannot be trusted (a timeout, an incomplete log), PASS otherwise.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from orchestrator.config.schema import PRESETS, TARGET_PROCESSES
from orchestrator.errors import CsorchError
from orchestrator.judge import Judgement, failed_builds, judged_findings
from orchestrator.model import (
    RUN_CHECKERS,
    Attempt,
    Build,
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Experiment,
    Outcome,
    Run,
    SourceKind,
    SourceSpec,
    Variant,
    Verdict,
)

#: the one variant of a scan: the tree as it is
VARIANT = "tree"
#: the build of a tree that needs none: a command build that does nothing, so the command
#: case runs in csorch's copy of the tree (the user's own tree is never written)
NO_BUILD = ("true",)
#: how a scan's command line names pytest: `pytest ARGS` or `python -m pytest ARGS`
_PYTEST_RE = re.compile(r"^(?:pytest|py\.test)$")
_PYTHON_RE = re.compile(r"^python(?:3(?:\.\d+)?)?$")
_SLUG_RE = re.compile(r"[^A-Za-z0-9._-]+")


def _slug(words: Sequence[str]) -> str:
    slug = _SLUG_RE.sub("-", " ".join(words)).strip("-._")
    return slug[:64].rstrip("-._") or "scan"


def _pytest_args(argv: Sequence[str]) -> tuple[str, ...] | None:
    """The arguments after `pytest` (or `python -m pytest`), or None for another command."""
    if argv and _PYTEST_RE.match(Path(argv[0]).name):
        return tuple(argv[1:])
    if len(argv) >= 3 and _PYTHON_RE.match(Path(argv[0]).name) and argv[1:3] == ["-m", "pytest"]:
        return tuple(argv[3:])
    return None


def case(argv: Sequence[str], cwd: Path) -> Case:
    """The scan's one case: a pytest case for `pytest ARGS` (each argument naming an
    existing file or directory, `::node` kept, made absolute against `cwd`, since the
    children start elsewhere; the rest passed to pytest as given), else a command case."""
    argv = list(argv)
    if not argv:
        raise CsorchError(
            "nothing to scan", hint="csorch scan -- pytest tests/  (or: csorch scan -- ./prog ARGS)"
        )
    args = _pytest_args(argv)
    if args is None:
        return Case(_slug([Path(argv[0]).name, *argv[1:]]), CaseKind.COMMAND, command=tuple(argv))
    targets, rest = [], []
    for arg in args:
        head, sep, node = arg.partition("::")
        path = cwd / head
        if not arg.startswith("-") and head and path.exists():
            targets.append(str(path.resolve()) + sep + node)
        else:
            rest.append(arg)
    if not targets:
        raise CsorchError(
            f"pytest {shlex.join(args)}: no test file or directory among the arguments",
            hint="name the tests: csorch scan -- pytest tests/test_x.py [ARGS]",
        )
    name = _slug([Path(targets[0].partition("::")[0]).name.removesuffix(".py")])
    return Case(name, CaseKind.PYTEST, pytest=tuple(targets), args=tuple(rest))


def build_spec(build: str | None) -> BuildSpec:
    """`--build`: jit, wheel, or a command line (split as a shell would, run in the
    copy); none: the tree as it is."""
    if build is None or not build.strip():
        return BuildSpec(BuildKind.COMMAND, command=NO_BUILD)
    if build in (BuildKind.JIT.value, BuildKind.WHEEL.value):
        return BuildSpec(BuildKind(build))
    try:
        argv = tuple(shlex.split(build))
    except ValueError as exc:
        raise CsorchError(f"--build {build!r}: {exc}") from None
    return BuildSpec(BuildKind.COMMAND, command=argv)


def checker_of(name: str) -> Checker:
    """`--checker`: one of the checkers a run may name."""
    allowed = [c.value for c in RUN_CHECKERS]
    if name not in allowed:
        raise CsorchError(f"unknown checker {name!r}", hint="choose one of: " + ", ".join(allowed))
    return Checker(name)


def experiment(
    argv: Sequence[str],
    *,
    cwd: Path,
    source: Path | None = None,
    checker: str = "memcheck",
    build: str | None = None,
    options: Sequence[str] = (),
    preset: str = "",
    target_processes: str = "",
    timeout: float = 900.0,
    repeats: int = 1,
    name: str = "",
) -> Experiment:
    """The experiment `csorch scan [--source DIR] [--build B] [--checker C] -- ARGV`
    describes; CsorchError for an empty argv, a source that is not a directory, pytest
    without tests, or an unknown checker."""
    tree = (source or cwd).resolve()
    if not tree.is_dir():
        raise CsorchError(f"--source {tree}: not a directory", hint="give the subject's tree")
    the_case = case(argv, cwd)
    the_checker = checker_of(checker)
    if (options or preset or target_processes) and the_checker is Checker.NONE:
        raise CsorchError(
            "--option, --preset and --target-processes are checker options; "
            "--checker none runs no checker"
        )
    if preset and preset not in PRESETS:
        raise CsorchError(f"unknown preset {preset!r}", hint="choose one of: " + ", ".join(PRESETS))
    if preset and the_checker.value not in PRESETS[preset].checkers:
        raise CsorchError(
            f"preset {preset} is for {', '.join(PRESETS[preset].checkers)}, not {checker}",
            hint="drop --preset, or pick one for --checker " + checker,
        )
    if target_processes and target_processes not in TARGET_PROCESSES:
        raise CsorchError(
            f"--target-processes {target_processes!r}",
            hint="choose one of: " + ", ".join(TARGET_PROCESSES),
        )
    return Experiment(
        name=_slug([name or f"scan-{tree.name}"]),
        source=SourceSpec(SourceKind.PATH, str(tree)),
        variants=(Variant(VARIANT, build_spec(build), description="the tree as it is"),),
        runs=(
            Run(
                the_checker.value,
                the_checker,
                options=tuple(options),
                preset=preset,
                target_processes=target_processes,
            ),
        ),
        cases=(the_case,),
        repeats=repeats,
        timeout=timeout,
        description=f"csorch scan -- {shlex.join(argv)}",
    )


def verdict(builds: Iterable[Build], attempts: Iterable[Attempt]) -> Judgement:
    """What the scan found (no causality claim: see the module docstring)."""
    attempts = list(attempts)
    failed = failed_builds(list(builds))
    if failed:
        return Judgement(
            Verdict.INCONCLUSIVE, tuple(f"{v} did not build: {why}" for v, why in failed.items())
        )
    found = sum(f.count for a in attempts for f in judged_findings(a))
    if found:
        cases = sorted({a.case for a in attempts if judged_findings(a)})
        return Judgement(
            Verdict.FAIL,
            (f"{found} finding(s) the checker reported in {', '.join(cases)}",),
        )
    unsure = [
        f"{a.case} (repeat {a.repeat + 1}): {a.inconclusive_reason}"
        for a in attempts
        if a.inconclusive_reason
    ]
    hints = _hints(attempts)
    if unsure or not attempts:
        return Judgement(Verdict.INCONCLUSIVE, (*(unsure or ("nothing ran",)), *hints))
    return Judgement(Verdict.PASS, ("no finding in any attempt", *_failed(attempts), *hints))


#: pytest's words for a module the tests import and cannot find
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")


def _failed(attempts: Sequence[Attempt]) -> tuple[str, ...]:
    """A PASS with failed tests says so: a scan judges the checker's findings, not the
    tests' outcomes, and a reader of PASS must not take the tests for green."""
    bad = sorted({a.case for a in attempts if a.outcome in (Outcome.FAILED, Outcome.ERROR)})
    if not bad:
        return ()
    return (
        f"but tests failed or errored in {', '.join(bad)}: a scan's PASS says only that "
        "the checker found nothing in what ran (see the table)",
    )


def _hints(attempts: Sequence[Attempt]) -> tuple[str, ...]:
    """What to do where the tests could not even import what they test."""
    missing = sorted(
        {m[1] for a in attempts for n in a.nodes for m in _MISSING.finditer(n.detail)}
        | {m[1] for a in attempts for m in _MISSING.finditer(a.error or "")}
    )
    if not missing:
        return ()
    return (
        f"the tests could not import {', '.join(missing)}: a scan runs them on the tree as "
        "it is; build it first (--build jit, wheel or a command such as 'make') or install "
        "it where the tests' Python finds it",
    )
