"""A first experiment config for a repository and a fix (`csorch init`): facts about the
repository in, YAML text out. Pure: the caller reads git and the tree's file names.

The fix is one of:
- a commit (`--fix REF`): the fixed variant is the repository at REF and the control the
  same repository at REF's parent;
- a control patch (`--control PATCH`): the tree as it is is fixed, the patch undoes it;
- an installed release (`--installed WHEEL|REQUIREMENT`): a prebuilt control, the binary
  users have (with either of the others, or alone against the tree as it is).
The build kind comes from the tree's files: a csorch build description (build.py or
*/build.py) is `jit`, setup.py or pyproject.toml is `wheel`, a Makefile is `command`.
The config has no `target`: the first run proposes one from what the controls reproduce.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import CsorchError

_PLAIN_RE = re.compile(r"^[A-Za-z0-9_./~+-]+\Z")
_WHEEL_RE = re.compile(r"\.whl\Z")


@dataclass(frozen=True)
class Facts:
    """What `csorch init` found out (every path absolute)."""

    root: Path  # the subject's directory (in a git work tree with --fix)
    files: tuple[str, ...]  # the subject's file names: top level and */build.py
    tests: tuple[Path, ...]  # test files or directories
    fix: str = ""  # --fix: the commit's full sha
    parent: str = ""  # ... and its parent's
    subject: str = ""  # ... and its subject line (for the description)
    repo: Path | None = None  # --fix: the repository's top level
    subdir: str = ""  # --fix: the subject's directory inside it
    control: Path | None = None  # --control PATCH
    installed: str = ""  # --installed: a wheel file (absolute) or a requirement


def build_kind(files: tuple[str, ...]) -> str:
    """The `build:` value for a tree with these files; CsorchError when none fits."""
    descriptions = [f for f in files if f == "build.py" or f.endswith("/build.py")]
    if "build.py" in descriptions:
        return "jit"
    if len(descriptions) == 1:
        return f"{{kind: jit, description: {descriptions[0]}}}"
    if "pyproject.toml" in files or "setup.py" in files:
        return "wheel"
    if {"Makefile", "makefile", "GNUmakefile"} & set(files):
        return "{kind: command, command: [make]}"
    raise CsorchError(
        "cannot tell how to build this tree: it has no build.py, setup.py, pyproject.toml "
        "or Makefile",
        hint="write the variants' build: by hand (jit, wheel, or {kind: command, command: "
        "[...]}); csorch check CONFIG then shows the plan",
    )


def _scalar(text: str) -> str:
    return text if _PLAIN_RE.match(text) else json.dumps(text)


def _path(path: Path, base: Path | None) -> str:
    """`path` as the config writes it: relative to the config's directory when known."""
    return _scalar(os.path.relpath(path, base) if base is not None else str(path))


def _name(facts: Facts) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", facts.root.name).strip("-._") or "subject"
    return f"{stem[:50]}-fix"


def scaffold(facts: Facts, *, base: Path | None = None, name: str = "") -> str:
    """The config's text; paths relative to `base` (the config's directory), else
    absolute. CsorchError when the facts name no control or no way to build."""
    if not (facts.fix or facts.control or facts.installed):
        raise CsorchError(
            "init needs the fix: --fix REF (a commit; its parent is the control), "
            "--control PATCH (a patch that undoes the fix), or --installed WHEEL|REQUIREMENT",
        )
    if not facts.tests:
        raise CsorchError("init needs the tests to run", hint="give --tests PATH (repeatable)")
    kind = build_kind(facts.files)
    name = name or _name(facts)
    lines = [
        "# Made by csorch init. Check it with `csorch check THIS_FILE`, then `csorch run`.",
        f"name: {_scalar(name)}",
    ]
    if facts.fix:
        subject = f": {facts.subject}" if facts.subject else ""
        lines.append(f"description: {json.dumps(f'fix {facts.fix[:12]}{subject}')}")
        assert facts.repo is not None
        repo = _path(facts.repo, base)
        sub = f", subdir: {_scalar(facts.subdir)}" if facts.subdir else ""
        lines.append(f"source: {{git: {repo}, ref: {facts.fix}{sub}}}")
    else:
        lines.append(f"source: {_path(facts.root, base)}")
    lines += ["variants:", "  - name: fixed", f"    build: {kind}"]
    controls = []
    if facts.fix:
        controls.append("control")
        lines += [
            "  - name: control                  # the fix's parent commit",
            f"    source: {{git: {repo}, ref: {facts.parent}{sub}}}",
            f"    build: {kind}",
        ]
    if facts.control is not None:
        undone = "undone" if facts.fix else "control"
        controls.append(undone)
        lines += [
            f"  - name: {undone:<24} # the tree with the fix undone",
            f"    patches: [{_path(facts.control, base)}]",
            f"    build: {kind}",
        ]
    if facts.installed:
        controls.append("installed")
        is_wheel = bool(_WHEEL_RE.search(facts.installed))
        what = (
            f"wheel: {_path(Path(facts.installed), base)}"
            if is_wheel
            else f"requirement: {json.dumps(facts.installed)}"
        )
        lines += [
            "  - name: installed                # the release as users install it",
            f"    build: {{kind: prebuilt, {what}}}",
        ]
    lines += [
        "runs:",
        "  - name: plain                      # the caching allocator on: the regression signal",
        "    checker: none",
        "  - name: memcheck",
        "    checker: memcheck                # ASan stands in for it on a host without a GPU",
        "    env: {PYTORCH_NO_CUDA_MEMORY_CACHING: 1}",
        "cases:",
        *[f"  - {_path(t, base)}" for t in facts.tests],
        "repeats: 3                          # N: one repeat cannot tell a flaky test",
        "timeout: 30m                         # per attempt",
        "case_timeout: 5m                     # per test: a hung test is one inconclusive case",
        "expect:",
        f"  controls: [{', '.join(controls)}]",
        "  fix: fixed",
        "  min_hits: 2                        # k of N: a control shows the target in 2 of 3",
        "  # no target: the first run prints what every control reproduces and the fix",
        "  # does not, as a target: block to paste here",
    ]
    return "\n".join(lines) + "\n"
