"""builds/units and wrappers: real builds with gcc through csorch's compiler wrappers. Under
ASan a Makefile that sets its own CFLAGS for the one defective file is instrumented there
anyway (ASan finds the bug in it); a unit compiled by /usr/bin/gcc, by absolute path, fails
the build naming its object, its program or its archive member; switching reads off (an
asan-* parameter) fails naming the unit; jit and wheel builds go through the wrappers too.
Without a sanitizer nothing is required, and the units are still recorded. All of it
sandboxed (CSORCH_SANDBOX=1)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.backends.asan.backend import COMPILE_FLAGS, LINK_FLAGS
from orchestrator.backends.base import BuildFlags
from orchestrator.cache import Cache
from orchestrator.errors import BuildError
from orchestrator.model import BuildKind, BuildSpec, SourceKind, SourceSpec, SourceTree, Variant
from orchestrator.run import binaries, build
from orchestrator.run.builds import debuginfo
from orchestrator.run.sources import tree_digest

pytestmark = [
    pytest.mark.process,  # compilers and builds
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc"),
]

MAIN = "int sum(int n);\nint main(void) { return sum(4) == 99; }\n"
# reads one past the end of its buffer: the defect a fix's Makefile hides from ASan
BAD = (
    "#include <stdlib.h>\n"
    "int sum(int n) { int *a = calloc(n, sizeof *a); int s = 0;\n"
    "  for (int i = 0; i <= n; i++) s += a[i];\n"
    "  free(a); return s; }\n"
)
LINK = "prog: main.o bad.o\n\t$(CC) -o prog main.o bad.o $(LDFLAGS)\n"


@pytest.fixture(autouse=True)
def sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CSORCH_SANDBOX", "1")


def _subject(tmp_path: Path, makefile: str, **files: str) -> SourceTree:
    root = tmp_path / "prog"
    root.mkdir(parents=True)
    (root / "main.c").write_text(MAIN)
    (root / "bad.c").write_text(BAD)
    for name, text in files.items():
        (root / name).write_text(text)
    (root / "Makefile").write_text(makefile)
    return SourceTree("v", root, tree_digest(root), SourceSpec(SourceKind.PATH, str(root)))


def _context(tmp_path: Path, asan: bool = True) -> build.Context:
    flags = BuildFlags(cflags=COMPILE_FLAGS, ldflags=LINK_FLAGS)
    return build.Context(
        cache=Cache(tmp_path / "cache"),
        logs=tmp_path / "logs",
        python=sys.executable,
        sanitizer="address" if asan else "",
        flags=flags if asan else BuildFlags(cflags=("-fno-omit-frame-pointer",)),
    )


def _make(**kw: object) -> Variant:
    return Variant("v", BuildSpec(BuildKind.COMMAND, command=("make",), outputs=("prog",), **kw))


def _fails(tmp_path: Path, makefile: str, **files: str) -> str:
    with pytest.raises(BuildError) as caught:
        build.build(_make(), _subject(tmp_path, makefile, **files), _context(tmp_path))
    assert not list((tmp_path / "cache" / "entries").iterdir())  # never published
    return caught.value.problem


def test_a_target_specific_cflags_override_is_instrumented_anyway(tmp_path: Path) -> None:
    done = build.build(
        _make(), _subject(tmp_path, LINK + "bad.o: CFLAGS = -O2\n"), _context(tmp_path)
    )
    assert done.ok and done.units == ("bad.c", "main.c")
    log = done.log.read_text()
    assert "-O2   -c -o bad.o bad.c" in log  # the Makefile's own flags, and no more...
    compiled = [
        json.loads(line) for line in (done.directory / "units.jsonl").read_text().splitlines()
    ]
    bad = next(c for c in compiled if c["sources"] and c["sources"][0].endswith("bad.c"))
    added = [*COMPILE_FLAGS, *(f for f in debuginfo.FLAGS if f not in COMPILE_FLAGS)]
    assert bad["argv"][-len(added) :] == added  # ...but the wrapper's
    assert not (done.directory / "compilers").exists()  # the stubs are not published
    # the real program, run: ASan reports the read in the unit the Makefile overrode
    run = subprocess.run(
        [str(done.workdir / "prog")], capture_output=True, text=True, timeout=60, check=False
    )
    assert (
        "heap-buffer-overflow" in run.stderr and "in sum" in run.stderr and "bad.c:3" in run.stderr
    )
    same = _subject(tmp_path / "again", LINK + "bad.o: CFLAGS = -O2\n")
    again = build.build(_make(), same, _context(tmp_path))
    assert again.cached and again.units == ("bad.c", "main.c")  # the entry keeps its units


def test_an_object_compiled_by_absolute_path_fails_the_build_by_name(tmp_path: Path) -> None:
    why = _fails(tmp_path, LINK + "bad.o: bad.c\n\t/usr/bin/gcc -O2 -c bad.c -o bad.o\n")
    assert "unit(s) of this address build are not instrumented" in why
    assert "bad.o (linked into prog) was made by no recorded compile" in why
    assert "never by absolute path" in why


# what a build that knows csorch could append to the wrappers' record (it runs as the same
# user): a compile of bad.c with the sanitizer, whose output is the uninstrumented bad.o
FORGED = (
    "bad.o: bad.c\n\t/usr/bin/gcc -O2 {flags} -c bad.c -o bad.o\n"
    "\tprintf '{{\"tool\": \"gcc\", \"mode\": \"compile\", \"argv\": [\"gcc\", "
    "\"-fsanitize=address\", \"-g\", \"-c\", \"bad.c\"], \"cwd\": \"%s\", \"sources\": "
    "[\"%s/bad.c\"], \"outputs\": [{{\"path\": \"%s/bad.o\", \"sha256\": \"%s\"}}], "
    "\"inputs\": []}}\\n' \"$$PWD\" \"$$PWD\" \"$$PWD\" \"$$(sha256sum bad.o | cut -c1-64)\" "
    ">> /tmp/csorch-build/out/units.jsonl\n"
)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        ("", "function sum lies in no unit compiled with debug information"),
        ("-g", "unit bad.c (function sum) compiled without -fsanitize=address"),
        (
            "-g -fsanitize=address -fno-sanitize=address",
            "unit bad.c (function sum) compiled without -fsanitize=address",
        ),
        ("-g0 -g1 -grecord-gcc-switches -fsanitize=address --param=asan-instrument-reads=0",
         "unit bad.c (function sum) compiled with --param=asan-instrument-reads=0"),
    ],
)
def test_a_forged_record_does_not_hide_a_unit_the_binary_shows(
    tmp_path: Path, flags: str, named: str
) -> None:
    # the record is believed (no "made by no recorded compile"); the program's own debug
    # information, read unit by unit, names the function compiled past the wrappers
    why = _fails(tmp_path, LINK + FORGED.format(flags=flags))
    assert "made by no recorded compile" not in why
    assert f"tree/prog: {named}" in why


def test_a_program_stripped_of_its_debug_information_is_named(tmp_path: Path) -> None:
    why = _fails(tmp_path, LINK.replace("$(LDFLAGS)", "$(LDFLAGS) && strip -g prog"))
    assert re.search(r"tree/prog: \d+ functions \([^)]*main[^)]*\) lie in no unit compiled", why)
    assert "or the binary stripped after its link" in why


def test_a_program_linked_by_absolute_path_fails_by_name(tmp_path: Path) -> None:
    why = _fails(tmp_path, "prog: main.c bad.c\n\t/usr/bin/gcc -o prog main.c bad.c\n")
    assert "tree/prog: linked by no recorded compiler" in why


def test_an_archive_member_compiled_by_absolute_path_fails_by_name(tmp_path: Path) -> None:
    makefile = (
        "prog: main.o libbad.a\n\t$(CC) -o prog main.o -L. -lbad $(LDFLAGS)\n"
        "libbad.a: bad.c\n\t/usr/bin/gcc -c bad.c -o bad.o && ar rcs libbad.a bad.o\n"
    )
    assert "bad.o in libbad.a (linked into prog) was made by no recorded compile" in _fails(
        tmp_path, makefile
    )


def test_an_archive_of_recorded_units_builds(tmp_path: Path) -> None:
    makefile = (
        "prog: main.o libbad.a\n\t$(CC) -o prog main.o -L. -lbad $(LDFLAGS)\n"
        "libbad.a: bad.o\n\tar rcs libbad.a bad.o\n"
    )
    done = build.build(_make(), _subject(tmp_path, makefile), _context(tmp_path))
    assert done.ok and done.units == ("bad.c", "main.c")


def test_switching_instrumentation_off_fails_naming_the_unit(tmp_path: Path) -> None:
    # -fsanitize=address is there, but no read of bad.c would be checked
    why = _fails(tmp_path, LINK + "bad.o: CFLAGS += --param asan-instrument-reads=0\n")
    assert "bad.c: compiled with --param asan-instrument-reads=0" in why


def test_without_a_sanitizer_units_are_recorded_and_nothing_is_required(tmp_path: Path) -> None:
    makefile = LINK + "bad.o: bad.c\n\t/usr/bin/gcc -c bad.c -o bad.o\n"
    done = build.build(_make(), _subject(tmp_path, makefile), _context(tmp_path, asan=False))
    assert done.ok and done.units == ("main.c",)  # the absolute-path one is not seen
    compiled = [
        json.loads(line) for line in (done.directory / "units.jsonl").read_text().splitlines()
    ]
    assert all("-fsanitize=address" not in c["argv"] for c in compiled)
    assert compiled[0]["argv"][-1] == "-fno-omit-frame-pointer"


JIT = """\
import argparse, pathlib, subprocess
p = argparse.ArgumentParser()
for o in ("--root", "--build-dir", "--package-dir"):
    p.add_argument(o, required=True)
