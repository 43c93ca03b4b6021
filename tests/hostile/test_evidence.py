"""Stored evidence is re-derived, not trusted: real bundles of `csorch run --backend asan`
over the C program (tests/fixtures/e2e/cprog), edited the ways someone who can write files
would (and re-hashed where that helps them), read back by every reader of a stored bundle:
`compare --from`, `gate --from`, `verify`, `report`. Each edit must leave the reader
inconclusive (or failing), never green, and never a traceback."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness import E2E, ROOT, invoke

from orchestrator.cli import ExitCode

pytestmark = pytest.mark.process


def csorch(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **env},
    )  # fmt: skip


def copy(src: Path, tmp_path: Path, name: str = "bundle") -> Path:
    dest = tmp_path / name
    shutil.copytree(src, dest, symlinks=True)
    return dest


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def save(path: Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=1))


def rehash(bundle: Path) -> None:
    """Rewrite the bundle's manifest over what is in it now, as an editor covering their
    tracks would: results.json's digest, every log's, the journal's."""
    manifest = load(bundle / "manifest.json")
    manifest["results"]["sha256"] = sha(bundle / "results.json")
    manifest["logs"] = {
        p.relative_to(bundle).as_posix(): sha(p)
        for p in sorted((bundle / "logs").rglob("*"))
        if p.is_file()
    }
    if (bundle / "journal.jsonl").is_file() and "files" in manifest:
        manifest["files"]["journal.jsonl"] = sha(bundle / "journal.jsonl")
    save(bundle / "manifest.json", manifest)


def rehash_gate(gate: Path) -> None:
    manifest = load(gate / "manifest.json")
    for name in list(manifest["files"]):
        manifest["files"][name] = sha(gate / name)
    save(gate / "manifest.json", manifest)


def config(tmp_path: Path, name: str, text: str) -> Path:
    """An experiment config in tmp_path over the C program of tests/fixtures/e2e."""
    path = tmp_path / name
    path.write_text(text.replace("@E2E@", str(E2E)))
    return path


CPROG = """\
name: c-oob
source: @E2E@/cprog
variants:
  - name: fixed
    patches: [@E2E@/fix-oob.patch]
    build: {kind: command, command: [make], outputs: [pick]}
  - name: control
    build: {kind: command, command: [make], outputs: [pick]}
runs:
  - name: plain
    checker: none
  - name: memcheck
    checker: memcheck
cases:
@CASES@
repeats: @N@
timeout: 2m
expect:
  controls: [control]
  fix: fixed
  min_hits: @K@
  target: {checker: asan, kind: heap-buffer-overflow, access: read, function: sum}
"""


def cprog(tmp_path: Path, *, n: int = 1, k: int = 1, cases: tuple[str, ...] = ("sum",)) -> Path:
    listed = "\n".join(f"  - {{name: {c}, command: [./pick]}}" for c in cases)
    text = CPROG.replace("@CASES@", listed).replace("@N@", str(n)).replace("@K@", str(k))
    return config(tmp_path, "c-oob.yaml", text)


