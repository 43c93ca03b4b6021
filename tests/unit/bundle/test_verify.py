"""verify: real `csorch run --backend asan` bundles verify; a changed, deleted or added log,
a changed or deleted binary, a changed patch are caught; what has moved away is reported
as not checkable; `csorch verify` exits 0/1/2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import cli
from orchestrator.bundle import verify
from orchestrator.bundle.verify import Kind, Status
from orchestrator.errors import BundleError

ROOT = Path(__file__).resolve().parents[3]
E2E = ROOT / "tests" / "fixtures" / "e2e"
runner = CliRunner()


def _copy(bundle: Path, tmp_path: Path) -> Path:
    """A private copy of a shared (read-only) bundle; it also proves a moved bundle verifies."""
    dest = tmp_path / "bundle"
    shutil.copytree(bundle, dest)
    return dest


def _manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def _failing(result: verify.Verification) -> list[tuple[Status, str]]:
    return [(c.status, c.path) for c in result.checks if c.status in verify.FAILING]


def _append(path: Path, data: bytes = b"x") -> None:
    with open(path, "ab") as f:
        f.write(data)


@pytest.mark.parametrize("verdict", ["pass", "fail", "inconclusive"])
def test_real_bundles_verify(cprog_bundles: dict[str, Path], verdict: str) -> None:
    bundle = cprog_bundles[verdict]
    manifest = _manifest(bundle)
    result = verify.verify(bundle)
    assert result.ok and result.complete, _failing(result)
    by_kind: dict[Kind, list[verify.Check]] = {}
    for check in result.checks:
        by_kind.setdefault(check.kind, []).append(check)
    # every digest the manifest records has its check, and every checkable one matches
    assert sorted(c.path for c in by_kind[Kind.LOG]) == sorted(manifest["logs"])
    binaries = [b for build in manifest["builds"] for b in build["binaries"]]
    assert len(by_kind.get(Kind.BINARY, [])) == len(binaries)
    patches = [p for s in manifest["sources"] for p in s["patches"]]
    assert len(by_kind.get(Kind.PATCH, [])) == len(patches)
    for kind in (Kind.LOG, Kind.BINARY, Kind.PATCH, Kind.CONFIG):
        assert all(c.status is Status.OK for c in by_kind.get(kind, [])), kind
    assert all(c.status is Status.NOT_CHECKABLE and c.detail for c in by_kind[Kind.SOURCE])
    (results,) = by_kind[Kind.RESULTS]
    expected = Status.OK if manifest.get("results") else Status.NOT_CHECKABLE
    assert results.status is expected


def test_a_moved_bundle_still_verifies(cprog_bundles: dict[str, Path], tmp_path: Path) -> None:
    assert verify.verify(_copy(cprog_bundles["pass"], tmp_path)).ok


def test_a_modified_log_is_a_mismatch(cprog_bundles: dict[str, Path], tmp_path: Path) -> None:
    bundle = _copy(cprog_bundles["pass"], tmp_path)
    log = next(rel for rel in _manifest(bundle)["logs"] if "/memcheck/" in rel)
    _append(bundle / log)
    result = verify.verify(bundle)
    assert not result.ok and _failing(result) == [(Status.MISMATCH, log)]
    (check,) = [c for c in result.checks if c.path == log]
    assert check.expected != check.actual and len(check.actual) == 64


def test_a_deleted_log_is_missing(cprog_bundles: dict[str, Path], tmp_path: Path) -> None:
    bundle = _copy(cprog_bundles["fail"], tmp_path)
    log = sorted(_manifest(bundle)["logs"])[-1]
    (bundle / log).unlink()
    assert _failing(verify.verify(bundle)) == [(Status.MISSING, log)]


def test_an_added_log_is_unlisted(cprog_bundles: dict[str, Path], tmp_path: Path) -> None:
    bundle = _copy(cprog_bundles["pass"], tmp_path)
    (bundle / "logs" / "fixed" / "memcheck" / "sum" / "r1.log").write_text("clean\n")
    result = verify.verify(bundle)
    assert _failing(result) == [(Status.UNLISTED, "logs/fixed/memcheck/sum/r1.log")]


def test_results_json_is_checked_when_recorded(
    cprog_bundles: dict[str, Path], tmp_path: Path
) -> None:
    bundle = _copy(cprog_bundles["pass"], tmp_path)
    _append(bundle / "results.json", b" ")
    result = verify.verify(bundle)
    if _manifest(bundle).get("results"):
        assert _failing(result) == [(Status.MISMATCH, "results.json")]
    else:  # a manifest that records no digest for it: say so, do not pass it as checked
        assert result.ok and result.checks[0].status is Status.NOT_CHECKABLE
    (bundle / "results.json").unlink()
    assert (Status.MISSING, "results.json") in _failing(verify.verify(bundle))


def test_a_path_outside_the_bundle_is_a_mismatch(
    cprog_bundles: dict[str, Path], tmp_path: Path
) -> None:
    bundle = _copy(cprog_bundles["pass"], tmp_path)
    manifest = _manifest(bundle)
    manifest["logs"]["../outside.log"] = "0" * 64
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert _failing(verify.verify(bundle)) == [(Status.MISMATCH, "../outside.log")]


def test_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no manifest.json"):
        verify.verify(tmp_path)
    with pytest.raises(BundleError, match="not a directory"):
        verify.verify(tmp_path / "nowhere")
    (tmp_path / "manifest.json").write_text('{"schema": "other/1"}')
    with pytest.raises(BundleError, match="schema 'other/1'"):
        verify.verify(tmp_path)


@pytest.fixture
def own_bundle(tmp_path: Path) -> tuple[Path, Path]:
    """(bundle, source dir): a fresh run over a private copy of the C program, its config
    and its patch, with its own build cache, so that the test may change any of them."""
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("the C-program bundle needs gcc and make")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("c-oob.yaml", "fix-oob.patch"):
        shutil.copy(E2E / name, src / name)
    shutil.copytree(E2E / "cprog", src / "cprog")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(src / "c-oob.yaml"), "--backend",
         "asan", "--out", str(out), "--cache-dir", str(tmp_path / "cache")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, src


def _binary(bundle: Path) -> tuple[Path, Path, str]:
    """(cache entry, binary, recorded sha256) of the fixed variant's build."""
    build = next(b for b in _manifest(bundle)["builds"] if b["variant"] == "fixed")
    entry = Path(build["entry"])
    return entry, entry / build["binaries"][0]["path"], build["binaries"][0]["sha256"]


