"""Builds: a variant's SourceTree in, a Build out, through the content-addressed cache.

The kinds live in run/builds/, one module each (their contracts: docs/your-extension.md):
`jit` (csorch's build.py contract), `wheel` and `pip` (pip over the tree's setup.py or
pyproject.toml, into a private directory), `prebuilt` (a release binary as users install
it, its identity recorded) and `command` (an argv in the tree, with an optional
`import_path`). After the build, the project's test requirements go into the same entry
(run/environment.py). Sanitizer and user flags reach compilers through
CFLAGS/CXXFLAGS/LDFLAGS (and NVCC_APPEND_FLAGS, which nvcc itself reads); CSORCH_SANITIZE
names the sanitizer.

A hit returns the published entry without running anything. A miss builds into a scratch
directory under the entry's lock and publishes it by rename. Failures raise BuildError
with the log tail; the caller records the variant as not built and carries on.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from orchestrator import files, sandbox
from orchestrator.backends.base import BuildFlags
from orchestrator.cache import key
from orchestrator.carry import optouts, sections
from orchestrator.errors import BuildError
from orchestrator.files import file_digest
from orchestrator.model import Artifact, Build, BuildKind, Distribution, SourceTree, Variant
from orchestrator.run import binaries, environment, sources
from orchestrator.run.builds import (
    command,
    compilecache,
    debuginfo,
    jit,
    pip,
    prebuilt,
    schedule,
    units,
    wrappers,
)
from orchestrator.run.builds import step as steps
from orchestrator.run.builds.step import Step

LOG = "build.log"
#: ambient variables that reach the compilers, so they belong in the key
AMBIENT = ("CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "NVCC_APPEND_FLAGS")
Context = steps.Context  # the run's build context (run/builds/step.py)
UNITS_VERSION = 1  # of the compiler wrappers and their per-unit check
description = jit.description  # the jit build description of a tree


def cache_key(variant: Variant, tree: SourceTree, ctx: Context) -> str:
    """The entry a variant's build lives in: equal inputs, equal key, one build."""
    spec = variant.build
    return key(
        {
            "tree": tree.digest,
            "patches": [p.sha256 for p in tree.patches],
            "build": spec.to_dict(),
            "sanitizer": ctx.sanitizer,
            "flags": _flags(ctx).to_dict(),
            "toolchain": ctx.toolchain,
            "ambient": {k: os.environ.get(k, "") for k in AMBIENT},
            # new inputs only where used: the keys of existing entries stay as they were
            **(
                {"python": ctx.python, "torch": environment.torch_of(ctx.python)}
                if ctx.environment.python
                else {}
            ),
            **(
                {"release": prebuilt.key_inputs(variant)}
                if spec.kind is BuildKind.PREBUILT
                # built through the compiler wrappers, each unit checked: an entry from
                # before them was not, and is not reused
                else {"wrappers": UNITS_VERSION}
            ),
            **(
                {"test_requires": environment.key_inputs(ctx.environment)}
                if environment.wanted(ctx.environment)
                else {}
            ),
        }
    )


def _artifacts(entry: Path, relpaths: list[str]) -> tuple[Artifact, ...]:
    out = []
    for rel in dict.fromkeys(relpaths):
        path = entry / rel
        if path.is_file() and not path.is_symlink():
            size = path.stat().st_size
            out.append(Artifact(rel, file_digest(path), size, sections.executes_file(path)))
    return tuple(out)


def _binaries(entry: Path) -> list[str]:
    patterns = ("wheel/*.whl", "pkg/**/*.so", "pkg/**/*.so.*")
    patterns += (f"{environment.DEPS}/**/*.so", f"{environment.DEPS}/**/*.so.*")
    found = [rel for p in patterns for rel in files.glob(entry, p, include_hidden=True)]
    return sorted(set(found))


def _sound(meta: dict, entry: Path) -> bool:
    """Whether a published entry still holds what its metadata records: readable
    metadata, its log, and every binary with its sha256. A damaged entry (a disk error,
    a hand edit) is rebuilt rather than run and recorded under the old digests."""
    try:
        build = Build.from_dict(meta["build"])
    except (KeyError, TypeError, ValueError):
        return False
    if not (entry / LOG).is_file():
        return False
    try:
        return all(file_digest(entry / a.path) == a.sha256 for a in build.artifacts)
    except OSError:
        return False


def _import_path(variant: Variant, entry: Path) -> Path | None:
    if variant.build.kind is BuildKind.COMMAND:
        return command.import_path(variant, entry)
    return entry / "pkg" if (entry / "pkg").is_dir() else None


