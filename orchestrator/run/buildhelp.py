"""What to tell a user whose `build:` does not fit the tree: which files the tree holds
(setup.py, pyproject.toml, a Makefile, build.py scripts) and the build kind and key that
would build it. Pure over the tree's file names; `run/build` raises with its words."""

from __future__ import annotations

from pathlib import Path

#: a jit description's contract, in the words every message uses
JIT_CONTRACT = (
    "`build: jit` is csorch's own build.py contract, not torch's JIT: a Python script taking "
    "--root TREE --build-dir B --package-dir P [--sanitize address] that leaves an importable "
    "package in P"
)


def packaging(declared: str) -> bool:
    """Whether a declared description is a packaging file (setup.py, pyproject.toml),
    which a jit build cannot run: pip builds those (`build: pip` or `build: wheel`)."""
    return Path(declared).name in ("setup.py", "pyproject.toml")


def _descriptions(tree: Path) -> list[str]:
    found = [tree / "build.py"] if (tree / "build.py").is_file() else []
    found += sorted(tree.glob("*/build.py"))
    return [p.relative_to(tree).as_posix() for p in found]


def kinds_for(tree: Path) -> list[str]:
    """The `build:` values that fit the tree's files, best first."""
    out = []
    for name in ("pyproject.toml", "setup.py"):
        if (tree / name).is_file():
            out.append(f"`build: pip` (pip install --target of the tree's {name})")
            out.append(f"`build: wheel` (pip wheel of the tree's {name})")
            break
    for name in ("Makefile", "makefile", "GNUmakefile"):
        if (tree / name).is_file():
            out.append("`build: {kind: command, command: [make], outputs: [GLOB]}`")
            break
    else:
        out.append("`build: {kind: command, command: [...], import_path: DIR}` for any other build")
    found = _descriptions(tree)
    script = found[0] if found else "PATH/build.py"
    out.append(f"`build: {{kind: jit, description: {script}}}` ({JIT_CONTRACT})")
    return out


def no_description(tree: Path, declared: str) -> str:
    """Why a jit build found no description, and what to set instead."""
    if declared and packaging(declared):
        why = f"build.description names {declared}, which is not a jit build description"
    elif declared:
        why = f"build.description {declared!r} is not a file in the tree"
    else:
        found = _descriptions(tree)
        why = "a jit build needs one build description, build.py or */build.py, in the tree; " + (
            "it has none" if not found else f"it has {len(found)}: {', '.join(found)}"
        ) + " (build.description names one)"
    return f"{why}; set the variant's build to one of: " + "; or ".join(kinds_for(tree))