@pytest.fixture(scope="module")
def gate_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `csorch gate --out` directory (its bundle inside it). Read-only: copy it."""
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("the C-program gate needs gcc and make")
    tmp = tmp_path_factory.mktemp("gate")
    done = csorch(
        "gate", str(E2E / "gate-cprog.yaml"), "--backend", "asan", "--out", str(tmp / "gate"),
        "--cache-dir", str(tmp / "cache"), cwd=tmp,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return tmp / "gate"


# --- compare --from ------------------------------------------------------------------


def interrupted_before_the_fix(src: Path, tmp_path: Path) -> Path:
    """The bundle as a run interrupted before any attempt of the fix leaves it: the fix's
    attempts and logs absent, `complete: false`, `interrupted: true`, the manifest over
    exactly what is there."""
    bundle = copy(src, tmp_path)
    results = load(bundle / "results.json")
    results["attempts"] = [a for a in results["attempts"] if a["variant"] != "fixed"]
    results.update(complete=False, interrupted=True, verdict=None, judgement=None, cases=[])
    save(bundle / "results.json", results)
    shutil.rmtree(bundle / "logs" / "fixed")
    rehash(bundle)
    manifest = load(bundle / "manifest.json")
    manifest["complete"] = False
    save(bundle / "manifest.json", manifest)
    return bundle


def test_compare_refuses_an_interrupted_bundle_whose_fix_never_ran(cprog_bundles, tmp_path):
    bundle = interrupted_before_the_fix(cprog_bundles["pass"], tmp_path)
    done = invoke("compare", str(E2E / "c-oob.yaml"), "--from", str(bundle))
    assert done.exit_code == ExitCode.INCONCLUSIVE, done.output
    assert "interrupted" in done.output and "removes all" not in done.output


@pytest.mark.parametrize("edit", ["edited", "added", "removed", "symlinked"])
def test_compare_refuses_a_bundle_whose_logs_changed(cprog_bundles, tmp_path, edit):
    bundle = copy(cprog_bundles["pass"], tmp_path)
    log = bundle / "logs" / "fixed" / "memcheck" / "sum" / "r0.log"
    if edit == "edited":
        log.write_text(log.read_text() + "nothing to see\n")
    elif edit == "added":
        (log.parent / "r1.log").write_text("a log no run wrote\n")
    elif edit == "removed":
        log.unlink()
    else:
        elsewhere = tmp_path / "elsewhere.log"
        shutil.copy(log, elsewhere)
        log.unlink()
        log.symlink_to(elsewhere)
    done = invoke("compare", str(E2E / "c-oob.yaml"), "--from", str(bundle))
    assert done.exit_code == ExitCode.INCONCLUSIVE, done.output
    assert "does not verify" in done.output and "logs/fixed/memcheck/sum" in done.output


def test_compare_refuses_another_experiments_bundle(cprog_bundles):
    done = invoke("compare", str(E2E / "c-oob-nofix.yaml"), "--from", str(cprog_bundles["pass"]))
    assert done.exit_code == ExitCode.INCONCLUSIVE, done.output
    assert "is of experiment 'c-oob', not 'c-oob-nofix'" in done.output


def test_compare_names_the_damaged_key_of_results_json(cprog_bundles, tmp_path):
    bundle = copy(cprog_bundles["pass"], tmp_path)
    results = load(bundle / "results.json")
    results["attempts"] = 5
    save(bundle / "results.json", results)
    rehash(bundle)
    done = invoke("compare", str(E2E / "c-oob.yaml"), "--from", str(bundle))
    assert done.exit_code == ExitCode.INCONCLUSIVE, done.output
    assert "results.json: attempts: is int, expected list" in done.output.replace("\n", "")


def test_compare_from_a_bundle_needs_no_config(cprog_bundles):
    done = invoke("compare", "--from", str(cprog_bundles["pass"]))
    assert done.exit_code == ExitCode.PASS, done.output
    assert "removes all" in done.output


# --- gate --from, and --repeat -------------------------------------------------------


def test_gate_refuses_a_one_repeat_bundle_for_a_policy_of_three(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "three").mkdir()
    one, three = cprog(tmp_path / "one", n=1, k=1), cprog(tmp_path / "three", n=3, k=3)
    bundle = tmp_path / "bundle"
    done = csorch("run", str(one), "--backend", "asan", "--out", str(bundle),
                  "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    gate = invoke("gate", str(three), "--from", str(bundle), "--out", str(tmp_path / "gate"))
    assert gate.exit_code == ExitCode.INCONCLUSIVE, gate.output
    said = " ".join(load(tmp_path / "gate" / "gate.json")["experiments"][0]["reasons"])
    assert "ran 1 repeat(s) of run 'memcheck', the config asks for 3" in said
    assert "lacks 8 planned attempt(s)" in said


def test_gate_refuses_a_case_subset_for_the_full_config(tmp_path):
    both = cprog(tmp_path, cases=("sum", "again"))
    subset = tmp_path / "subset"
    done = csorch("run", str(both), "--backend", "asan", "--case", "sum", "--out", str(subset),
                  "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    gate = invoke("gate", str(both), "--from", str(subset), "--out", str(tmp_path / "gate"))
    assert gate.exit_code == ExitCode.INCONCLUSIVE, gate.output
    said = " ".join(load(tmp_path / "gate" / "gate.json")["experiments"][0]["reasons"])
    assert "did not run the config's case(s) again" in said


def test_a_repeat_below_min_hits_is_a_usage_error(tmp_path):
    three = cprog(tmp_path, n=3, k=3)
    for verb in ("gate", "run"):
        out, cache = str(tmp_path / verb), str(tmp_path / "cache")
        done = invoke(verb, str(three), "--repeat", "1", "--backend", "asan",
                      "--out", out, "--cache-dir", cache)  # fmt: skip
        assert done.exit_code == ExitCode.USAGE, done.output
        assert "--repeat 1 is below min_hits 3" in done.output.replace("\n", " ")
        assert not (tmp_path / verb / "results.json").exists()


# --- verify, and the readers after it ------------------------------------------------


def fail_turned_pass(src: Path, tmp_path: Path) -> Path:
    """The FAIL bundle with the fix's findings deleted from results.json, its verdict
    turned PASS and its digest recomputed; the fix's log still holds the report."""
    bundle = copy(src, tmp_path)
    results = load(bundle / "results.json")
    for a in results["attempts"]:
        if a["variant"] == "fixed" and a["parse"]:
            a["parse"].update(findings=[], summary_count=0, summary_lines=[])
    results["verdict"] = "pass"
    results["judgement"].update(verdict="pass", reasons=["fixed removes every target"])
    save(bundle / "results.json", results)
    rehash(bundle)
    return bundle


