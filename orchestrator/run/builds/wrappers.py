"""The compiler wrappers of one build: a directory in the build's own output (writable in
the sandbox, never the user's tree) holding a stub per compiler found on PATH (cc, c++,
gcc, g++, clang, clang++, their versioned and target-prefixed names, nvcc), first on the
build's PATH, with CC and CXX (and torch's PYTORCH_NVCC, for the nvcc of the CUDA_HOME
torch would find without them) pointing at them. Each stub runs
`ccwrap.py` with csorch's interpreter: it runs the real compiler (recorded by absolute
path) with the checker's flags added to every compile and link, and appends one JSON line
per compile or link to the record file, which run/builds/units.py checks after the build.

A launcher (a compiler cache) goes in one place: `Wrappers.make(..., launcher=...)`, which
every stub's config carries before the real compiler."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import files
from orchestrator.backends.base import BuildFlags

SCRIPT = Path(__file__).with_name("ccwrap.py")
DIR = "compilers"  # under the build's output, removed before the entry is published
RECORD = "units.jsonl"  # under the build's output: kept in the entry as its evidence
CONFIG = "config.json"
# cc, gcc-12, x86_64-linux-gnu-g++, clang++-17 (not gcc-ar, c++filt)
COMPILER_RE = re.compile(r"^(?:[\w.]+-)*?(?:cc|c\+\+|gcc|g\+\+|clang|clang\+\+)(?:-[\d.]+)?$")
NVCC = "nvcc"
#: the compilers CC and CXX name when neither the user nor the build sets them
DEFAULTS = {"CC": "cc", "CXX": "c++"}


@dataclass(frozen=True)
class Wrappers:
    """One build's wrapper directory: where its stubs are and where they record."""

    directory: Path
    record: Path
    compilers: Mapping[str, str]  # stub name -> the real compiler's absolute path
    #: the launcher's own settings (a compiler cache's storage and statistics log)
    launcher_env: Mapping[str, str] = field(default_factory=dict)

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` (the build's compiler environment) with the wrappers first on PATH and
        CC/CXX (their first word) pointing at them."""
        out = {**env, **self.launcher_env}
        out["PATH"] = os.pathsep.join([str(self.directory), _path(env)])
        for var, default in DEFAULTS.items():
            words = shlex.split(env.get(var) or os.environ.get(var) or default)
            stub = self._stub_for(words[0]) if words else None
            if stub is not None:
                out[var] = shlex.join([stub, *words[1:]])
        home = _cuda_home(env, self.compilers)
        given = [env.get(v) or os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
        if home and not any(given):
            # torch finds CUDA_HOME from `which nvcc` when unset: not in the wrapper directory
            out["CUDA_HOME"] = home
        torch_nvcc = env.get("PYTORCH_NVCC") or os.environ.get("PYTORCH_NVCC")
        nvcc = self._stub_for(torch_nvcc or (os.path.join(home, "bin", NVCC) if home else ""))
        if nvcc is not None:
            out["PYTORCH_NVCC"] = nvcc  # torch's cpp_extension runs $CUDA_HOME/bin/nvcc else
        return out

    def _stub_for(self, compiler: str) -> str | None:
        """The stub that runs `compiler` (a name on PATH, or an absolute path)."""
        if not compiler:
            return None
        if os.sep not in compiler:
            return str(self.directory / compiler) if compiler in self.compilers else None
        real = os.path.realpath(compiler)
        for name, target in self.compilers.items():
            if target == compiler or os.path.realpath(target) == real:
                return str(self.directory / name)
        return None


def _path(env: Mapping[str, str]) -> str:
    return env.get("PATH") or os.environ.get("PATH") or os.defpath


def _cuda_home(env: Mapping[str, str], compilers: Mapping[str, str]) -> str:
    """The CUDA toolkit torch's cpp_extension would use without the wrappers ("": none)."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var) or os.environ.get(var):
            return env.get(var) or os.environ[var]
    real = compilers.get(NVCC)
    return os.path.dirname(os.path.dirname(real)) if real else ""


def find_compilers(path: str, extra: Sequence[str] = ()) -> dict[str, str]:
    """The compilers on `path` (the first of each name, by absolute path) and the `extra`
    ones named by absolute path (as CC or CXX may): stub name -> real compiler."""
    found: dict[str, str] = {}
    for d in path.split(os.pathsep):
        try:
            names = sorted(os.listdir(d or "."))
        except OSError:
            continue
        for name in names:
            full = os.path.abspath(os.path.join(d or ".", name))
            if name in found or not (COMPILER_RE.match(name) or name == NVCC):
                continue
            if os.path.isfile(full) and os.access(full, os.X_OK):
                found[name] = full
    for compiler in extra:
        if os.sep in compiler and os.access(compiler, os.X_OK):
            name = os.path.basename(compiler)
            if found.get(name, compiler) != compiler:
                name = f"{name}-{len(found)}"  # a second gcc: its own stub, not PATH's
            found.setdefault(name, os.path.abspath(compiler))
    return found


def _stub(python: str, name: str) -> str:
    # no shebang line of python's: one exec, the interpreter isolated and without site.
    # The config is found beside the stub ($0's directory), so every build's stub of one
    # compiler is the same bytes: a compile cache that hashes the host compiler nvcc is
    # given as -ccbin (a stub) hashes the same content in every build
    return (
        "#!/bin/sh\n"
        'case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac\n'
        f"exec {shlex.quote(python)} -I -S {shlex.quote(str(SCRIPT))} "
        f'"$here/{CONFIG}" {shlex.quote(name)} "$@"\n'
    )


def make(
    out: Path,
    flags: BuildFlags,
    env: Mapping[str, str],
    *,
    nvcc_host: bool,
    launcher: Sequence[str] = (),
    launcher_env: Mapping[str, str] | None = None,
    keep_debug: bool = False,
    unpreload: Sequence[str] = (),
    own: Sequence[str] = (),
) -> Wrappers:
    """Write the wrapper directory of a build whose output is `out`: a stub per compiler
    found on the build's PATH (`env`'s, else csorch's), adding `flags` (host flags to nvcc
    through -Xcompiler where `nvcc_host`), recording into out/units.jsonl. `launcher`
    (an absolute argv prefix, a compiler cache) goes before every real compiler, with
    `launcher_env` in the build's environment. `keep_debug` (under a sanitizer): a link's
    own switches that strip the output (`-s`, `-Wl,--strip-all`, ...) are left out, so
    that the binary keeps the debug information its per-unit proof and its reports' file:
    line read (run/builds/debuginfo.py). `unpreload`: libraries the build's environment
    preloads for its own loader (the ASan runtime) that the compilers run without. `own`:
    the build's directories (tree, output, temporary), where a program or file a driver
    switch names (-B, -wrapper, -specs) is the build's and refused under a sanitizer."""
    out = out.absolute()  # the stubs run in any directory
    directory = files.make_dirs(out / DIR, root=out)
    named = [env.get(v) or os.environ.get(v) for v in ("CC", "CXX", "PYTORCH_NVCC")]
    extra = [shlex.split(v)[0] for v in named if v and shlex.split(v)]
    compilers = find_compilers(_path(env), extra)
    home = _cuda_home(env, compilers)
    if home:  # the nvcc torch runs, by absolute path: a stub of its own where not PATH's
        compilers = find_compilers(_path(env), [*extra, os.path.join(home, "bin", NVCC)])
    record = out / RECORD
    config = directory / CONFIG
    files.atomic_write(
        config,
        json.dumps(
            {
                "record": str(record),
                "compilers": compilers,
                "cflags": list(flags.cflags),
                "ldflags": list(flags.ldflags),
                "nvcc_host": nvcc_host,
                "launcher": list(launcher),
                "keep_debug": keep_debug,
                "unpreload": list(unpreload),
                "own": list(own),
                # under a sanitizer the compiler runs only its own programs (ccwrap.foreign)
                "sanitizer": keep_debug,
            }
        ),
        root=out,
    )
    for name in compilers:
        files.atomic_write(directory / name, _stub(sys.executable, name), root=out)
        os.chmod(directory / name, 0o755)
    files.atomic_write(record, "", root=out)
    return Wrappers(directory, record, compilers, dict(launcher_env or {}))
