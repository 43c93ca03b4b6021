"""The `jit` kind: csorch's own build.py contract (not torch's JIT loader). The tree's
build description runs as `python SCRIPT --root TREE --build-dir B --package-dir P
[--sanitize address]` and must leave an importable package in P. Loaders such as torch's
JIT import the result once, so an ASan build runs with the ASan runtime preloaded."""

from __future__ import annotations

from pathlib import Path

from orchestrator import files
from orchestrator.backends.asan import backend as asan
from orchestrator.model import Variant
from orchestrator.run import buildhelp
from orchestrator.run.builds.step import Context, Step, compile_env

#: what a tree of a pip-buildable project holds (the hint towards `build: pip`)
PROJECT_FILES = ("setup.py", "pyproject.toml")


def description(tree: Path, declared: str) -> Path | None:
    """The jit build description: the declared one, else the tree's only build.py."""
    if declared:
        path = tree / declared
        # setup.py does not take --root/--package-dir: that tree wants `build: pip`
        return path if path.is_file() and not buildhelp.packaging(declared) else None
    found = (
        [tree / "build.py"] if (tree / "build.py").is_file() else sorted(tree.glob("*/build.py"))
    )
    return found[0] if len(found) == 1 else None


def build(variant: Variant, tree: Path, out: Path, step: Step, ctx: Context) -> None:
    script = description(tree, variant.build.description)
    if script is None:
        raise step.fail(buildhelp.no_description(tree, variant.build.description))
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
    env = compile_env(variant, ctx, step.wrappers)
    if ctx.sanitizer:
        argv += ["--sanitize", ctx.sanitizer]
    if ctx.sanitizer == "address" and ctx.asan_runtime is not None:
        # the loader imports what it built: an instrumented library needs the runtime first
        env |= {"LD_PRELOAD": str(ctx.asan_runtime), "ASAN_OPTIONS": asan.merge_options()}
    step(argv, cwd=tree, env=env)
    files.remove_tree(out / "objects", ignore_errors=True)  # the package holds the library
    if not (out / "pkg").is_dir() or not any((out / "pkg").iterdir()):
        raise step.fail(f"{script.name} left no package in --package-dir")