def test_a_results_json_edited_and_rehashed_does_not_verify(cprog_bundles, tmp_path):
    bundle = fail_turned_pass(cprog_bundles["fail"], tmp_path)
    done = invoke("verify", str(bundle), "--problems-only")
    assert done.exit_code == ExitCode.FAIL, done.output
    assert "findings" in done.output and "its log holds 1 finding(s)" in done.output
    gate = invoke("gate", str(E2E / "c-oob-nofix.yaml"), "--from", str(bundle))
    assert gate.exit_code == ExitCode.INCONCLUSIVE, gate.output


def test_an_emptied_results_digest_does_not_verify(cprog_bundles, tmp_path):
    bundle = copy(cprog_bundles["pass"], tmp_path)
    manifest = load(bundle / "manifest.json")
    manifest["results"]["sha256"] = ""
    save(bundle / "manifest.json", manifest)
    done = invoke("verify", str(bundle))
    assert done.exit_code == ExitCode.FAIL, done.output
    assert "empty digest" in done.output


def test_an_incomplete_bundle_does_not_verify_green(cprog_bundles, tmp_path):
    bundle = interrupted_before_the_fix(cprog_bundles["pass"], tmp_path)
    done = invoke("verify", str(bundle))
    assert done.exit_code != ExitCode.PASS, done.output
    assert "incomplete (interrupted)" in done.output


def stored_gate(src: Path, tmp_path: Path, config: Path) -> Path:
    out = tmp_path / "gate"
    done = invoke("gate", str(config), "--from", str(src), "--out", str(out))
    assert done.exit_code in (ExitCode.PASS, ExitCode.FAIL), done.output
    return out


def test_a_gate_json_edited_with_its_manifest_updated_does_not_verify(cprog_bundles, tmp_path):
    gate = stored_gate(cprog_bundles["fail"], tmp_path, E2E / "c-oob-nofix.yaml")
    doc = load(gate / "gate.json")
    assert doc["verdict"] == "fail"
    doc["verdict"] = "pass"
    for row in doc["experiments"]:
        row["verdict"] = "pass"
    save(gate / "gate.json", doc)
    rehash_gate(gate)
    done = invoke("verify", str(gate))
    assert done.exit_code == ExitCode.FAIL, done.output
    assert "judged again" in done.output.replace("\n", " ")


