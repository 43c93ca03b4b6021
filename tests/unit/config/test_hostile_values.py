"""Every string of a config reaches an argv, an environment or a path: it is read back
exactly as written, or refused with the file, line and key (never a traceback later, when
the child starts: a NUL in an `env` value was `ValueError: embedded null byte`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from orchestrator.config.experiment import load_experiment
from orchestrator.errors import ConfigError
from tests.unit.hostile_text import QUICK, hostile

CONFIG = """\
name: demo
source: src
variants:
  - name: fixed
    build: {{kind: command, command: [make, {word}]}}
  - name: control
    build: {{kind: command, command: [make]}}
runs:
  - name: memcheck
    checker: memcheck
    env: {{{key}: {value}}}
cases:
  - {{name: c, command: [./prog, {word}]}}
expect:
  controls: [control]
  fix: fixed
"""


def write(tmp: Path, *, key: str = "FOO", value: str = "1", word: str = "x") -> Path:
    (tmp / "src").mkdir(exist_ok=True)
    path = tmp / "exp.yaml"
    path.write_text(CONFIG.format(key=key, value=value, word=word))
    return path


def quoted(text: str) -> str:
    """`text` as a YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(text, ensure_ascii=False)


@settings(QUICK, max_examples=40)
@given(hostile.filter(lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t)))
def test_a_value_reads_back_exactly_or_is_refused(tmp_path_factory, text: str) -> None:
    tmp = tmp_path_factory.getbasetemp()
    try:
        experiment = load_experiment(write(tmp, value=quoted(text), word=quoted(text)))
    except ConfigError as exc:
        # a NUL by its key; else a character YAML itself does not allow in a file (which
        # YAML names first, with or without a NUL elsewhere in the text)
        assert "exp.yaml:" in str(exc)
        if "not valid YAML" not in str(exc):
            assert ("holds a NUL" in str(exc)) == ("\0" in text), str(exc)
        return
    assert "\0" not in text
    assert dict(experiment.runs[0].env)["FOO"] == text
    assert experiment.cases[0].command == ("./prog", text)
    assert experiment.variants[0].build.command == ("make", text)


@pytest.mark.parametrize("value", ['"a\\0b"', '"\\0"'])
def test_a_nul_in_an_env_value_is_refused_by_key(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"exp\.yaml:11: runs\[0\]\.env\.FOO: holds a NUL"):
        load_experiment(write(tmp_path, value=value))


@pytest.mark.parametrize("key", ['"FOO\\n"', '"A=B"', '"A B"', '"A\\0"', '""'])
def test_a_name_no_environment_can_hold_is_refused(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError, match="not a valid environment variable name"):
        load_experiment(write(tmp_path, key=key))


def test_asan_options_the_runtime_would_refuse_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"env\.ASAN_OPTIONS: the sanitizer would refuse"):
        load_experiment(write(tmp_path, key="ASAN_OPTIONS", value='"log_path=\'x"'))
    ok = load_experiment(write(tmp_path, key="ASAN_OPTIONS", value="'halt_on_error=1:x=\"a b\"'"))
    assert dict(ok.runs[0].env)["ASAN_OPTIONS"] == 'halt_on_error=1:x="a b"'