@pytest.mark.process
def test_a_modified_binary_is_a_mismatch(own_bundle: tuple[Path, Path]) -> None:
    bundle, _ = own_bundle
    assert verify.verify(bundle).ok
    entry, binary, recorded = _binary(bundle)
    data = bytearray(binary.read_bytes())
    data[len(data) // 2] ^= 0xFF
    binary.write_bytes(bytes(data))
    result = verify.verify(bundle)
    assert _failing(result) == [(Status.MISMATCH, str(binary))]
    (check,) = [c for c in result.checks if c.status is Status.MISMATCH]
    assert check.subject == "fixed" and check.expected == recorded
    assert "changed after the build" in check.detail
    # an entry rebuilt since the run records the new binary in its own metadata
    meta = json.loads((entry / "entry.json").read_text())
    for artifact in meta["build"]["artifacts"]:
        artifact["sha256"] = check.actual
    (entry / "entry.json").write_text(json.dumps(meta))
    # builds are not byte-reproducible: nothing is left to check the binary against
    rebuilt = verify.verify(bundle)
    assert rebuilt.ok
    (check,) = [c for c in rebuilt.checks if c.path == str(binary)]
    assert check.status is Status.NOT_CHECKABLE and "rebuilt" in check.detail
    binary.unlink()
    assert _failing(verify.verify(bundle)) == [(Status.MISSING, str(binary))]


@pytest.mark.process
def test_files_outside_the_bundle(own_bundle: tuple[Path, Path]) -> None:
    bundle, src = own_bundle
    entry, binary, _ = _binary(bundle)
    _append(src / "fix-oob.patch", b"\n")  # the patch under review is not the one validated
    (src / "c-oob.yaml").unlink()
    shutil.rmtree(entry)  # evicted from the cache
    result = verify.verify(bundle)
    assert _failing(result) == [(Status.MISMATCH, str(src / "fix-oob.patch"))]
    status = {c.path: c.status for c in result.checks}
    assert status[str(src / "c-oob.yaml")] is Status.NOT_CHECKABLE
    assert status[str(binary)] is Status.NOT_CHECKABLE
    (src / "fix-oob.patch").unlink()
    result = verify.verify(bundle)
    assert result.ok  # what moved away cannot be checked, and is not held against the bundle
    assert sum(c.status is Status.NOT_CHECKABLE for c in result.checks) >= 4


def test_cli_verify_exit_codes(cprog_bundles: dict[str, Path], tmp_path: Path) -> None:
    bundle = _copy(cprog_bundles["pass"], tmp_path)
    ok = runner.invoke(cli.app, ["verify", str(bundle)])
    assert ok.exit_code == cli.ExitCode.PASS, ok.output
    assert "0 mismatch, 0 missing, 0 unlisted" in ok.output and "OK" in ok.output
    log = sorted(_manifest(bundle)["logs"])[0]
    _append(bundle / log)
    bad = runner.invoke(cli.app, ["verify", str(bundle), "--problems-only"])
    assert bad.exit_code == cli.ExitCode.FAIL, bad.output
    assert "1 mismatch" in bad.output and "FAILED" in bad.output and log in bad.output
    assert "logs/build" not in bad.output.replace(log, "")  # only the problem is listed
    empty = tmp_path / "empty"
    empty.mkdir()
    usage = runner.invoke(cli.app, ["verify", str(empty)])
    assert usage.exit_code == cli.ExitCode.USAGE and "no manifest.json" in usage.output
