"""qext's build description, shared by ``ext/setup.py`` (the wheel) and JIT builds.

This file imports nothing from the ``qext`` package, so that it can be loaded by path
(``setup.py``, csorch's ``jit`` builder) before the extension exists. Run it as a script
to build the extension with ninja into a build directory of your choice::

    python ext/qext/build.py --build-dir build/qext --inplace        # dev install
    python ext/qext/build.py --build-dir B --package-dir P            # importable copy in P
    python ext/qext/build.py --build-dir B --sanitize address ...     # ASan build (CPU)

The module is loaded once after the build (torch's JIT loader does that); an ASan build
must therefore run under the ASan runtime (``LD_PRELOAD``), which csorch arranges.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

EXT_ROOT = Path(__file__).resolve().parents[1]
MODULE_NAME = "_C"
SANITIZERS = ("address",)


def cuda_buildable() -> tuple[bool, str]:
    """Whether this torch and toolchain can build the CUDA kernels, and why (not)."""
    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    if torch.version.cuda is None:
        return False, f"torch {torch.__version__} is a CPU build"
    if CUDA_HOME is None:
        return False, "no CUDA toolkit (nvcc) found"
    return True, f"torch {torch.__version__} with CUDA {torch.version.cuda}, nvcc in {CUDA_HOME}"


def sources(root: Path = EXT_ROOT, with_cuda: bool = False) -> list[str]:
    """Source files of the extension, relative paths resolved against ``root``."""
    csrc = Path(root) / "csrc"
    files = [csrc / "common" / "tensor.cpp"]
    files += sorted((csrc / "cpu").glob("*.cpp"))
    files += sorted((csrc / "torch").glob("*.cpp"))
    if with_cuda:
        files += sorted((csrc / "cuda").glob("*.cu"))
        files += sorted((csrc / "torch").glob("*.cu"))
    return [str(f) for f in files]


def flags(with_cuda: bool = False, sanitize: str | None = None) -> dict[str, list[str]]:
    """Compiler and linker flags: ``cflags``, ``cuda_cflags``, ``ldflags``."""
    if sanitize is not None and sanitize not in SANITIZERS:
        raise ValueError(f"unknown sanitizer {sanitize!r}; choose one of {SANITIZERS}")
    cflags = ["-O2", "-std=c++17"]
    # --fmad=false: CPU and CUDA must round identically (docs/qext-internals.md).
    # -lineinfo: compute-sanitizer reports file:line for kernel accesses.
    cuda_cflags = ["-O3", "-std=c++17", "--fmad=false", "-lineinfo"]
    ldflags: list[str] = []
    if with_cuda:
        cflags.append("-DQEXT_WITH_CUDA")
        cuda_cflags.append("-DQEXT_WITH_CUDA")
    if sanitize == "address":
        asan = ["-fsanitize=address", "-fsanitize-recover=address", "-fno-omit-frame-pointer",
                "-g", "-O1"]
        cflags = [f for f in cflags if not f.startswith("-O")] + asan
        ldflags += ["-fsanitize=address"]
    return {"cflags": cflags, "cuda_cflags": cuda_cflags, "ldflags": ldflags}


def jit_build(build_dir: Path, root: Path = EXT_ROOT, with_cuda: bool | None = None,
              sanitize: str | None = None, verbose: bool = False) -> Path:
    """Builds the extension with ninja in ``build_dir``; returns the built library."""
    from torch.utils import cpp_extension

    if with_cuda is None:
        with_cuda = cuda_buildable()[0]
    build_dir = Path(build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)  # torch's loader needs it to exist
    f = flags(with_cuda, sanitize)
    cpp_extension.load(
        name=MODULE_NAME,
        sources=sources(root, with_cuda),
        extra_cflags=f["cflags"],
        extra_cuda_cflags=f["cuda_cflags"],
        extra_ldflags=f["ldflags"],
        extra_include_paths=[str(Path(root) / "csrc")],
        build_directory=str(build_dir),
        with_cuda=with_cuda,
        verbose=verbose,
    )
    return build_dir / f"{MODULE_NAME}.so"


def assemble_package(library: Path, package_dir: Path, root: Path = EXT_ROOT) -> Path:
    """Copies the ``qext`` Python package and ``library`` into ``package_dir/qext``."""
    dest = Path(package_dir) / "qext"
    if Path(root).resolve() / "qext" != dest.resolve():
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(Path(root) / "qext", dest,
                        ignore=shutil.ignore_patterns("__pycache__", "_C*.so"))
    target = dest / f"{MODULE_NAME}.so"
    tmp = target.with_suffix(".so.tmp")
    shutil.copy(library, tmp)  # a fresh mtime: make compares it with the sources
    os.replace(tmp, target)  # atomic: a running import never sees half a library
    return target


def setuptools_extension(root: Path = EXT_ROOT):
    """The setuptools Extension for ``setup.py`` (CUDA where buildable)."""
    from torch.utils import cpp_extension

    with_cuda = cuda_buildable()[0]
    f = flags(with_cuda)
    kind = cpp_extension.CUDAExtension if with_cuda else cpp_extension.CppExtension
    rel = [os.path.relpath(s, root) for s in sources(root, with_cuda)]
    return kind(
        name=f"qext.{MODULE_NAME}",
        sources=rel,
        include_dirs=[str(Path(root) / "csrc")],
        extra_compile_args={"cxx": f["cflags"], "nvcc": f["cuda_cflags"]},
        extra_link_args=f["ldflags"],
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=EXT_ROOT, help="the ext/ tree to build")
    p.add_argument("--build-dir", type=Path, required=True)
    p.add_argument("--inplace", action="store_true", help="put the library into ROOT/qext")
    p.add_argument("--package-dir", type=Path, help="assemble an importable qext package here")
    p.add_argument("--sanitize", choices=SANITIZERS)
    p.add_argument("--cuda", choices=("auto", "yes", "no"), default="auto")
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args(argv)
    ok, why = cuda_buildable()
    if a.cuda == "yes" and not ok:
        print(f"qext build: CUDA requested but not buildable: {why}", file=sys.stderr)
        return 2
    with_cuda = ok if a.cuda == "auto" else a.cuda == "yes"
    print(f"qext build: {'CUDA + CPU' if with_cuda else 'CPU only'} ({why})", flush=True)
    # CSORCH_VERBOSE=1 (csorch sets it): the compiler command lines go into the build log
    verbose = a.verbose or os.environ.get("CSORCH_VERBOSE") == "1"
    lib = jit_build(a.build_dir, a.root, with_cuda, a.sanitize, verbose)
    if a.inplace:
        print(f"qext build: {assemble_package(lib, a.root, a.root)}")
    if a.package_dir:
        print(f"qext build: {assemble_package(lib, a.package_dir, a.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
