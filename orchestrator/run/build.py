"""Builds: a variant's SourceTree in, a Build out, through the content-addressed cache.

Three kinds (the contracts are in config.py's docstring):
- `jit`: the subject's build description (a Python script in the tree) with
  `--root TREE --build-dir B --package-dir P [--sanitize address]`; P must end up holding
  an importable package. Loaders such as torch's JIT import the result once, so an ASan
  build runs with the ASan runtime preloaded.
- `wheel`: `pip wheel TREE --no-deps --no-build-isolation`, then `pip install --no-deps
  --no-index --target P` of that wheel: the "installed" control.
- `command`: the argv in the tree (e.g. `make`); the built tree becomes the entry.
Sanitizer and user flags reach compilers through CFLAGS/CXXFLAGS/LDFLAGS (and
NVCC_APPEND_FLAGS, which nvcc itself reads); CSORCH_SANITIZE names the sanitizer.

A hit returns the published entry without running anything. A miss builds into a scratch
directory under the entry's lock and publishes it by rename. Failures raise BuildError
with the log tail; the caller records the variant as not built and carries on.
"""

from __future__ import annotations

import glob
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import proc
from orchestrator.backends.asan import backend as asan
from orchestrator.backends.base import BuildFlags
from orchestrator.cache import Cache, key
from orchestrator.errors import BuildError
from orchestrator.files import file_digest
from orchestrator.model import Artifact, Build, BuildKind, SourceTree, Variant
from orchestrator.run import binaries, buildhelp

