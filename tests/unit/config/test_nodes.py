"""yamlview: located values, type checks, unknown and duplicate keys, and the shared
fields (names, choices, durations, paths)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config.nodes import load
from orchestrator.errors import ConfigError


def view(tmp_path: Path, text: str):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return load(path)


def test_lines_and_key_paths(tmp_path: Path) -> None:
    root = view(tmp_path, "a:\n  - x: 1\n  - x: [p, 2]\n")
    fields = root.mapping({"a": "a list"})
    items = list(fields.require("a").items())
    inner = items[1].mapping({"x": "words"}).require("x")
    assert (inner.key, inner.line) == ("a[1].x", 3)
    assert inner.words() == ("p", "2")
    assert items[0].mapping({"x": "words"}).require("x").words() == ("1",)


def test_empty_value_counts_as_absent(tmp_path: Path) -> None:
    fields = view(tmp_path, "a:\nb: 1\n").mapping({"a": "the a", "b": "the b"})
    assert fields.get("a") is None and "a" in fields
    with pytest.raises(ConfigError, match="missing: the a"):
        fields.require("a")


def test_anchor_aliases_resolve(tmp_path: Path) -> None:
    fields = view(tmp_path, "a: &e {K: v}\nb: *e\n").mapping({"a": "", "b": ""})
    assert fields.require("b").entries()["K"].word() == "v"


def test_non_string_keys_and_duplicates_in_free_mappings(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="keys must be strings"):
        view(tmp_path, "1: a\n").entries()
    with pytest.raises(ConfigError, match=r"duplicate key \(first given on line 1\)"):
        view(tmp_path, "K: a\nK: b\n").entries()


def test_type_errors_say_what_was_found(tmp_path: Path) -> None:
    fields = view(tmp_path, "n: 1.5\nt: [a]\nb: true\n").mapping({"n": "", "t": "", "b": ""})
    with pytest.raises(ConfigError, match=r"expected an integer, found a number \(1.5\)"):
        fields.require("n").integer()
    with pytest.raises(ConfigError, match="expected a single value, found a list"):
        fields.require("t").text()
    with pytest.raises(ConfigError, match="expected a mapping, found true or false"):
        fields.require("b").mapping({})


def test_python_tags_are_refused(tmp_path: Path) -> None:
    fields = view(tmp_path, "a: !!python/name:os.system\n").mapping({"a": ""})
    with pytest.raises(ConfigError, match="cannot read this value"):
        fields.require("a").text()


def test_multiple_documents_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        view(tmp_path, "a: 1\n---\nb: 2\n")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("600", 600.0), ("1.5", 1.5), ("'90s'", 90.0), ("10m", 600.0), ("2h", 7200.0), ("3 m", 180.0)],
)
def test_durations(tmp_path: Path, text: str, seconds: float) -> None:
    assert view(tmp_path, f"t: {text}\n").mapping({"t": ""}).require("t").duration() == seconds


@pytest.mark.parametrize("text", ["0", "-5", "10 minutes", "true", "0m"])
def test_bad_durations_say_how_to_write_one(tmp_path: Path, text: str) -> None:
    t = view(tmp_path, f"\nt: {text}\n").mapping({"t": ""}).require("t")
    with pytest.raises(ConfigError) as info:
        t.duration()
    assert (info.value.line, info.value.key) == (2, "t") and "10m" in str(info.value)


def test_names_choices_and_paths(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f.patch").write_text("")
    f = view(tmp_path, "n: ok-1.x\nbad: ../up\nc: shard\nd: d\np: f.patch\n").mapping(
        dict.fromkeys(["n", "bad", "c", "d", "p"], "")
    )
    assert f.require("n").name() == "ok-1.x"
    with pytest.raises(ConfigError, match="'../up' is not a safe name; use 1-64 letters"):
        f.require("bad").name()
    assert f.require("c").choice(("shard", "replicate")) == "shard"
    with pytest.raises(ConfigError, match="'shard' is not allowed; choose one of: a, b"):
        f.require("c").choice(("a", "b"))
    assert f.require("d").path(directory=True) == tmp_path / "d"
    assert f.require("p").path(directory=False) == tmp_path / "f.patch"
    with pytest.raises(ConfigError, match=r"no such file: .*/d \(a directory is there\)"):
        f.require("d").path(directory=False)
    with pytest.raises(ConfigError, match="no such directory"):
        f.require("p").path(directory=True)


# --- hostile files (issue 11): refused with a ConfigError naming the file ---------------


def test_a_file_that_is_not_utf8_names_the_file_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: x\ndescription: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert caught.value.file == path and caught.value.line == 2
    assert "not UTF-8 text: byte 0xe9" in str(caught.value) and "save the file as UTF-8" in str(
        caught.value
    )


def test_an_oversized_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("name: x\n" + "# padding\n" * 120_000)  # 1.2 MB
    with pytest.raises(ConfigError, match=r"1,200,008 bytes; a config is at most 1,048,576"):
        load(path)


def test_a_billion_laughs_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    with pytest.raises(ConfigError, match="aliases expand to more than 100,000 values") as caught:
        view(tmp_path, "\n".join(lines) + "\n")  # 10^10 values if expanded
    assert caught.value.line is not None and "alias bomb" in str(caught.value)


def test_modest_aliases_still_load(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x]", "a1: &a1 [*a0, *a0, *a0]", "a2: [*a1, *a1, *a1]"]
    assert view(tmp_path, "\n".join(lines) + "\n").is_mapping  # 27 values: fine


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="an alias refers to a node that contains it"):
        view(tmp_path, "a: &a [x, *a]\n")


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nested too deeply|not valid YAML"):
        view(tmp_path, "a: " + "[" * 20_000 + "]" * 20_000 + "\n")


def test_control_characters_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML: unacceptable character"):
        view(tmp_path, "name: a\x00b\n")


@pytest.mark.parametrize("text", ["2001-02-30", "9" * 5000])
def test_a_value_python_cannot_build_is_a_config_error(tmp_path: Path, text: str) -> None:
    fields = view(tmp_path, f"a: {text}\n").mapping({"a": "the a"})
    with pytest.raises(ConfigError, match="a: cannot read this value"):
        fields.require("a").value()
