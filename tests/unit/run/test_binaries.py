"""binaries: the ELF reader on real binaries compiled here (gcc with and without ASan,
nvcc with device code), and builds that cannot serve their checker made inconclusive
through the real build: a Makefile that calls gcc by absolute path under ASan (one that
sets CFLAGS is instrumented by csorch's compiler wrappers), and a setup.py that
builds CUDA only when torch sees a GPU (item 13), under compute-sanitizer."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cache import Cache
from orchestrator.errors import BuildError
from orchestrator.model import BuildKind, BuildSpec, SourceKind, SourceSpec, Variant
from orchestrator.run import binaries, build
from orchestrator.run.sources import tree_digest

pytestmark = [
    pytest.mark.process,  # compilers and builds
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc"),
]

SUM = "int sum(int *v, int n) { int s = 0; for (int i = 0; i <= n; i++) s += v[i]; return s; }\n"


def cc(tmp_path: Path, name: str, *flags: str) -> Path:
    (tmp_path / "a.c").write_text(SUM)
    out = tmp_path / name
    subprocess.run(
        ["gcc", "-shared", "-fPIC", *flags, str(tmp_path / "a.c"), "-o", str(out)], check=True
    )
    return out


def test_the_reader_sees_asan_and_its_absence(tmp_path: Path) -> None:
    asan = binaries.read_elf(cc(tmp_path, "asan.so", "-fsanitize=address").read_bytes())
    plain = binaries.read_elf(cc(tmp_path, "plain.so").read_bytes())
    assert asan is not None and asan.asan and "__asan_init" in asan.symbols
    assert any(n.startswith("libasan") for n in asan.needed)
    assert plain is not None and not plain.asan and not plain.device_code
    assert "sum" in plain.symbols and ".dynsym" in plain.sections
    assert binaries.read_elf(b"PK\x03\x04 a wheel") is None
    truncated = (tmp_path / "asan.so").read_bytes()[:200]  # the section headers cut off
    assert binaries.read_elf(truncated) is None


@pytest.mark.slow  # nvcc: about 2 minutes on a loaded 2-core host
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_reader_sees_device_code(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(
        '__global__ void k(int *p) { p[0] = 1; }\nextern "C" void go(int *p) { k<<<1, 1>>>(p); }\n'
    )
    out = tmp_path / "dev.so"
    subprocess.run(
        ["nvcc", "-shared", "-Xcompiler", "-fPIC", str(tmp_path / "k.cu"), "-o", str(out)],
        check=True,
        timeout=600,
    )
    elf = binaries.read_elf(out.read_bytes())
    assert elf is not None and elf.device_code and ".nv_fatbin" in elf.sections
    assert binaries.problem(tmp_path, ["dev.so"], sanitizer="", device_code=True) == ""


def test_problem_names_the_binaries_and_the_fix(tmp_path: Path) -> None:
    cc(tmp_path, "plain.so")
    cc(tmp_path, "asan.so", "-fsanitize=address")
    (tmp_path / "x.whl").write_bytes(b"PK\x03\x04")
    asan = binaries.problem(tmp_path, ["plain.so", "x.whl"], sanitizer="address", device_code=False)
    assert asan.startswith("no binary of this ASan build is instrumented (plain.so: none ")
    assert "CFLAGS += ..." in asan
    assert (
        binaries.problem(tmp_path, ["plain.so", "asan.so"], sanitizer="address", device_code=False)
        == ""
    )
    gpu = binaries.problem(tmp_path, ["plain.so"], sanitizer="", device_code=True)
    assert "no .nv_fatbin section" in gpu and "FORCE_CUDA" in gpu
    assert binaries.problem(tmp_path, ["plain.so"], sanitizer="", device_code=False) == ""
    assert binaries.problem(tmp_path, ["x.whl"], sanitizer="address", device_code=True) == ""


def _tree(root: Path):
    from orchestrator.model import SourceTree

    return SourceTree("v", root, tree_digest(root), SourceSpec(SourceKind.PATH, str(root)))


def _context(tmp_path: Path, **kw) -> build.Context:
    return build.Context(
        cache=Cache(tmp_path / "cache"), logs=tmp_path / "logs", python=sys.executable, **kw
    )


def test_a_makefile_that_drops_the_asan_flags_is_instrumented_by_the_wrappers(
    tmp_path: Path,
) -> None:
    root = tmp_path / "prog"
    root.mkdir()
    (root / "a.c").write_text(SUM)
    # CFLAGS set, not added to: csorch's -fsanitize=address never reaches gcc through them,
    # but gcc is csorch's wrapper, which adds it to every compile and link
    (root / "Makefile").write_text(
        "CFLAGS = -O1\nlib.so: a.c\n\tgcc -shared -fPIC $(CFLAGS) a.c -o lib.so\n"
    )
    spec = BuildSpec(BuildKind.COMMAND, command=("make",), outputs=("lib.so",))
    ctx = _context(tmp_path, sanitizer="address", flags=_asan_flags())
    done = build.build(Variant("v", spec), _tree(root), ctx)
    assert done.ok and [a.path for a in done.artifacts] == ["tree/lib.so"]
    assert binaries.read_elf((done.directory / "tree" / "lib.so").read_bytes()).asan
    assert "gcc -shared -fPIC -O1 a.c" in done.log.read_text()
    # past the wrappers (gcc by absolute path) it is not a build, and says why
    (root / "lib.so").unlink()  # (a run builds in a fresh copy; this test in the tree)
    (root / "Makefile").write_text(
        "CFLAGS = -O2\nlib.so: a.c\n\t/usr/bin/gcc -shared -fPIC $(CFLAGS) a.c -o lib.so\n"
    )
    with pytest.raises(BuildError) as caught:
        build.build(Variant("v", spec), _tree(root), ctx)
    assert "tree/lib.so: linked by no recorded compiler" in caught.value.message
    assert caught.value.log_path == tmp_path / "logs" / "v.log"  # the build ran: its log
    assert len(list((tmp_path / "cache" / "entries").iterdir())) == 1  # only the first


def _asan_flags():
    from orchestrator.backends.base import BuildFlags

    return BuildFlags(cflags=("-fsanitize=address",), ldflags=("-fsanitize=address",))


SETUP = """\
from setuptools import Extension, setup

