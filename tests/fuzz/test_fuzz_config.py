"""Fuzzing the config loaders: orchestrator/config/experiment.py (experiments) and gate.py (gate
configs), through orchestrator/config/nodes.py.

Property: whatever the file holds (a damaged real config, random bytes, invalid UTF-8,
a huge line, deep nesting, YAML tags, aliases), loading it either returns a config or
raises ConfigError naming the file; never another exception.

The damaged configs are written into a scratch copy of the repository's layout (links
to ext/, controls/ and tests/, the configs beside them), so that their relative paths
still resolve and the loader gets past the syntax into the checks of each key.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is a CPU-machine test dependency (make setup)")

from fuzzlib import ROOT, decode, fed, huge_line, interleaved, mutated
from hypothesis import given
from hypothesis import strategies as st

from orchestrator import gate
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import ConfigError

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
E2E = ROOT / "tests" / "fixtures" / "e2e"
E2E_CONFIGS = sorted(E2E.glob("*.yaml"))
TEXTS = [decode(p.read_bytes()) for p in CONFIGS + E2E_CONFIGS]

FARM = Path(tempfile.mkdtemp(prefix="csorch-fuzz-config-"))
for name in ("ext", "controls", "tests"):
    (FARM / name).symlink_to(ROOT / name)
(FARM / "configs").mkdir()
for p in CONFIGS:
    (FARM / "configs" / p.name).symlink_to(p)
(FARM / "e2e").mkdir()
for p in E2E.iterdir():
    (FARM / "e2e" / p.name).symlink_to(p)

YAML_TRICKS = st.sampled_from(
    [
        "name: 2001-02-30",  # a timestamp that is not a date
        "repeats: " + "9" * 5000,  # past int()'s digit limit
        "timeout: 1e999",
        "name: !!python/object:os.system echo",
        "name: !!binary AAAA",
        "name: !!int x",
        "x: &a [*a]",  # a recursive alias
        "[" * 5000 + "]" * 5000,
        "{a: " * 3000 + "}" * 3000,
        "- " * 3000,
        "? [a]\n: b",  # a complex key
        "<<: {name: x}",
        "%YAML 1.1\n---\nname: x\n---\nname: y",
        "a: &x\n" + "".join(f"b{i}: &x{i} [*x, *x, *x]\n" for i in range(3)),
        "\t name: x",
        "\ufeffname: x",
        "name: \x00",
        "variants: [{name: \"a\\nb\", build: jit}]",
        "variants: [{name: ../../etc, build: jit}]",
        "name: ''",
    ]
)


def joined(lines: list[str]) -> bytes:
    return "\n".join(lines).encode()


@st.composite
def with_trick(draw: st.DrawFn) -> bytes:
    lines = list(draw(st.sampled_from(TEXTS)))
    lines.insert(draw(st.integers(0, len(lines))), draw(YAML_TRICKS))
    return joined(lines)


@st.composite
def with_bytes(draw: st.DrawFn) -> bytes:
    text = joined(draw(st.sampled_from(TEXTS)))
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(st.binary(max_size=200)) + text[at:]


def load_any(where: str, data: bytes) -> None:
    path = FARM / where / "fuzzed.yaml"
    path.write_bytes(data)
    fed("config")
    try:
        if gate.is_gate_config(path):
            gate.load_policy(path)
        else:
            load_experiment(path)
    except ConfigError as exc:
        assert exc.file == path.resolve() and str(exc)


WHERE = st.sampled_from(["configs", "e2e"])


@given(st.one_of(mutated(TEXTS), interleaved(TEXTS)).map(joined), WHERE)
def test_mutated_configs(data: bytes, where: str) -> None:
    load_any(where, data)


@given(huge_line(TEXTS, limit=50_000).map(joined), WHERE)
def test_huge_lines(data: bytes, where: str) -> None:
    load_any(where, data)


@given(with_trick(), WHERE)
def test_yaml_tricks(data: bytes, where: str) -> None:
    load_any(where, data)


@given(st.one_of(st.binary(max_size=3000), with_bytes()), WHERE)
def test_random_bytes_and_invalid_utf8(data: bytes, where: str) -> None:
    load_any(where, data)
