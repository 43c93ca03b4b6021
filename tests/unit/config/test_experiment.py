"""config: the documented example loads; a table of bad configs, each with its message."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orchestrator.config import experiment as config
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import ConfigError
from orchestrator.model import BuildKind, CaseKind, Checker, Outcome, SourceKind

BASE = """\
name: demo
source: src
variants:
  - name: fixed
    build: jit
  - name: control
    patches: [bug.patch]
    build: jit
runs:
  - name: plain
    checker: none
  - name: memcheck
    checker: memcheck
    env: {PYTORCH_NO_CUDA_MEMORY_CACHING: 1}
cases:
  - tests/test_a.py
repeats: 2
expect:
  controls: [control]
  fix: fixed
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "bug.patch").write_text("--- a/x\n+++ b/x\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    return tmp_path


def write(tree: Path, text: str) -> Path:
    path = tree / "exp.yaml"
    path.write_text(text)
    return path


def test_base_config(tree: Path) -> None:
    e = load_experiment(write(tree, BASE))
    assert e.name == "demo" and e.config == tree / "exp.yaml"
    assert e.source.kind is SourceKind.PATH and e.source.location == str(tree / "src")
    assert [v.name for v in e.variants] == ["fixed", "control"]
    assert e.variants[1].patches == (tree / "bug.patch",)
    assert e.runs[1].checker is Checker.MEMCHECK
    assert e.runs[1].env == (("PYTORCH_NO_CUDA_MEMORY_CACHING", "1"),)
    assert e.cases[0].name == "test_a" and e.cases[0].pytest == (str(tree / "tests/test_a.py"),)
    assert e.repeats == 2 and e.timeout == 900.0
    assert e.expect is not None and e.expect.controls == ("control",) and e.expect.targets == ()


def test_the_documented_example_loads(tmp_path: Path) -> None:
    doc = config.__doc__ or ""
    block = doc.split("Paths are relative to the config file.\n")[1].split("\nSignature")[0]
    example = textwrap.dedent(block)
    root = tmp_path / "repo"
    for d in ("configs", "ext", "controls", "tests/regression"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "controls" / "rng-owner-scope.patch").write_text("")
    (root / "configs" / "cublas.xml").write_text(
        "<ComputeSanitizerOutput><record><kind>Api</kind><what><api>cublas.*</api></what>"
        "</record></ComputeSanitizerOutput>"
    )
    for t in ("test_rng_ownership.py", "test_sr_reference.py"):
        (root / "tests" / "regression" / t).write_text("")
    path = root / "configs" / "example.yaml"
    path.write_text(example)
    e = load_experiment(path)
    assert [v.build.kind for v in e.variants] == [BuildKind.JIT, BuildKind.JIT, BuildKind.WHEEL]
    assert e.variants[1].build.flags == ("-DQEXT_TRACE",)
    assert e.runs[1].options == ("--padding", "512") and e.runs[1].timeout == 1800.0
    assert e.runs[1].repeats == 4 and e.timeout == 900.0
    assert e.case_timeout == 120.0 and e.pytest_args == ("-x",)
    assert [s.kind for s in e.runs[1].suppressions] == ["Api"]
    assert [c.name for c in e.cases] == ["test_rng_ownership", "sr", "rng-unfused"]
    assert e.cases[1].marker == "not slow"
    assert e.cases[2].args == ("-k", "not fused")
    assert e.cases[2].args_for("asan") == ("-k", "not fused", "--qext-device", "cpu")
    assert e.cases[2].args_for("compute-sanitizer")[-1] == "cuda"
    assert e.expect is not None and e.expect.min_hits == 3
    assert e.expect.targets[0].function == "*nvfp4*"
    assert (e.expect.targets[1].checker, e.expect.targets[1].frame) == ("asan", "*nvfp4*")


def test_git_source_command_build_and_command_case(tree: Path) -> None:
    text = (
        BASE.replace("source: src", "source: {git: src, ref: v1.2, subdir: ext}")
        .replace(
            "    build: jit\n  - name: control",
            "    build: {kind: command, command: [make, bug], outputs: [bug], env: {CC: gcc}}\n"
            "  - name: control",
        )
        .replace("  - tests/test_a.py", "  - [./bug, 8]\n  - {name: twice, command: [./bug, '9']}")
    )
    e = load_experiment(write(tree, text))
    assert (e.source.kind, e.source.ref, e.source.subdir) == (SourceKind.GIT, "v1.2", "ext")
    build = e.variants[0].build
    assert build.kind is BuildKind.COMMAND and build.command == ("make", "bug")
    assert build.outputs == ("bug",) and build.env == (("CC", "gcc"),)
    assert [(c.name, c.kind, c.command) for c in e.cases] == [
        ("bug-8", CaseKind.COMMAND, ("./bug", "8")),
        ("twice", CaseKind.COMMAND, ("./bug", "9")),
    ]


def test_git_url_and_targets(tree: Path) -> None:
    text = BASE.replace("source: src", "source: {git: 'https://example.com/x.git'}") + (
        "  min_hits: 2\n"
        "  target:\n"
        "    - {checker: asan, kind: heap-use-after-free, function: 'quantize*'}\n"
        "    - {outcome: failed, case: 'test_*'}\n"
    )
    e = load_experiment(write(tree, text))
    assert e.source.location == "https://example.com/x.git" and e.source.ref == "HEAD"
    assert e.expect is not None and e.expect.min_hits == 2
    assert e.expect.targets[1].outcome is Outcome.FAILED


def sub(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


BAD = [
    # (id, config text, line, key, words the message must hold)
    ("typo", sub("repeats: 2", "repeat: 2"), 17, "repeat", "did you mean 'repeats'"),
    ("missing-name", sub("name: demo\n", ""), 1, "name", "missing"),
    ("name-not-text", sub("name: demo", "name: 5"), 1, "name", "found an integer (5)"),
    (
        "unsafe-variant",
        sub("name: fixed", "name: ../evil"),
        4,
        "variants[0].name",
        "not a safe name",
    ),
    (
        "duplicate-variant",
        sub("name: control", "name: Fixed"),
        6,
        "variants[1].name",
        "duplicate variant name 'Fixed' (first on line 4)",
    ),
    (
        "variants-mapping",
        sub("variants:\n  - name: fixed", "variants:\n  x: 1\n  y:\n  - name: fixed"),
        4,
        "variants",
        "expected a list",
    ),
    (
        "variant-typo",
        sub("patches: [bug.patch]", "patch: [bug.patch]"),
        7,
        "variants[1].patch",
        "did you mean 'patches'",
    ),
    (
        "build-kind",
        sub("build: jit", "build: jitt"),
        5,
        "variants[0].build",
        "'jitt' is not a build kind; choose one of: jit, wheel, pip, prebuilt, command",
    ),
    (
        "command-without-argv",
        sub("build: jit", "build: command"),
        5,
        "variants[0].build",
        "needs its argv",
    ),
    (
        "argv-on-jit",
        sub("build: jit", "build: {kind: jit, command: [make]}"),
        5,
        "variants[0].build.command",
        "applies to command builds only",
    ),
    (
        "flags-on-command",
        sub("build: jit", "build: {kind: command, command: [make], flags: [-g]}"),
        5,
        "variants[0].build.flags",
        "jit, wheel and pip builds only, not command",
    ),
    (
        "missing-patch",
        sub("[bug.patch]", "[nope.patch]"),
        7,
        "variants[1].patches[0]",
        "no such file",
    ),
    ("missing-source", sub("source: src", "source: nowhere"), 2, "source", "no such directory"),
    (
        "ref-on-path",
        sub("source: src", "source: {path: src, ref: v1}"),
        2,
        "source.ref",
        "applies to a git source only",
    ),
    (
        "path-and-git",
        sub("source: src", "source: {path: src, git: src}"),
        2,
        "source",
        "exactly one of 'path' or 'git'",
    ),
    (
        "subdir-escapes",
        sub("source: src", "source: {git: src, subdir: ../x}"),
        2,
        "source.subdir",
        "relative path inside",
    ),
    (
        "checker",
        sub("checker: memcheck", "checker: valgrind"),
        13,
        "runs[1].checker",
        "choose one of: none, memcheck, initcheck, racecheck, synccheck",
    ),
    (
        "asan-is-not-a-run-checker",
        sub("checker: memcheck", "checker: asan"),
        13,
        "runs[1].checker",
        "'asan' is a backend, not a run checker",
    ),
    (
        "reserved-option",
        sub("checker: memcheck", "checker: memcheck\n    options: [--log-file=x]"),
        14,
        "runs[1].options[0]",
        "--log-file is set by csorch",
    ),
    (
        "options-on-plain",
        sub("checker: none", "checker: none\n    options: [--padding, 1]"),
        12,
        "runs[0].options",
        "this run's checker is none",
    ),
    (
        "env-name",
        sub("{PYTORCH_NO_CUDA_MEMORY_CACHING: 1}", "{1BAD: x}"),
        14,
        "runs[1].env.1BAD",
        "not a valid environment variable name",
    ),
    (
        "env-value",
        sub("{PYTORCH_NO_CUDA_MEMORY_CACHING: 1}", "{X: [1, 2]}"),
        14,
        "runs[1].env.X",
        "expected a single value, found a list",
    ),
    (
        "env-bool",
        sub("{PYTORCH_NO_CUDA_MEMORY_CACHING: 1}", "{X: yes}"),
        14,
        "runs[1].env.X",
        "quote it",
    ),
    ("repeats-zero", sub("repeats: 2", "repeats: 0"), 17, "repeats", "at least 1"),
    (
        "timeout",
        sub("repeats: 2", "repeats: 2\ntimeout: soon"),
        18,
        "timeout",
        "expected a positive duration",
    ),
    (
        "no-cases",
        sub("cases:\n  - tests/test_a.py", "cases: []"),
        15,
        "cases",
        "needs at least one entry",
    ),
    (
        "missing-test",
        sub("tests/test_a.py", "tests/test_b.py::test_x"),
        16,
        "cases[0]",
        "no such test file or directory",
    ),
    (
        "pytest-and-command",
        sub("  - tests/test_a.py", "  - {pytest: tests, command: [x]}"),
        16,
        "cases[0]",
        "exactly one of 'pytest' or 'command'",
    ),
    (
        "marker-on-command",
        sub("  - tests/test_a.py", "  - {command: [x], marker: slow}"),
        16,
        "cases[0].marker",
        "pytest cases only",
    ),
    (
        "duplicate-case",
        sub("  - tests/test_a.py", "  - tests/test_a.py\n  - tests/test_a.py"),
        17,
        "cases[1]",
        "duplicate case name 'test_a'",
    ),
    (
        "unknown-control",
        sub("controls: [control]", "controls: [contrl]"),
        19,
        "expect.controls[0]",
        "no variant named 'contrl'; variants: control, fixed",
    ),
    (
        "fix-is-control",
        sub("fix: fixed", "fix: control"),
        20,
        "expect.fix",
        "cannot be both a control and the fix",
    ),
    (
        "min-hits",
        sub("fix: fixed", "fix: fixed\n  min_hits: 3"),
        21,
        "expect.min_hits",
        "min_hits 3 exceeds the 2 repeat(s) of run 'plain'",
    ),
    (
        "outcome-and-kind",
        sub("fix: fixed", "fix: fixed\n  target: {outcome: failed, kind: x}"),
        21,
        "expect.target.outcome",
        "cannot also match findings (kind)",
    ),
    (
        "outcome-passed",
        sub("fix: fixed", "fix: fixed\n  target: {outcome: passed}"),
        21,
        "expect.target.outcome",
        "choose one of: failed, error",
    ),
    (
        "unknown-run",
        sub("fix: fixed", "fix: fixed\n  target: {kind: x, run: nope}"),
        21,
        "expect.target.run",
        "no run named 'nope'",
    ),
    (
        "empty-target",
        sub("fix: fixed", "fix: fixed\n  target: {case: x}"),
        21,
        "expect.target",
        "at least one signature key or 'outcome'",
    ),
    (
        "target-watches-nothing",
        sub("  - name: plain\n    checker: none\n", "").replace(
            "fix: fixed", "fix: fixed\n  target: {outcome: failed}"
        ),
        19,
        "expect.target",
        "watches plain runs (checker: none), and the experiment has none",
    ),
    (
        "duplicate-key",
        sub("repeats: 2", "repeats: 2\nrepeats: 3"),
        18,
        "repeats",
        "duplicate key (first given on line 17)",
    ),
    (
        "backend-args-unknown-backend",
        sub("  - tests/test_a.py", "  - {pytest: tests/test_a.py, backend_args: {cuda: [-x]}}"),
        16,
        "cases[0].backend_args.cuda",
        "unknown backend; choose from: asan, compute-sanitizer",
    ),
    (
        "args-on-a-command-case",
        sub("  - tests/test_a.py", "  - {command: [./bug], args: [-k, x]}"),
        16,
        "cases[0].args",
        "applies to pytest cases only",
    ),
    ("bad-yaml", sub("name: demo", "name: [demo"), 2, "", "not valid YAML"),
    (
        "suppressions-missing",
        sub("    checker: memcheck\n", "    checker: memcheck\n    suppressions: [nope.xml]\n"),
        14,
        "runs[1].suppressions[0]",
        "no such file",
    ),
    (
        "suppressions-on-plain",
        sub("    checker: none\n", "    checker: none\n    suppressions: [bug.patch]\n"),
        12,
        "runs[0].suppressions",
        "this run has none",
    ),
    ("empty-file", "", 1, "", "the file is empty"),
    # hostile names (issue 11 item 5): a name becomes a directory under --out
    (
        "newline-variant",
        sub("name: fixed", 'name: "fixed\\n"'),
        4,
        "variants[0].name",
        "is not a safe name",
    ),
    (
        "slash-case",
        sub("  - tests/test_a.py", "  - {name: a/../../b, pytest: tests/test_a.py}"),
        16,
        "cases[0].name",
        "is not a safe name",
    ),
    ("dotdot-run", sub("name: plain", "name: .."), 10, "runs[0].name", "is not a safe name"),
    ("absolute-experiment", sub("name: demo", "name: /tmp/x"), 1, "name", "is not a safe name"),
    ("top-level-list", "- a\n- b\n", 1, "", "expected a mapping, found a list"),
    # presets and target processes (issue 23 item 5)
    (
        "unknown-preset",
        sub("checker: memcheck", "checker: memcheck\n    preset: ccl"),
        14,
        "runs[1].preset",
        "'ccl' is not allowed; choose one of: cccl, leaks, pool-allocator",
    ),
    (
        "preset-for-another-checker",
        sub("checker: memcheck", "checker: racecheck\n    preset: cccl"),
        14,
        "runs[1].preset",
        "preset cccl is for memcheck, not racecheck",
    ),
    (
        "preset-on-a-plain-run",
        sub("checker: none", "checker: none\n    preset: leaks"),
        12,
        "runs[0].preset",
        "this run's checker is none",
    ),
    (
        "bad-target-processes",
        sub("checker: memcheck", "checker: memcheck\n    target_processes: some"),
        14,
        "runs[1].target_processes",
        "choose one of: all, application-only",
    ),
    (
        "target-processes-as-option",
        sub("checker: memcheck", "checker: memcheck\n    options: [--target-processes, all]"),
        14,
        "runs[1].options[0]",
        "write the run's target_processes",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "key", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_config(tree: Path, text: str, line: int, key: str, words: str) -> None:
    path = write(tree, text)
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    error = info.value
    assert (error.file, error.line, error.key) == (path, line, key), str(error)
    assert words in str(error)
    assert str(error).startswith(f"{path}:{line}: ")


def test_a_preset_and_target_processes_load(tree: Path) -> None:
    text = sub(
        "checker: memcheck",
        "checker: memcheck\n    preset: cccl\n    target_processes: application-only",
    )
    run = load_experiment(write(tree, text)).runs[1]
    assert (run.preset, run.target_processes) == ("cccl", "application-only")
    assert load_experiment(write(tree, BASE)).runs[1].preset == ""


def test_unknown_key_lists_what_is_allowed(tree: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tree, sub("repeats: 2", "colour: red")))
    assert "allowed here: name, description, source, variants" in str(info.value)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_experiment(tmp_path / "missing.yaml")


def test_the_shipped_configs_target_the_captured_control_logs() -> None:
    from orchestrator.backends.asan import log as asan_log
    from orchestrator.backends.compute_sanitizer import log as cs_log
    from orchestrator.findings.signatures import matches, signature

    root = Path(__file__).resolve().parents[3]
    rng = load_experiment(root / "configs" / "nvfp4-rng-ownership.yaml")
    noop = load_experiment(root / "configs" / "noop-swizzle.yaml")
    for e in (rng, noop):
        assert [v.name for v in e.variants] == ["patched", "rebuilt", "installed"]
        assert [v.build.kind for v in e.variants] == [BuildKind.JIT, BuildKind.JIT, BuildKind.WHEEL]
        assert [r.checker for r in e.runs] == [Checker.NONE, Checker.MEMCHECK]
        assert dict(e.runs[1].env) == {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
        assert all(c.args_for("asan")[-2:] == ("--qext-device", "cpu") for c in e.cases)
        assert all(c.args_for("compute-sanitizer")[-1] == "cuda" for c in e.cases)
        assert e.expect is not None and e.expect.controls == ("rebuilt", "installed")
    fixtures = root / "tests" / "fixtures"
    logs = {
        "asan": asan_log.parse(
            (fixtures / "controls/cpu-asan/rng-owner-scope-asan.log").read_text().splitlines()
        ),
        "memcheck": cs_log.parse(
            (fixtures / "compute-sanitizer/h200/rng-owner-scope-memcheck-rng-64x96.log")
            .read_text()
            .splitlines()
        ),
    }
    assert rng.expect is not None
    for target in rng.expect.targets:
        found = logs[target.checker].findings
        assert found and all(matches(target, signature(f)) for f in found), target
    assert {t.outcome for t in noop.expect.targets} == {Outcome.FAILED}


# --- the cudabugs experiments (issue #10) -----------------------------------------------

CUDABUGS = {  # config -> (program, the checker run's checker and options)
    "cudabugs-oob-write": ("oob_write", Checker.MEMCHECK, ()),
    "cudabugs-misaligned": ("misaligned", Checker.MEMCHECK, ()),
    "cudabugs-leak": ("leak", Checker.MEMCHECK, ("--leak-check", "full")),
    "cudabugs-uninit": ("uninit", Checker.INITCHECK, ()),
    "cudabugs-race": ("race", Checker.RACECHECK, ()),
    "cudabugs-syncdiv": ("syncdiv", Checker.SYNCCHECK, ()),
    "cudabugs-api-error": ("api_error", Checker.MEMCHECK, ()),
}
# the H200's untrimmed logs of each program, fixed and control, under its checker
H200_LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "compute-sanitizer" / "cudabugs-h200"
H200_RUN = {"leak": "memcheck-leak-full"}  # the leak needs --leak-check full


@pytest.mark.parametrize("name", sorted(CUDABUGS))
def test_the_cudabugs_configs_load(name: str) -> None:
    root = Path(__file__).resolve().parents[3]
    program, checker, options = CUDABUGS[name]
    e = load_experiment(root / "configs" / f"{name}.yaml")
    assert e.name == name and e.source.location == str(root / "cudabugs")
    fixed, control = e.variants
    assert (fixed.name, fixed.patches) == ("fixed", ())
    assert control.name == "control"
    assert control.patches == (root / "cudabugs" / "controls" / f"{program}.patch",)
    assert control.patches[0].is_file()
    for v in e.variants:
        assert v.build.kind is BuildKind.COMMAND and v.build.command == ("make", program)
        assert v.build.outputs == (program,)
    plain, checked = e.runs
    assert plain.checker is Checker.NONE
    assert (checked.checker, checked.options) == (checker, options)
    assert [(c.kind, c.command) for c in e.cases] == [(CaseKind.COMMAND, (f"./{program}",))]
    assert e.expect is not None and (e.expect.controls, e.expect.fix) == (("control",), "fixed")
    gpu = [t for t in e.expect.targets if t.checker != "asan"]
    assert len(gpu) == 1 and gpu[0].checker == checker.value and gpu[0].kind and gpu[0].function


@pytest.mark.parametrize("name", sorted(CUDABUGS))
def test_each_cudabugs_target_matches_its_control_on_the_h200_and_not_the_fix(name: str) -> None:
    """The target, through the real parser and signature code, matches a finding in the
    control's H200 log, none in the fixed program's, and none in the other programs'
    control logs: kind names and culprit functions as csorch derives them from real
    output (syncdiv's top frame is the __syncwarp intrinsic; the kernel is the culprit)."""
    from orchestrator.backends.compute_sanitizer import log as cs_log
    from orchestrator.findings.signatures import matches, signature

    root = Path(__file__).resolve().parents[3]
    program, checker, _ = CUDABUGS[name]
    e = load_experiment(root / "configs" / f"{name}.yaml")
    (target,) = [t for t in e.expect.targets if t.checker == checker.value]  # type: ignore[union-attr]

    def signatures(prog: str, variant: str, tool: Checker) -> list:
        log = H200_LOGS / f"{prog}.{variant}.{H200_RUN.get(prog, tool.value)}.log"
        parsed = cs_log.parse(log.read_text().splitlines(), checker=tool)
        assert parsed.complete and not parsed.count_mismatch, log
        return [signature(f) for f in parsed.findings]

    assert any(matches(target, sig) for sig in signatures(program, "control", checker))
    assert not any(matches(target, sig) for sig in signatures(program, "fixed", checker))
    for other, (prog, tool, _) in CUDABUGS.items():
        if other != name:
            assert not any(matches(target, sig) for sig in signatures(prog, "control", tool))


def test_case_timeout_and_pytest_args(tree: Path) -> None:
    text = sub("repeats: 2", "repeats: 2\ncase_timeout: 90s\npytest_args: [-k, not slow]")
    text = text.replace("    checker: none\n", "    checker: none\n    case_timeout: 5\n", 1)
    e = load_experiment(write(tree, text))
    assert e.case_timeout == 90.0 and e.pytest_args == ("-k", "not slow")
    assert e.case_timeout_for(e.runs[0]) == 5.0 and e.case_timeout_for(e.runs[1]) == 90.0
    assert load_experiment(write(tree, BASE)).case_timeout_for(e.runs[1]) is None
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tree, sub("repeats: 2", "case_timeout: soon")))
    assert info.value.key == "case_timeout" and info.value.line == 17