try:  # the pattern of many CUDA extensions: CUDA only where torch sees a GPU
    import torch
    with_cuda = torch.cuda.is_available()
except ImportError:
    with_cuda = False
sources = ["ext.c"] + (["kernel.cu"] if with_cuda else [])
setup(name="cpuonly", version="0.1", ext_modules=[Extension("cpuonly", sources)])
"""
EXT_C = """\
#include <Python.h>
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "cpuonly", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_cpuonly(void) { return PyModule_Create(&mod); }
"""


def test_a_cpu_only_extension_under_compute_sanitizer_says_how_to_force_cuda(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ext"
    root.mkdir()
    (root / "setup.py").write_text(SETUP)
    (root / "ext.c").write_text(EXT_C)
    variant = Variant("v", BuildSpec(BuildKind.WHEEL))
    with pytest.raises(BuildError) as caught:
        build.build(variant, _tree(root), _context(tmp_path, device_code=True))
    message = caught.value.message
    assert "no binary of this build has GPU device code (pkg/cpuonly" in message
    assert "torch.cuda.is_available()" in message and "FORCE_CUDA" in message
    # the same build for the ASan backend's plain check (no device code asked) is fine
    # pip -v: the build log shows how each file was compiled
    log = (tmp_path / "logs" / "v.log").read_text()
    assert any("ext.c" in line and " -c " in line for line in log.splitlines()), log[-3000:]
    assert build.build(variant, _tree(root), _context(tmp_path)).ok
