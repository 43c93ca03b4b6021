"""What every build and every attempt of one run shares, made from the run's records.

`make` is pure: the experiment, the options, the host's facts and the backend in; the
build context and the execution context out. Whatever needs I/O (the scratch directory,
the backend's per-run set-up, the cache) is made by the caller and passed in.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from orchestrator.backends import Backend
from orchestrator.cache import Cache
from orchestrator.executors import execute
from orchestrator.host import Host
from orchestrator.model import Experiment
from orchestrator.run import build
from orchestrator.run.builds import compilecache, remote
from orchestrator.run.options import Options, child_threads


@dataclass(frozen=True)
class Contexts:
    build: build.Context
    execute: execute.Context


def _remote_setting(experiment: Experiment, options: Options) -> str:
    """The config's `slurm: compile_cache`, or the Slurm executor's (its --slurm flags
    applied)."""
    settings = getattr(options.executor, "settings", None)
    return getattr(settings, "compile_cache", "") or experiment.slurm.compile_cache


def make(
    experiment: Experiment,
    options: Options,
    host: Host,
    backend: Backend,
    *,
    bundle: Path,
    scratch: Path,
    cache: Cache,
    python: str,
    cancel: threading.Event,
) -> Contexts:
    """The contexts of one run: builds log under `bundle`/logs/build into `cache`,
    instrumented as `backend` asks; attempts log under `bundle`/logs, start in `scratch`,
    run by `python`, and stop when `cancel` is set."""
    built = build.Context(
        cache=cache,
        logs=bundle / "logs" / "build",
        python=python,
        environment=experiment.environment,
        toolchain=host.toolchain(),
        sanitizer=backend.build_sanitizer,
        flags=backend.build_flags(),
        asan_runtime=Path(host.asan_runtime) if host.asan_runtime else None,
        cancel=cancel,
        device_code=backend.device_code,
        compile_cache=compilecache.make(
            cache.root,
            enabled=options.compile_cache,
            remote=remote.configured(_remote_setting(experiment, options)),
        ),
    )
    executed = execute.Context(
        experiment=experiment,
        backend=backend,
        python=python,
        root=bundle,
        scratch=scratch,
        cancel=cancel,
        # a Slurm task has CPUs of its own (its --cpus-per-task): no share to bound
        threads=0 if options.executor else child_threads(options.jobs),
    )
    return Contexts(built, executed)


def backend_record(options: Options, backend: Backend, host: Host, prepared: dict) -> dict:
    """The bundle's `backend` block: its name and why, the tool's identity, and what the
    backend set up for the run (`Backend.prepare`)."""
    return {"name": options.backend, "reason": options.reason, **backend.identity(host), **prepared}