def _from_meta(meta: dict, entry: Path, k: str, cached: bool, variant: Variant) -> Build:
    build = Build.from_dict(meta["build"])
    return Build(
        # an entry is shared by every variant (of any experiment) with the same inputs:
        # the record is this variant's, whoever built it first
        variant=variant.name,
        kind=build.kind,
        ok=True,
        cache_key=k,
        directory=entry,
        artifacts=build.artifacts,
        cached=cached,
        duration=build.duration,
        cpu=build.cpu,
        log=entry / LOG,
        sanitizer=build.sanitizer,
        import_path=_import_path(variant, entry),
        workdir=entry / "tree" if (entry / "tree").is_dir() else None,
        source_digest=build.source_digest,
        steps=build.steps,
        requirements_path=entry / environment.DEPS if (entry / environment.DEPS).is_dir() else None,
        python=build.python,
        distribution=build.distribution,
        units=build.units,
        compile_hits=build.compile_hits,
        compile_misses=build.compile_misses,
        compile_remote_hits=build.compile_remote_hits,
        compile_cpu=build.compile_cpu,
    )


def _record(
    variant: Variant,
    k: str,
    out: Path,
    produced: list[str],
    duration: float,
    tree: SourceTree,
    step: Step,
    ctx: Context,
    release: Distribution | None,
    compiled: tuple[str, ...],
    compile_cpu: float = 0.0,
) -> Build:
    used = compilecache.read_stats(out)
    return Build(
        variant=variant.name,
        kind=variant.build.kind,
        ok=True,
        cache_key=k,
        artifacts=_artifacts(out, [*produced, *_binaries(out)]),
        duration=duration,
        cpu=step.cpu,
        sanitizer=ctx.sanitizer,
        source_digest=tree.digest,
        steps=tuple(step.argvs),
        python=ctx.python if ctx.environment.python else "",
        distribution=release,
        # sorted: a parallel build (ninja, make -j) compiles in no fixed order
        units=tuple(sorted(set(compiled))),
        compile_hits=used.hits,
        compile_misses=used.misses,
        compile_remote_hits=used.remote_hits,
        compile_cpu=compile_cpu,
    )


def _units(
    out: Path, tree: Path, since: int, produced: list[str], step: Step, ctx: Context
) -> tuple[tuple[str, ...], float]:
    """The units the wrappers recorded (sources, relative to the tree where in it) and the
    CPU seconds of every compiler call (compiles and links, ccache's included); under a
    sanitizer, a BuildError naming each unit or object that does not carry it."""
    if step.wrappers is None:
        return (), 0.0
    files.remove_tree(step.wrappers.directory, ignore_errors=True)  # the entry keeps the record
    try:
        records = units.read(step.wrappers.record, step.aliases)
    except units.RecordError as exc:
        raise step.fail(f"the compiler wrappers' record is damaged: {exc}") from None
    if ctx.sanitizer:
        built = [
            out / p for p in [*produced, *_binaries(out)] if not p.startswith(environment.DEPS)
        ]
        area = units.areas(tree, out, since)
        found = units.problems(records, ctx.sanitizer, area, built)
        system = debuginfo.archived(units.system_archives(records, area))
        found += debuginfo.checked(built, ctx.sanitizer, area.show, system)
        if found:
            more = (
                f" (+{len(found) - units.MAX_PROBLEMS} more)"
                if len(found) > units.MAX_PROBLEMS
                else ""
            )
            raise step.fail(
                f"{len(found)} unit(s) of this {ctx.sanitizer} build are not instrumented "
                f"by csorch's compiler wrappers: "
                + "; ".join(found[: units.MAX_PROBLEMS])
                + more
                + ". Call the compiler by name (cc, c++, gcc, $(CC), $(CXX)), never by "
                "absolute path, so that csorch's wrapper adds the sanitizer to every unit; "
                "build every object from source in the build; do not take the sanitizer "
                "away (an ignore list, asan-* parameters)"
            )
    names = []
    for c in records:
        for s in c.sources if c.compiles else ():
            rel = os.path.relpath(s, tree) if Path(s).is_relative_to(tree) else s
            if not rel.startswith(("/tmp/", "/dev/shm/")):  # a compiler's own temporaries
                names.append(rel)
    # a nested call's CPU (nvcc's host compiler) is in the call that ran it already
    return tuple(dict.fromkeys(names)), round(sum(c.cpu for c in records if not c.nested), 3)


def _make(
    variant: Variant, tree: Path, out: Path, step: Step, ctx: Context
) -> tuple[list[str], Distribution | None]:
    """Run the variant's build kind into `out`: (files it produced, a release's identity)."""
    kind = variant.build.kind
    if kind is BuildKind.JIT:
        jit.build(variant, tree, out, step, ctx)
    elif kind is BuildKind.WHEEL:
        pip.wheel(variant, tree, out, step, ctx)
    elif kind is BuildKind.PIP:
        pip.install(variant, tree, out, step, ctx)
    elif kind is BuildKind.PREBUILT:
        return [], prebuilt.build(variant, tree, out, step, ctx)
    else:
        return command.build(variant, tree, out, step, ctx), None
    return [], None