LOG = "build.log"
TAIL_LINES = 30
DEFAULT_TIMEOUT = 3600.0
#: ambient variables that reach the compilers, so they belong in the key
AMBIENT = ("CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "NVCC_APPEND_FLAGS")
_PIP_ENV = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


@dataclass(frozen=True)
class Context:
    """What every build of one run shares."""

    cache: Cache
    logs: Path  # the bundle's logs/build directory
    python: str
    toolchain: dict[str, object] = field(default_factory=dict)
    sanitizer: str = ""  # "address" under the ASan backend
    flags: BuildFlags = BuildFlags()
    asan_runtime: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    cancel: threading.Event | None = None
    device_code: bool = False  # compute-sanitizer: an extension's build must have GPU code


def cache_key(variant: Variant, tree: SourceTree, ctx: Context) -> str:
    """The entry a variant's build lives in: equal inputs, equal key, one build."""
    return key(
        {
            "tree": tree.digest,
            "patches": [p.sha256 for p in tree.patches],
            "build": variant.build.to_dict(),
            "sanitizer": ctx.sanitizer,
            "flags": ctx.flags.to_dict(),
            "toolchain": ctx.toolchain,
            "ambient": {k: os.environ.get(k, "") for k in AMBIENT},
        }
    )


def _joined(*parts: object) -> str:
    return " ".join(str(p) for group in parts for p in (group or ()) if p)


def _env(variant: Variant, ctx: Context) -> dict[str, str]:
    spec = variant.build
    env = {
        "CFLAGS": _joined([os.environ.get("CFLAGS")], ctx.flags.cflags, spec.flags),
        "CXXFLAGS": _joined([os.environ.get("CXXFLAGS")], ctx.flags.cflags, spec.flags),
        "LDFLAGS": _joined([os.environ.get("LDFLAGS")], ctx.flags.ldflags),
        "NVCC_APPEND_FLAGS": _joined([os.environ.get("NVCC_APPEND_FLAGS")], ctx.flags.cuda_cflags),
        "CSORCH_SANITIZE": ctx.sanitizer,
        # a description's loader prints its compiler command lines (torch: verbose=True)
        "CSORCH_VERBOSE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env = {k: v for k, v in env.items() if v or k == "CSORCH_SANITIZE"}
    return {**env, **dict(spec.env)}


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return ""
    return "\n".join(lines[-TAIL_LINES:])


class _Step:
    """Runs the steps of one build into one log; a failing step raises BuildError."""

    def __init__(self, variant: str, log: Path, ctx: Context) -> None:
        self.variant, self.log, self.ctx = variant, log, ctx
        self.argvs: list[tuple[str, ...]] = []
        self.cpu = 0.0

    def __call__(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> None:
        result = proc.run(
            argv,
            log_path=self.log,
            env=env,
            cwd=cwd,
            timeout=self.ctx.timeout,
            append=bool(self.argvs),
            cancel=self.ctx.cancel,
        )
        self.argvs.append(result.argv)
        self.cpu += result.cpu
        if result.timed_out or result.returncode != 0:
            raise BuildError(
                self.variant,
                result.argv,
                None if result.timed_out else result.returncode,
                self.log,
                _tail(self.log),
            )

    def fail(self, problem: str) -> BuildError:
        return BuildError(self.variant, (), 1, self.log, _tail(self.log), problem=problem)


def description(tree: Path, declared: str) -> Path | None:
    """The jit build description: the declared one, else the tree's only build.py."""
    if declared:
        path = tree / declared
        # setup.py does not take --root/--package-dir: that tree wants `build: wheel`
        return path if path.is_file() and not buildhelp.packaging(declared) else None
    found = (
        [tree / "build.py"] if (tree / "build.py").is_file() else sorted(tree.glob("*/build.py"))
    )
    return found[0] if len(found) == 1 else None


def _jit(variant: Variant, tree: Path, out: Path, step: _Step, ctx: Context) -> None:
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
    env = _env(variant, ctx)
    if ctx.sanitizer:
        argv += ["--sanitize", ctx.sanitizer]
    if ctx.sanitizer == "address" and ctx.asan_runtime is not None:
        # the loader imports what it built: an instrumented library needs the runtime first
        env |= {"LD_PRELOAD": str(ctx.asan_runtime), "ASAN_OPTIONS": asan.merge_options()}
    step(argv, cwd=tree, env=env)
    shutil.rmtree(out / "objects", ignore_errors=True)  # the package holds the library
    if not (out / "pkg").is_dir() or not any((out / "pkg").iterdir()):
        raise step.fail(f"{script.name} left no package in --package-dir")


def _wheel(variant: Variant, tree: Path, out: Path, step: _Step, ctx: Context) -> None:
    env = _env(variant, ctx) | _PIP_ENV
    step(
        [
            ctx.python,
            "-m",
            "pip",
            "wheel",
            "-v",  # the build backend's output: the compiler command lines, in the log
            str(tree),
            "--no-deps",
            "--no-build-isolation",
            "--no-cache-dir",
            "-w",
            str(out / "wheel"),
        ],
        cwd=tree,
        env=env,
    )
    wheels = sorted((out / "wheel").glob("*.whl"))
    if len(wheels) != 1:
        raise step.fail(f"pip wheel produced {len(wheels)} wheels, expected 1")
    step(
        [
            ctx.python,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--no-cache-dir",
            "--target",
            str(out / "pkg"),
            str(wheels[0]),
        ],
        cwd=tree,
        env=env,
    )


def _stamps(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            st = path.lstat()
            out[path.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def _command(variant: Variant, tree: Path, out: Path, step: _Step, ctx: Context) -> list[str]:
    before = _stamps(tree)
    step(list(variant.build.command), cwd=tree, env=_env(variant, ctx))
    shutil.copytree(tree, out / "tree", symlinks=True)
    if variant.build.outputs:
        produced = []
        for pattern in variant.build.outputs:
            matches = sorted(glob.glob(pattern, root_dir=out / "tree", recursive=True))
            if not matches:
                raise step.fail(f"declared output {pattern!r} was not produced")
            produced += matches
        return [f"tree/{m}" for m in produced]
    after = _stamps(out / "tree")
    return [
        f"tree/{rel}"
        for rel, stamp in sorted(_stamps(tree).items())
        if rel in after and before.get(rel) != stamp
    ]


def _artifacts(entry: Path, relpaths: list[str]) -> tuple[Artifact, ...]:
    out = []
    for rel in dict.fromkeys(relpaths):
        path = entry / rel
        if path.is_file() and not path.is_symlink():
            out.append(Artifact(rel, file_digest(path), path.stat().st_size))
    return tuple(out)


def _binaries(entry: Path) -> list[str]:
    found = [*entry.glob("wheel/*.whl"), *entry.glob("pkg/**/*.so"), *entry.glob("pkg/**/*.so.*")]
    return sorted(p.relative_to(entry).as_posix() for p in found)


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


def _from_meta(meta: dict, entry: Path, k: str, cached: bool, variant: str) -> Build:
    build = Build.from_dict(meta["build"])
    return Build(
        # an entry is shared by every variant (of any experiment) with the same inputs:
        # the record is this variant's, whoever built it first
        variant=variant,
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
        import_path=entry / "pkg" if (entry / "pkg").is_dir() else None,
        workdir=entry / "tree" if (entry / "tree").is_dir() else None,
        source_digest=build.source_digest,
        steps=build.steps,
    )


def _record(
    variant: Variant,
    k: str,
    out: Path,
    produced: list[str],
    duration: float,
    tree: SourceTree,
    step: _Step,
    ctx: Context,
) -> Build:
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
    )


def build(variant: Variant, tree: SourceTree, ctx: Context) -> Build:
    """The variant's build: from the cache, or built and published. Raises BuildError."""
    k = cache_key(variant, tree, ctx)
    log_copy = ctx.logs / f"{variant.name}.log"
    log_copy.parent.mkdir(parents=True, exist_ok=True)
    with ctx.cache.lock(k):
        meta = ctx.cache.lookup(k)
        if meta is not None and not _sound(meta, ctx.cache.entry(k)):
            meta = None  # publish() replaces the damaged entry
        if meta is not None:
            ctx.cache.hold(k)
            shutil.copyfile(ctx.cache.entry(k) / LOG, log_copy)
            return _from_meta(meta, ctx.cache.entry(k), k, cached=True, variant=variant.name)
        out = ctx.cache.scratch(k)
        step = _Step(variant.name, out / LOG, ctx)
        start = time.monotonic()
        published = False
        try:
            kind = variant.build.kind
            if kind is BuildKind.JIT:
                _jit(variant, tree.root, out, step, ctx)
            elif kind is BuildKind.WHEEL:
                _wheel(variant, tree.root, out, step, ctx)
            produced = (
                _command(variant, tree.root, out, step, ctx) if kind is BuildKind.COMMAND else []
            )
            record = _record(variant, k, out, produced, time.monotonic() - start, tree, step, ctx)
            binaries.require(out, record, variant, ctx.sanitizer, ctx.device_code, step.fail)
            entry = ctx.cache.publish(k, out, {"build": record.to_dict()})
            ctx.cache.hold(k)
            published = True
        except BuildError as exc:
            ran = (out / LOG).exists()  # a check before any step leaves no log to cite
            if ran:
                shutil.copyfile(out / LOG, log_copy)
            # the scratch log goes with the scratch directory: point at the bundle's copy
            raise BuildError(
                exc.variant,
                exc.command,
                exc.returncode,
                log_copy if ran else None,
                exc.log_tail,
                problem=exc.problem,
            ) from None
        finally:
            if not published:
                shutil.rmtree(out, ignore_errors=True)
    shutil.copyfile(entry / LOG, log_copy)
    return _from_meta({"build": record.to_dict()}, entry, k, cached=False, variant=variant.name)