p.add_argument("--sanitize")
a = p.parse_args()
pkg = pathlib.Path(a.package_dir) / "subj"
pkg.mkdir(parents=True)
# ignores --sanitize and $CFLAGS alike: only the wrapper can instrument it
subprocess.run(["cc", "-shared", "-fPIC", "-O2", "bad.c", "-o", str(pkg / "_C.so")], check=True,
               cwd=a.root)
"""


def test_a_jit_description_that_drops_the_flags_is_instrumented(tmp_path: Path) -> None:
    tree = _subject(tmp_path, "", **{"build.py": JIT})
    done = build.build(Variant("v", BuildSpec(BuildKind.JIT)), tree, _context(tmp_path))
    library = done.directory / "pkg" / "subj" / "_C.so"
    assert done.units == ("bad.c",) and binaries.read_elf(library.read_bytes()).asan


SETUP = """\
from setuptools import Extension, setup
setup(name="subj", version="0.1", ext_modules=[Extension("subj", ["bad.c"],
      extra_compile_args=["-O2"])])
"""


def test_a_wheel_build_goes_through_the_wrappers(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    tree = _subject(tmp_path, "", **{"setup.py": SETUP})
    done = build.build(Variant("v", BuildSpec(BuildKind.WHEEL)), tree, _context(tmp_path))
    (library,) = (done.directory / "pkg").glob("subj*.so")
    assert done.units == ("bad.c",) and binaries.read_elf(library.read_bytes()).asan


def test_an_object_from_outside_the_build_older_than_it_is_named(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "bad.c").write_text(BAD)
    subprocess.run(["gcc", "-c", "bad.c", "-o", "bad.o"], cwd=elsewhere, check=True)
    makefile = f"prog: main.o\n\t$(CC) -o prog main.o {elsewhere / 'bad.o'} $(LDFLAGS)\n"
    why = _fails(tmp_path, makefile)
    assert f"{elsewhere / 'bad.o'} (linked into prog) was made by no recorded compile" in why


def test_a_system_archive_without_debug_information_passes(tmp_path: Path) -> None:
    # a static library from outside the build, older than it (libcudadevrt.a, a static
    # libstdc++): its functions lie in no unit of the program, and are the system's
    elsewhere = tmp_path / "system"
    elsewhere.mkdir()
    (elsewhere / "help.c").write_text("int helper(int x) { return x + 1; }\n")
    subprocess.run(["gcc", "-O2", "-c", "help.c", "-o", "help.o"], cwd=elsewhere, check=True)
    subprocess.run(["ar", "rcs", "libhelp.a", "help.o"], cwd=elsewhere, check=True)
    main = "int helper(int x);\nint main(void) { return helper(-1); }\n"
    makefile = (
        f"prog: main.o\n\t$(CC) -o prog main.o -L{elsewhere} -lhelp $(LDFLAGS)\n"
        "main.o: main.c\n\t$(CC) $(CFLAGS) -c main.c -o main.o\n"
    )
    tree = _subject(tmp_path, makefile, **{"main.c": main})
    done = build.build(_make(), tree, _context(tmp_path))
    assert done.ok and done.units == ("main.c",)
    # the same archive made by the build itself is its own, and named
    makefile = (
        "prog: main.o libhelp.a\n\t$(CC) -o prog main.o -L. -lhelp $(LDFLAGS)\n"
        "libhelp.a: help.c\n\t/usr/bin/gcc -c help.c -o help.o && ar rcs libhelp.a help.o\n"
    )
    own = {"main.c": main, "help.c": "int helper(int x) { return x; }\n"}
    why = _fails(tmp_path / "own", makefile, **own)
    assert "help.o in libhelp.a (linked into prog) was made by no recorded compile" in why


@pytest.mark.parametrize("strip", ["-s", "-Wl,-s", "-Wl,--as-needed,--strip-all", "-Xlinker -S"])
def test_a_link_that_strips_its_output_keeps_its_debug_information(tmp_path: Path, strip):
    # a setup.py's extra_link_args=['-s'] (pytorch_cluster's): under a sanitizer the
    # wrapper leaves it out, so that the program can be read unit by unit, and its
    # reports name file:line
    makefile = LINK.replace("$(LDFLAGS)", f"$(LDFLAGS) {strip}")
    done = build.build(_make(), _subject(tmp_path, makefile), _context(tmp_path))
    assert done.ok
    linked = [
        json.loads(line)
        for line in (done.directory / "units.jsonl").read_text().splitlines()
        if json.loads(line)["mode"] == "link"
    ]
    assert not set(strip.split()) & set(linked[0]["argv"]) - {"-Wl,--as-needed"}
    assert "-Wl,--as-needed" in linked[0]["argv"] if "as-needed" in strip else True
    run = subprocess.run([str(done.directory / "tree" / "prog")], capture_output=True, text=True)
    assert "heap-buffer-overflow" in run.stderr and "bad.c:3" in run.stderr
