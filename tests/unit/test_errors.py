"""errors: each error tells the user what to fix."""

from __future__ import annotations

from pathlib import Path

from orchestrator.errors import (
    BuildError,
    BundleError,
    CheckerUnavailable,
    ConfigError,
    CsorchError,
    PatchError,
    ProcessStartError,
    SourceError,
)


def test_config_error_names_file_line_and_key() -> None:
    e = ConfigError(
        Path("c.yaml"),
        7,
        "variants[0].build",
        "'jitt' is not allowed",
        hint="jit, wheel or command",
    )
    assert (
        str(e)
        == "c.yaml:7: variants[0].build: 'jitt' is not allowed\n  hint: jit, wheel or command"
    )
    assert (e.file, e.line, e.key) == (Path("c.yaml"), 7, "variants[0].build")
    assert str(ConfigError("c.yaml", None, "", "cannot read")) == "c.yaml: cannot read"


def test_patch_error_names_patch_file_and_hunk() -> None:
    e = PatchError("controls/rng.patch", "csrc/torch/quantize.cpp", "2", "context mismatch")
    assert "controls/rng.patch does not apply (csrc/torch/quantize.cpp, hunk 2)" in str(e)
    assert "context mismatch" in str(e) and "rebase" in str(e)


def test_build_error_carries_command_status_and_tail() -> None:
    e = BuildError("rebuilt", ["ninja", "-v"], 1, Path("/b/build.log"), "error: x\nstop")
    text = str(e)
    assert "variant 'rebuilt'" in text and "`ninja -v` exited 1" in text
    assert "/b/build.log" in text and "    error: x\n    stop" in text
    assert "timed out" in str(BuildError("v", ["make"], None))


def test_everything_is_a_csorch_error() -> None:
    errors = [
        ConfigError("c", 1, "k", "p"),
        PatchError("p"),
        BuildError("v", ["x"], 1),
        CheckerUnavailable("memcheck", "missing"),
        ProcessStartError(["x"], "No such file"),
        SourceError("../ext", "no such directory"),
        BundleError("r", "digest mismatch"),
    ]
    for e in errors:
        assert isinstance(e, CsorchError) and str(e)
    assert "cannot start 'x': No such file" in str(ProcessStartError(["x"], "No such file"))
    assert str(CheckerUnavailable("asan", "no libasan")).startswith("checker asan is unavailable")
