"""The directories csorch passes on to its children are refused up front (exit 2, naming
the flag) where the way they are passed cannot carry them: the build cache with a `:` or
whitespace (PYTHONPATH, LD_PRELOAD), an output directory with both quotes (ASAN_OPTIONS),
either with a name that is not UTF-8 or longer than the system opens.
Anything else passes (and round-trips: tests/unit/backends/asan/test_options_runtime.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from orchestrator.errors import CsorchError
from orchestrator.run import places
from tests.unit.hostile_text import QUICK, hostile_name


@pytest.mark.parametrize("name", ["c a che", "c:ache", "tab\tbed", "new\nline"])
def test_a_cache_dir_a_list_would_split_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(CsorchError, match=r"(?s)--cache-dir .*PYTHONPATH and LD_PRELOAD") as e:
        places.check_directory(tmp_path / name, "--cache-dir")
    assert "no ':' and no whitespace" in str(e.value)


def test_an_out_with_both_quotes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CsorchError, match=r"--out .*both ' and \".*ASAN_OPTIONS"):
        places.check_out(tmp_path / 'it\'s "here"')


def test_a_link_to_such_a_cache_is_refused_too(tmp_path: Path) -> None:
    (tmp_path / "c a che").mkdir()
    (tmp_path / "cache").symlink_to(tmp_path / "c a che")
    with pytest.raises(CsorchError, match="--cache-dir"):
        places.check_directory(tmp_path / "cache", "--cache-dir")


@QUICK
@given(hostile_name)
def test_any_name_passes_or_is_refused_by_its_flag(tmp_path_factory, name: str) -> None:
    base = tmp_path_factory.getbasetemp()
    for flag in ("--cache-dir", "--out"):
        try:
            places.check_directory(base / name, flag)
        except CsorchError as exc:
            assert str(exc).startswith(f"{flag} ")
            if not _utf8(name) or "bytes long" in str(exc):
                continue  # no flag carries it (places.nameable)
            if flag == "--cache-dir":
                assert set(name) & places.LIST_SEPARATORS
            else:
                assert "'" in name and '"' in name
        else:
            assert _utf8(name)
            if flag == "--cache-dir":
                assert not set(name) & places.LIST_SEPARATORS


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_a_name_that_is_not_utf8_or_too_long_is_refused(tmp_path: Path) -> None:
    for flag in ("--cache-dir", "--out"):
        with pytest.raises(CsorchError, match=f"{flag} .*not UTF-8 text \\(byte 0xff\\)"):
            places.check_directory(tmp_path / "caf\udcff", flag)
        with pytest.raises(CsorchError, match=f"{flag} .*the system names at most 4,095"):
            places.check_directory(tmp_path / ("y" * 300), flag)
