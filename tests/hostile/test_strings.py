"""Text that csorch passes on: each try is a real `csorch run` of the C subject under ASan.
A path with a space (or a colon) either works end to end or is refused before anything
runs (exit 2, naming the flag); a NUL in an `env` value and a source file whose name is
not UTF-8 are an exit code with the reason, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness import csorch, experiment, said


def verdict(out: Path) -> str:
    return json.loads((out / "results.json").read_text())["judgement"]["verdict"]


def test_an_out_with_a_space_and_a_colon_runs_end_to_end(place: Path) -> None:
    config = experiment(place)
    out = place / "my results: one, two"
    done = csorch(place, "run", config, "--backend", "asan", "--out", out)
    # before: ASAN_OPTIONS cut the log path at the space, "no AddressSanitizer log": exit 3
    assert done.returncode == 0, said(done)
    assert verdict(out) == "pass"


def test_a_cache_dir_with_a_space_is_refused_up_front(place: Path) -> None:
    config = experiment(place)
    cache = place / "my cache"
    done = csorch(
        place, "run", config, "--backend", "asan", "--out", place / "o", "--cache-dir", cache
    )
    assert done.returncode == 2, said(done)
    assert "--cache-dir" in done.stderr and "LD_PRELOAD" in done.stderr
    assert "Traceback" not in said(done) and not (place / "o").exists()


def test_a_nul_in_an_env_value_is_a_usage_error(place: Path) -> None:
    runs = (
        '[{name: plain, checker: none}, {name: memcheck, checker: memcheck, env: {FOO: "a\\0b"}}]'
    )
    config = experiment(place, runs=runs)
    done = csorch(place, "run", config, "--backend", "asan", "--out", place / "o")
    assert done.returncode == 2, said(done)
    assert "runs[1].env.FOO" in done.stderr and "NUL" in done.stderr
    assert "Traceback" not in said(done)


def test_a_source_file_whose_name_is_not_utf8_runs(place: Path) -> None:
    (place / "subject" / os.fsdecode(b"notes-caf\xe9.txt")).write_text("x\n")
    config = experiment(place)
    done = csorch(place, "run", config, "--backend", "asan", "--out", place / "o")
    assert done.returncode == 0, said(done)
    assert "Traceback" not in said(done)
