"""The `jit` kind: csorch's own build.py contract (not torch's JIT loader). The tree's
build description runs as `python SCRIPT --root TREE --build-dir B --package-dir P
[--sanitize address]` and must leave an importable package in P. Loaders such as torch's
JIT import the result once, so an ASan build runs with the ASan runtime preloaded."""

from __future__ import annotations

import shutil
from pathlib import Path

from orchestrator.backends.asan import backend as asan
from orchestrator.model import Variant
from orchestrator.run.builds.step import Context, Step, compile_env

#: what a tree of a pip-buildable project holds (the hint towards `build: pip`)
PROJECT_FILES = ("setup.py", "pyproject.toml")


def description(tree: Path, declared: str) -> Path | None:
    """The jit build description: the declared one, else the tree's only build.py."""
    if declared:
        path = tree / declared
        return path if path.is_file() else None
    found = (
        [tree / "build.py"] if (tree / "build.py").is_file() else sorted(tree.glob("*/build.py"))
    )
    return found[0] if len(found) == 1 else None


def missing(tree: Path, declared: str) -> str:
    """Why a tree has no jit build description, and which build kind or key to set."""
    what = (
        f"no build description {declared!r} in the tree"
        if declared
        else "no single build.py or */build.py in the tree"
    )
    what += (
        "; `build: jit` is csorch's own build.py contract (python build.py --root --build-dir "
        "--package-dir), not torch's JIT"
    )
    project = [name for name in PROJECT_FILES if (tree / name).is_file()]
    if project:
        return (
            f"{what}. The tree has {' and '.join(project)}: set `build: pip` (pip install "
            "--target) or `build: wheel` (pip wheel, then install)"
        )
    return (
        f"{what}. Set build.description to the script, `build: pip` or `build: wheel` for a "
        "setup.py or pyproject.toml project, or {kind: command, command: [...], import_path: "
        "DIR} for any other build"
    )


def build(variant: Variant, tree: Path, out: Path, step: Step, ctx: Context) -> None:
    script = description(tree, variant.build.description)
    if script is None:
        raise step.fail(missing(tree, variant.build.description))
    argv = [
        ctx.python,
        str(script),
        "--root",
        str(tree),
        "--build-dir",
        str(out / "objects"),
        "--package-dir",
        str(out / "pkg"),
    ]
    env = compile_env(variant, ctx)
    if ctx.sanitizer:
        argv += ["--sanitize", ctx.sanitizer]
    if ctx.sanitizer == "address" and ctx.asan_runtime is not None:
        # the loader imports what it built: an instrumented library needs the runtime first
        env |= {"LD_PRELOAD": str(ctx.asan_runtime), "ASAN_OPTIONS": asan.merge_options()}
    step(argv, cwd=tree, env=env)
    shutil.rmtree(out / "objects", ignore_errors=True)  # the package holds the library
    if not (out / "pkg").is_dir() or not any((out / "pkg").iterdir()):
        raise step.fail(f"{script.name} left no package in --package-dir")