def test_a_gate_json_replaced_by_a_symlink_does_not_verify(gate_dir, tmp_path):
    gate = copy(gate_dir, tmp_path, "gate")
    twin = tmp_path / "twin.json"
    shutil.copy(gate / "gate.json", twin)
    (gate / "gate.json").unlink()
    (gate / "gate.json").symlink_to(twin)
    done = invoke("verify", str(gate))
    assert done.exit_code == ExitCode.FAIL, done.output
    assert "symlink" in done.output


def test_an_unlisted_file_inside_a_gates_bundle_does_not_verify(gate_dir, tmp_path):
    gate = copy(gate_dir, tmp_path, "gate")
    (gate / "c-oob" / "notes.txt").write_text("added after the gate\n")
    done = invoke("verify", str(gate))
    assert done.exit_code == ExitCode.FAIL, done.output
    assert "c-oob/notes.txt" in done.output and "unlisted" in done.output


def test_report_does_not_call_a_bundle_with_an_edited_log_conclusive(cprog_bundles, tmp_path):
    bundle = copy(cprog_bundles["pass"], tmp_path)
    log = bundle / "logs" / "control" / "memcheck" / "sum" / "r0.log"
    log.write_text(log.read_text() + "edited\n")
    done = invoke("report", str(bundle), "--format", "markdown")
    assert "**Verdict: PASS" not in done.stdout, done.stdout
    assert "INCONCLUSIVE" in done.stdout and "does not verify" in done.output


def without_case(bundle: Path, case: str) -> None:
    """Every trace of `case` removed from the bundle (its attempts, results, logs and the
    experiment copied into results.json), every digest recomputed: a bundle that never ran
    it, as far as its own files tell."""
    results = load(bundle / "results.json")
    results["experiment"]["cases"] = [
        c for c in results["experiment"]["cases"] if c["name"] != case
    ]
    results["attempts"] = [a for a in results["attempts"] if a["case"] != case]
    results["cases"] = [c for c in results["cases"] if c["case"] != case]
    save(bundle / "results.json", results)
    for log in sorted((bundle / "logs").rglob("*")):
        if log.is_dir() and log.name == case:
            shutil.rmtree(log)
    manifest = load(bundle / "manifest.json")
    manifest["attempts"] = [a for a in manifest["attempts"] if a["case"] != case]
    save(bundle / "manifest.json", manifest)
    rehash(bundle)