def _turn(variant: Variant, tree: SourceTree, ctx: Context) -> AbstractContextManager[object]:
    """Where builds can share units through the compile cache, this one's turn in its group
    (one source, one build description, one sanitizer); else no wait."""
    if ctx.compile_cache is None or schedule.together():
        return nullcontext()
    source = tree.source
    group = (
        source.kind,
        source.location,
        source.subdir,
        repr(variant.build.to_dict()),
        ctx.sanitizer,
    )
    return schedule.turn(group, ctx.cancel)


def _own_directories(tree: Path, out: Path) -> tuple[str, ...]:
    """What a build may write and call its own: its tree and output (as csorch and its
    sandbox show them) and the temporary directories."""
    return tuple(
        dict.fromkeys(
            [str(tree), str(out), sandbox.BUILD_TREE, sandbox.BUILD_OUT, "/tmp", "/var/tmp",
             "/dev/shm", tempfile.gettempdir()]
        )
    )  # fmt: skip


def _flags(ctx: Context) -> BuildFlags:
    """The checker's flags, and under a sanitizer what its per-unit proof reads back from
    the linked binary (run/builds/debuginfo.py: each unit's switches in its DWARF)."""
    if not ctx.sanitizer:
        return ctx.flags
    extra = tuple(f for f in debuginfo.FLAGS if f not in ctx.flags.cflags)
    return dataclasses.replace(ctx.flags, cflags=(*ctx.flags.cflags, *extra))


def build(variant: Variant, tree: SourceTree, ctx: Context) -> Build:
    """The variant's build: from the cache, or built and published, with the checker
    opt-outs of its tree read again (carry/optouts.py: never taken from the cache entry),
    before the build could write into the tree. Raises BuildError."""
    found = optouts.scan(tree.root, sources.walk_source(tree.root))
    made = _build(variant, tree, ctx)
    return dataclasses.replace(made, opt_outs=found, opt_out_rules=optouts.RULES)


def _build(variant: Variant, tree: SourceTree, ctx: Context) -> Build:
    k = cache_key(variant, tree, ctx)
    log_copy = ctx.logs / f"{variant.name}.log"
    bundle = ctx.logs.parent.parent  # logs/build's: nothing below it may be a link
    files.make_dirs(log_copy.parent, root=bundle)
    with ctx.cache.lock(k):
        meta = ctx.cache.lookup(k)
        if meta is not None and not _sound(meta, ctx.cache.entry(k)):
            meta = None  # publish() replaces the damaged entry
        if meta is not None:
            ctx.cache.hold(k)
            files.copy_file(ctx.cache.entry(k) / LOG, log_copy, root=bundle)
            return _from_meta(meta, ctx.cache.entry(k), k, cached=True, variant=variant)
        # with a compile cache, a group's first build runs first: the others compile
        # only what differs from it (run/builds/schedule.py)
        with _turn(variant, tree, ctx):
            out = ctx.cache.scratch(k)
            step = Step(variant.name, out / LOG, ctx)
            step.tree = tree.root
            start = time.monotonic()
            published = False
            try:
                since = time.time_ns()
                if variant.build.kind is not BuildKind.PREBUILT:
                    cc = ctx.compile_cache
                    step.wrappers = wrappers.make(
                        out,
                        _flags(ctx),
                        dict(variant.build.env),
                        nvcc_host=bool(ctx.sanitizer),
                        launcher=cc.launcher() if cc is not None else (),
                        launcher_env=cc.env(tree.root, out) if cc is not None else None,
                        keep_debug=bool(ctx.sanitizer),
                        # a jit build imports what it built under the ASan runtime
                        # (run/builds/jit.py): its compilers need not run under it
                        unpreload=(str(ctx.asan_runtime),) if ctx.asan_runtime else (),
                        own=_own_directories(tree.root, out),
                    )
                produced, release = _make(variant, tree.root, out, step, ctx)
                environment.install(out, step, ctx)
                compiled, compile_cpu = _units(out, tree.root, since, produced, step, ctx)
                record = _record(
                    variant,
                    k,
                    out,
                    produced,
                    time.monotonic() - start,
                    tree,
                    step,
                    ctx,
                    release,
                    compiled,
                    compile_cpu,
                )
                binaries.require(out, record, variant, ctx.sanitizer, ctx.device_code, step.fail)
                entry = ctx.cache.publish(k, out, {"build": record.to_dict()})
                ctx.cache.hold(k)
                published = True
            except BuildError as exc:
                if (out / LOG).exists():
                    files.copy_file(out / LOG, log_copy, root=bundle)
                # the scratch log goes with the scratch directory: point at the bundle's copy
                raise BuildError(
                    exc.variant,
                    exc.command,
                    exc.returncode,
                    log_copy if log_copy.exists() else None,
                    exc.log_tail,
                    problem=exc.problem,
                ) from None
            finally:
                if not published:
                    files.remove_tree(out, ignore_errors=True)
    files.copy_file(entry / LOG, log_copy, root=bundle)
    return _from_meta({"build": record.to_dict()}, entry, k, cached=False, variant=variant)
