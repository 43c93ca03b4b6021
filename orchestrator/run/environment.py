"""The project's environment: the interpreter a variant is built for and its cases run
under (the config's `python:`, else csorch's own), and the cases' test requirements,
installed into the variant's cache entry (`deps/`, second on the cases' PYTHONPATH after
the build itself) so that the environment is never changed.

Requirements install without their dependencies (`pip install --no-deps --target`): a
dependency resolved there would shadow the environment's torch. A config pins each one
(`test_requires: [expecttest==0.3.0]`) or names a requirements file; with `wheels:` they
come from that directory only (`--no-index --find-links`), for hosts without an index."""

from __future__ import annotations

from pathlib import Path

from orchestrator.files import INPUT, file_digest
from orchestrator.model import Environment, Experiment
from orchestrator.run.builds.step import PIP_ENV, Context, Step

DEPS = "deps"


def interpreter(experiment: Experiment, default: str) -> str:
    """The python the experiment's builds and cases use."""
    return experiment.environment.python or default


def torch_of(python: str) -> dict[str, str]:
    """The digest of the torch a venv's interpreter imports (its version.py), so that the
    build cache, keyed by csorch's own torch, also tells the environment's apart: a venv
    whose torch is upgraded rebuilds. Empty where the layout is not a venv's."""
    root = Path(python).parent.parent
    found = sorted(root.glob("lib/python*/site-packages/torch/version.py"))
    return {str(f.relative_to(root)): file_digest(f, INPUT) for f in found}


def wanted(env: Environment) -> bool:
    return bool(env.requires or env.requirements_file)


def key_inputs(env: Environment) -> dict[str, object]:
    """What the installed requirements depend on, for the build's cache key."""
    if not wanted(env):
        return {}
    inputs: dict[str, object] = {"requires": list(env.requires)}
    if env.requirements_file:
        inputs["requirements_file"] = file_digest(Path(env.requirements_file), INPUT)
    if env.wheels:
        wheels = sorted(Path(env.wheels).glob("*"))
        inputs["wheels"] = {w.name: file_digest(w, INPUT) for w in wheels}
    return inputs


def install(out: Path, step: Step, ctx: Context) -> Path | None:
    """Install the test requirements into out/deps; the directory (None: none declared)."""
    env = ctx.environment
    if not wanted(env):
        return None
    argv = [ctx.python, "-m", "pip", "install", "--no-deps", "--no-cache-dir"]
    argv += ["--target", str(out / DEPS)]
    if env.wheels:
        argv += ["--no-index", "--find-links", env.wheels]
    if env.requirements_file:
        argv += ["-r", env.requirements_file]
    step([*argv, *env.requires], cwd=out, env=dict(PIP_ENV))
    return out / DEPS
