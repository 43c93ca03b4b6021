"""Text that csorch passes on: each try is a real `csorch run` of the C subject under ASan.
A path with a space (or a colon) either works end to end or is refused before anything
runs (exit 2, naming the flag); a NUL in an `env` value and a source file whose name is
not UTF-8 are an exit code with the reason, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
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


def _config_with(place: Path, old: str, new: str) -> Path:
    config = experiment(place)
    config.write_text(config.read_text().replace(old, new, 1))
    return config


CASE = "[{name: sum, command: [./pick]}]"


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        ("cases[0].command", CASE, '[{name: sum, command: [./pick, "\\ud800"]}]'),
        ("description", "name: exp", 'name: exp\ndescription: "x\\udc80"'),
    ],
)
def test_a_lone_surrogate_in_a_config_string_is_a_usage_error(place, where, old, new):
    # before: a UnicodeEncodeError traceback from the console (check) or the child's start
    done = csorch(place, "check", _config_with(place, old, new), timeout=60)
    assert done.returncode == 2, said(done)
    assert where in done.stderr and "lone surrogate" in done.stderr, said(done)
    assert "Traceback" not in said(done)


@pytest.mark.parametrize("timeout", [".inf", "99999999999999999999h"])
def test_an_endless_timeout_is_refused_at_load(place: Path, timeout: str) -> None:
    # before: accepted; `.inf` reached results.json as `Infinity`, which is no JSON
    done = csorch(place, "check", _config_with(place, "timeout: 1m", f"timeout: {timeout}"))
    assert done.returncode == 2, said(done)
    assert "timeout: must be at most 365 days" in done.stderr, said(done)


def test_a_python_tag_on_a_list_is_refused_not_ignored(place: Path) -> None:
    # before: the tag was dropped and the list read as a plain one (exit 0)
    config = _config_with(place, "variants:\n", "variants: !!python/object/apply:os.system\n")
    done = csorch(place, "check", config)
    assert done.returncode == 2, said(done)
    assert "python/object/apply:os.system is not read here" in done.stderr, said(done)


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("test_requires[0]", 'test_requires: ["--index-url=http://127.0.0.1:9/==1"]\n'),
        ("cases[1].marker", None),
    ],
)
def test_what_pip_or_pytest_would_read_as_an_option_is_refused(place, key, text):
    # before: accepted; `pip install ... --index-url=...==1` takes it as its index
    config = experiment(place)
    if text is None:
        (place / "test_x.py").write_text("def test_x():\n    pass\n")
        text = ""
        config.write_text(
            config.read_text().replace(
                CASE, "[{name: sum, command: [./pick]}, {pytest: test_x.py, marker: '--co'}]"
            )
        )
    config.write_text(config.read_text() + text)
    done = csorch(place, "check", config)
    assert done.returncode == 2, said(done)
    assert key in done.stderr and "option" in done.stderr, said(done)


@pytest.mark.parametrize("flag", ["--out", "--cache-dir"])
@pytest.mark.parametrize("name", ["long", "not utf-8"])
def test_an_out_or_cache_the_system_cannot_carry_is_a_usage_error(place, flag, name):
    # before: --out 5000 bytes long: an OSError traceback (ENAMETOOLONG); --out not
    # UTF-8: the run went on and found no ASan log (exit 3); --cache-dir: a failed build
    given = place / ("x" * 5000) if name == "long" else place / os.fsdecode(b"caf\xe9")
    args = ["run", experiment(place), "--backend", "asan"]
    args += ["--out", given] if flag == "--out" else ["--out", place / "o", "--cache-dir", given]
    done = csorch(place, *args, timeout=60)
    assert done.returncode == 2, said(done)
    assert flag in done.stderr and ("UTF-8" in done.stderr or "bytes long" in done.stderr)
    assert "Traceback" not in said(done) and not (place / "o").exists()
