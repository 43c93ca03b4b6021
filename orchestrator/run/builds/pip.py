"""The pip kinds over the tree's setup.py or pyproject.toml, as a user builds it, into a
private directory P (never the environment's site-packages):
- `pip`: `pip install TREE --no-deps --no-build-isolation --no-index --target P`;
- `wheel`: `pip wheel TREE --no-deps --no-build-isolation`, then `pip install --no-deps
  --no-index --target P` of that wheel: the wheel itself is hashed too.
No build isolation and no index: the build uses the environment's torch and setuptools
and fetches nothing, so it runs offline."""

from __future__ import annotations

from pathlib import Path

from orchestrator.model import Variant
from orchestrator.run.builds.jit import PROJECT_FILES
from orchestrator.run.builds.step import PIP_ENV, Context, Step, compile_env

_ISOLATION = ("--no-deps", "--no-build-isolation", "--no-index", "--no-cache-dir")


def _project(tree: Path, step: Step) -> None:
    if not any((tree / name).is_file() for name in PROJECT_FILES):
        raise step.fail(
            "no setup.py or pyproject.toml at the tree's root: a pip build needs one "
            "(point source.subdir at the project, or use build: jit or command)"
        )


def install_into(wheel: Path, out: Path, step: Step, ctx: Context, env: dict[str, str]) -> None:
    """Unpack one wheel into out/pkg, offline and without its dependencies."""
    argv = [ctx.python, "-m", "pip", "install", "-v", *_ISOLATION, "--target", str(out / "pkg")]
    step([*argv, str(wheel)], cwd=out, env=env)


def install(variant: Variant, tree: Path, out: Path, step: Step, ctx: Context) -> None:
    _project(tree, step)
    env = compile_env(variant, ctx, step.wrappers) | PIP_ENV
    argv = [ctx.python, "-m", "pip", "install", "-v", *_ISOLATION, "--target", str(out / "pkg")]
    step([*argv, str(tree)], cwd=tree, env=env)


def wheel(variant: Variant, tree: Path, out: Path, step: Step, ctx: Context) -> None:
    _project(tree, step)
    env = compile_env(variant, ctx, step.wrappers) | PIP_ENV
    # -v: the build backend's output, the compiler command lines, in the log
    argv = [
        ctx.python,
        "-m",
        "pip",
        "wheel",
        "-v",
        str(tree),
        *_ISOLATION,
        "-w",
        str(out / "wheel"),
    ]
    step(argv, cwd=tree, env=env)
    wheels = sorted((out / "wheel").glob("*.whl"))
    if len(wheels) != 1:
        raise step.fail(f"pip wheel produced {len(wheels)} wheels, expected 1")
    install_into(wheels[0], out, step, ctx, env)
