"""ASAN_OPTIONS as csorch writes it, read by the real runtime (gcc's libasan): the log path
of an attempt under an `--out` with spaces, colons, commas, a quote, `%`, a newline or
bytes that are not UTF-8 lands exactly at PREFIX.<pid> (before, a space cut the path at
the space and the runtime wrote elsewhere: "no AddressSanitizer log", blamed on the
subject); and a user's quoted option keeps its separators."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings

from orchestrator.backends.asan.backend import merge_options
from orchestrator.config import sanitizer_options
from tests.unit.hostile_text import QUICK, hostile_name

pytestmark = pytest.mark.process  # compiles and runs an instrumented program

PROGRAM = "#include <stdlib.h>\nint main(void){char*p=malloc(4);p[5]=1;free(p);return 0;}\n"


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc with libasan")
    where = tmp_path_factory.mktemp("prog")
    (where / "t.c").write_text(PROGRAM)
    flags = ["-fsanitize=address", "-fsanitize-recover=address", "-g"]
    done = subprocess.run(["gcc", *flags, "t.c", "-o", "t"], cwd=where, capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"gcc cannot build with -fsanitize=address: {done.stderr[-200:]!r}")
    return where / "t"


def check(program: Path, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    prefix = directory / "r0.launch0.checker"
    options = merge_options(log_path=prefix)
    child = subprocess.Popen([program], env={**os.environ, "ASAN_OPTIONS": options})
    assert child.wait(timeout=60) == 0  # recover mode: the report does not end it
    log = directory / f"r0.launch0.checker.{child.pid}"
    assert log.is_file(), f"{os.listdir(directory)} in {directory!r}"
    text = log.read_text()
    assert "heap-buffer-overflow" in text and "AddressSanitizer exit stats:" in text
    shutil.rmtree(directory)


@pytest.mark.parametrize(
    "name",
    [
        "o u t",
        "a:b",
        "c,d",
        "q'x",
        'q"x',
        "p%pp",
        "b%bz",
        "n\nl",
        "t\tab",
        os.fsdecode(b"\xe9t\xff"),
    ],
)
def test_the_log_lands_under_a_hostile_out(program: Path, tmp_path: Path, name: str) -> None:
    check(program, tmp_path / name / "logs")


@settings(QUICK, max_examples=25)
@given(hostile_name)
def test_any_passable_out_round_trips_through_the_runtime(
    program: Path, tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    base = tmp_path_factory.mktemp("out")
    try:
        sanitizer_options.pair("log_path", str(base / name))
    except sanitizer_options.OptionsError:
        return  # refused before a run starts (run.places.passable)
    try:
        (base / name).mkdir()
    except OSError:  # a name too long for the file system
        return
    check(program, base / name / "logs")


def test_a_users_quoted_option_keeps_its_separators(program: Path, tmp_path: Path) -> None:
    # the user's own log_path, quoted, then csorch's: the runtime takes the last one
    prefix = tmp_path / "mine, with: separators" / "log"
    prefix.parent.mkdir()
    options = merge_options(f'log_path="{prefix}":halt_on_error=0')
    child = subprocess.Popen([program], env={**os.environ, "ASAN_OPTIONS": options})
    assert child.wait(timeout=60) == 0
    assert (prefix.parent / f"log.{child.pid}").is_file()