def test_a_case_removed_from_the_stored_experiment_is_caught_by_its_config(tmp_path):
    """verify, report and compare --from judge a bundle against the config file its
    manifest names, not the experiment copied into results.json; their first line says
    the evidence is tampered. Without the config file they say what they judged from."""
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("the C program needs gcc and make")
    conf = cprog(tmp_path, cases=("sum", "again"))
    bundle = tmp_path / "bundle"
    done = csorch("run", str(conf), "--backend", "asan", "--out", str(bundle),
                  "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    fine = csorch("verify", str(bundle), cwd=tmp_path)
    assert fine.returncode == 0, fine.stdout
    assert fine.stdout.splitlines()[:2] == [
        "evidence: unsigned: consistent, but anyone who can write could have re-hashed it",
        f"judged against its config file {conf}",
    ]
    without_case(bundle, "again")
    verified = csorch("verify", str(bundle), cwd=tmp_path)
    assert verified.returncode == ExitCode.FAIL, verified.stdout
    first = verified.stdout.splitlines()[0]
    assert first.startswith("evidence: tampered"), verified.stdout
    assert f"not its config file {conf}'s: no case(s) again" in first
    shown = csorch("report", str(bundle), "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0 and json.loads(shown.stdout)["verdict"] == "inconclusive"
    assert shown.stderr.splitlines()[0].startswith("evidence: tampered"), shown.stderr
    compared = csorch("compare", "--from", str(bundle), cwd=tmp_path)
    assert compared.returncode == ExitCode.INCONCLUSIVE, compared.stdout + compared.stderr
    assert compared.stdout.splitlines()[0].startswith("evidence: tampered")
    # the config file gone: the copy is all there is, and every reader says so
    conf.rename(tmp_path / "elsewhere.yaml")
    alone = csorch("verify", str(bundle), cwd=tmp_path)
    assert alone.returncode == 0, alone.stdout
    assert alone.stdout.splitlines()[1] == (
        f"its config file {conf} is not there: judged from the experiment copied into results.json"
    )


def test_a_cache_entry_rebuilt_since_the_run_is_not_checkable_not_tampered(tmp_path):
    """Builds need not be byte-reproducible: a genuine bundle whose cache entry was evicted
    and built again by a later run, into other bytes, has nothing left to check its
    binaries against. (Sandboxed, a build sees its tree at one path and comes out the same;
    the rebuild here runs unsandboxed, from its scratch directory, without the compile
    cache: the same key, other bytes.)"""
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("the C program needs gcc and make")
    cache = tmp_path / "cache"
    first, second = tmp_path / "first", tmp_path / "second"
    elsewhere = {"CSORCH_SANDBOX": "0", "CSORCH_NO_COMPILE_CACHE": "1"}
    for out, env in ((first, {}), (second, elsewhere)):
        shutil.rmtree(cache / "entries", ignore_errors=True)  # evicted: the next run builds
        done = csorch("run", str(E2E / "c-oob.yaml"), "--backend", "asan", "--out", str(out),
                      "--cache-dir", str(cache), cwd=tmp_path, **env)  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shas = [
        {b["variant"]: b["binaries"][0]["sha256"] for b in load(o / "manifest.json")["builds"]}
        for o in (first, second)
    ]
    assert shas[0] != shas[1]  # the same key, other bytes
    done = csorch("verify", str(first), "--problems-only", cwd=tmp_path)
    assert done.returncode == ExitCode.PASS, done.stdout
    assert done.stdout.splitlines()[0].startswith("evidence: unsigned")
    assert "not checkable" in done.stdout and "rebuilt since the run" in done.stdout


@pytest.mark.parametrize("rules", ["kept", "older"])
def test_a_fixs_opt_out_deleted_from_results_json_does_not_verify(tmp_path, rules):
    """A fix that hides the read from ASan (no_sanitize_address) is INCONCLUSIVE; deleting
    the opt-out from results.json, turning the verdict PASS and re-hashing the manifest
    is caught: the bundle keeps the fix's tree, and verify reads its opt-outs again. So
    is the same edit that also claims the opt-outs were read by an older csorch's rules
    (which verify does not hold a genuine older bundle to): its PASS does not stand."""
    hide = (E2E / "hide-oob-attribute.patch").as_posix()
    text = CPROG.replace("@E2E@/fix-oob.patch", hide)
    text = text.replace("@CASES@", "  - {name: sum, command: [./pick]}")
    made = config(tmp_path, "hidden.yaml", text.replace("@N@", "1").replace("@K@", "1"))
    bundle = tmp_path / "out"
    done = csorch("run", str(made), "--backend", "asan", "--out", str(bundle),
                  "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == ExitCode.INCONCLUSIVE, done.stdout[-3000:] + done.stderr[-3000:]
    assert invoke("verify", str(bundle)).exit_code == ExitCode.PASS
    results = load(bundle / "results.json")
    for b in results["builds"]:
        b["opt_outs"] = []
        if rules == "older":
            b["opt_out_rules"] = ""
    results["verdict"] = "pass"
    results["judgement"].update(verdict="pass", reasons=["fixed removes every target"])
    save(bundle / "results.json", results)
    rehash(bundle)
    done = invoke("verify", str(bundle), "--problems-only")
    assert done.exit_code == ExitCode.FAIL, done.output
    if rules == "kept":
        assert "records 0 checker opt-out(s) in the kept files of variant fixed" in done.output
        assert "no_sanitize_address pick.c:6" in done.output
    else:
        assert (
            "read by this csorch's opt-out rules, fix fixed adds no_sanitize_address (pick.c:6)"
            in done.output
            and "the recorded PASS does not stand" in done.output
        )
