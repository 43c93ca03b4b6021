"""The checker's channel found under any directory and prefix name: spaces, quotes,
colons, `%`, a newline, bytes that are not UTF-8. Its files are matched by name whole
(a prefix with a newline once matched no file: "no AddressSanitizer log")."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given

from orchestrator.backends import channel
from orchestrator.backends.asan.log import parse
from tests.unit.hostile_text import QUICK, hostile_name

CLEAN = (Path(__file__).resolve().parents[2] / "fixtures" / "asan" / "clean.log").read_text()


@QUICK
@given(hostile_name, hostile_name)
def test_a_launch_channel_is_read_under_any_name(tmp_path_factory, where: str, name: str) -> None:
    base = tmp_path_factory.mktemp("chan")
    try:
        (base / where).mkdir()
        prefix = base / where / name
        Path(f"{prefix}.4540").write_text(CLEAN)
        Path(f"{prefix}.started.4540").write_text("")
    except OSError:  # a name too long for the file system
        return
    got = channel.read_asan(prefix, parse)
    assert got.complete and not got.tool_errors, got.tool_errors
    assert channel.files_of(prefix) == sorted(
        [Path(f"{prefix}.4540"), Path(f"{prefix}.started.4540")]
    )


def test_a_prefix_with_a_newline(tmp_path: Path) -> None:
    prefix = tmp_path / "r0\n.launch0.checker"
    Path(f"{prefix}.7").write_text(CLEAN)
    assert channel.read_asan(prefix, parse).complete
