"""What a variant's own tests are under `cases_from: variant`, read from its tree's listing
(run/sources.listing: "mode:sha256" per file) and a reader of its Python files: the run
reads the tree, `csorch verify` the listing and the sources a bundle keeps (bundle/trees).

Each entry is "PATH FORM", sorted. The paths are each pytest case's directory, all of it
(helpers, data, conftest.py), and pytest's configuration files in every directory above
it within the tree. A Python file's form is its AST without docstrings
(carry/classify: a comment or a reworded docstring is the same test); any other file's,
or a Python file that cannot be read or parsed, is its listing entry. The judge compares
the fix's with each control's (judge/causality.other_tests): a fix that changes its own
test is no evidence that its code removed the defect."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath

from orchestrator.carry import classify
from orchestrator.model import CaseKind, CasesFrom, Experiment

#: pytest's configuration files: one in a directory above a case changes what runs
PYTEST_FILES = ("conftest.py", "pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
AST = "ast:"


def paths(experiment: Experiment, listing: Mapping[str, str]) -> list[str]:
    """The listing's paths that are the experiment's case files (see the docstring)."""
    found: set[str] = set()
    for case in experiment.cases:
        if case.kind is not CaseKind.PYTEST:
            continue
        for target in case.pytest:
            name = PurePosixPath(target.partition("::")[0]).as_posix().strip("/")
            if name.startswith("..") or name == ".":
                name = "" if name == "." else name
            is_dir = name == "" or any(p.startswith(name + "/") for p in listing)
            directory = name if is_dir else PurePosixPath(name).parent.as_posix()
            directory = "" if directory == "." else directory
            found.update(p for p in listing if not directory or p.startswith(directory + "/"))
            above = PurePosixPath(directory)
            while str(above) not in ("", "."):
                above = above.parent
                for config in PYTEST_FILES:
                    candidate = (above / config).as_posix().removeprefix("./")
                    if candidate in listing:
                        found.add(candidate)
    return sorted(found)


def form(path: str, entry: str, read: Callable[[str], bytes | None]) -> str:
    """One case file's form: the AST digest of a Python file `read` gives, else `entry`."""
    if path.endswith(classify.PYTHON) and not entry.startswith("l:"):
        data = read(path)
        if data is not None:
            try:
                return AST + hashlib.sha256(classify.python_form(data).encode()).hexdigest()
            except (SyntaxError, ValueError, RecursionError):
                pass
    return entry


def forms(
    experiment: Experiment, listing: Mapping[str, str], read: Callable[[str], bytes | None]
) -> tuple[str, ...]:
    """The variant's case files and their forms, "PATH FORM" ( () unless `cases_from:
    variant`)."""
    if experiment.cases_from is not CasesFrom.VARIANT:
        return ()
    return tuple(f"{p} {form(p, listing[p], read)}" for p in paths(experiment, listing))
