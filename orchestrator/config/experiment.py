"""Experiment configs: YAML in, a validated `Experiment` out.

Every error names the file, the line and the key, says what is allowed, and suggests
the closest key for a misspelt one. Paths are relative to the config file.

    name: nvfp4-rng-ownership            # letters, digits, '.', '_', '-'
    description: RNG state owners must outlive the quantization launch.
    source: ../ext                        # a directory, or:
    # source: {git: .., ref: v0.3.0, subdir: ext}   (ref defaults to HEAD)
    variants:
      - name: patched                     # also a directory name: [A-Za-z0-9._-]
        build: jit                        # jit | wheel | pip | prebuilt | command, or a mapping:
      - name: rebuilt
        patches: [../controls/rng-owner-scope.patch]   # applied in order
        build: {kind: jit, flags: [-DQEXT_TRACE]}
      - name: installed
        patches: [../controls/rng-owner-scope.patch]
        build: wheel
      # - name: c-fixed
      #   build: {kind: command, command: [make, bug], outputs: [bug], env: {CC: gcc}}
      #   source: {git: ../subject, ref: fixed}   (a variant may override the source)
    runs:
      - name: plain                       # the caching allocator stays on
        checker: none
      - name: memcheck                    # none | memcheck | initcheck | racecheck | synccheck
        checker: memcheck
        options: [--padding, 512]         # extra compute-sanitizer options
        preset: cccl                      # a named set of them (config/schema.py: PRESETS)
        target_processes: all             # or application-only (default: the tool's, all)
        suppressions: [cublas.xml]        # the tool's suppression XML: matches stay, marked
        env: {PYTORCH_NO_CUDA_MEMORY_CACHING: 1}
        repeats: 4                        # overrides the experiment's
        timeout: 30m
    cases:
      - ../tests/regression/test_rng_ownership.py          # a pytest path or node id
      - {name: sr, pytest: ../tests/regression/test_sr_reference.py, marker: "not slow"}
      - name: rng-unfused                 # extra pytest args, and args per backend
        pytest: ../tests/regression/test_rng_ownership.py
        args: [-k, not fused]
        backend_args: {asan: [--qext-device, cpu], compute-sanitizer: [--qext-device, cuda]}
      # - [./bug, "8"]                    # a command (argv), run in the variant's tree
    repeats: 1                            # N, default 1
    timeout: 15m                          # per attempt: seconds or 90s / 10m / 2h
    case_timeout: 2m                      # per pytest case (also per run): a hung test
                                          # ends as one inconclusive case, the rest run on
    pytest_args: [-x]                     # for every pytest case; csorch adds -p no:xdist
                                          # unless these or a case's args ask for xdist (-n)
    expect:
      controls: [rebuilt, installed]      # must show the target...
      fix: patched                        # ...which this variant must not show
      min_hits: 3                         # k of N (default: every repeat)
      target:                             # omit: whatever every control reproduces
        - {checker: memcheck, kind: invalid-access, function: "*nvfp4*"}    # string
        - {checker: asan, kind: heap-use-after-free, frame: "*nvfp4*"}      # fields: globs
      # target: {outcome: failed, case: "*replay*"}   (a regression instead of a finding)
    executor: local                       # or slurm; the slurm: block is in config/slurm.py

Signature targets watch runs with a checker and outcome targets plain runs, unless a
target names its `run`; a target that names its `checker` counts only where that tool
ran (give a memcheck and an asan target to serve both backends). A config may describe
an experiment without `expect`; it is then tabulated but not judged.

Builds (run/build.py; the kinds and the environment's keys are in config/builds.py, and
docs/your-extension.md walks a project of your own through them): `jit` runs the subject's
build description, a Python script inside the variant's tree (`description`; default: the
tree's only `build.py` or `*/build.py`), as `python SCRIPT --root TREE --build-dir B
--package-dir P [--sanitize address]`; the contract for any subject is that it leaves an
importable package directory in P, which goes first on the cases' PYTHONPATH (qext's is
`qext/build.py`). `wheel` runs `pip wheel TREE --no-deps --no-build-isolation` and installs
the wheel into a private directory with `pip install --no-deps --no-index --target P`;
`pip` runs `pip install --no-deps --no-build-isolation --no-index --target P TREE`;
`prebuilt` installs a release binary unchanged (no patches). `command` runs its argv in the
tree; command cases then run in the built tree, and pytest cases import from its
`import_path` (nothing by default). Sanitizer and `flags` reach the compilers through
CFLAGS, CXXFLAGS and LDFLAGS (NVCC_APPEND_FLAGS for nvcc), and CSORCH_SANITIZE names the
sanitizer ("address" or empty) for every kind; CSORCH_VERBOSE=1 asks a description to print
its compiler command lines (qext's passes verbose=True to torch; `wheel` and `pip` run pip
with -v), so that the build log shows how each file was compiled.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

from orchestrator.config import builds, sanitizer_options
from orchestrator.config.expectations import expectations
from orchestrator.config.nodes import View, load
from orchestrator.config.schema import (
    BACKENDS,
    CASE,
    ENV_NAME_RE,
    PRESETS,
    RESERVED_OPTIONS,
    RUN,
    SOURCE,
    TARGET_PROCESSES,
    TOP,
    URL_RE,
    VARIANT,
)
from orchestrator.config.slurm import SlurmSettings, executor_of
from orchestrator.config.slurm import read as read_slurm
from orchestrator.errors import ConfigError
from orchestrator.files import PATCH, special_kind
from orchestrator.findings import suppressions
from orchestrator.model import (
    RUN_CHECKERS,
    BuildKind,
    Case,
    CaseKind,
    CasesFrom,
    Checker,
    Env,
    Experiment,
    Run,
    SourceKind,
    SourceSpec,
    Suppression,
    Variant,
)
from orchestrator.model.experiment import MAX_ATTEMPTS, MAX_REPEATS


def load_experiment(path: Path | str) -> Experiment:
    """Read and validate an experiment config; raises ConfigError."""
    path = Path(path).resolve()
    root = load(path)
    if root.is_mapping and "experiments" in root.entries() and "variants" not in root.entries():
        raise ConfigError(
            path,
            None,
            "",
            "this is a gate config; an experiment config (source, variants, runs, cases) "
            "was expected here",
            hint="a gate lists experiment configs, not gate configs (itself included)",
        )
    return _Reader(path).experiment(root)


def only_cases(experiment: Experiment, names: Sequence[str]) -> Experiment:
    """The experiment restricted to the named cases (all of them when `names` is empty);
    ConfigError for a name the config does not have."""
    if not names:
        return experiment
    known = [c.name for c in experiment.cases]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(
            experiment.config or experiment.name,
            None,
            "cases",
            f"no case named {unknown[0]!r}",
            hint="cases: " + ", ".join(known),
        )
    return dataclasses.replace(
        experiment, cases=tuple(c for c in experiment.cases if c.name in names)
    )


def _choice(view: View, enum: type, allowed: tuple) -> object:
    return enum(view.choice([a.value for a in allowed]))


def _env(view: View) -> Env:
    pairs = []
    for key, value in view.entries().items():
        if not ENV_NAME_RE.match(key):
            raise value.error("not a valid environment variable name")
        problem = sanitizer_options.env_problem(key, value.word())
        if problem:
            raise value.error(problem, hint="write NAME=VALUE items; quote a value with ' or \"")
        pairs.append((key, value.word()))
    return tuple(sorted(pairs))


def _marker(view: View) -> str:
    """A pytest marker expression: never one that starts with '-', which pytest's `-m`
    would refuse (or read as its next option) rather than take as the expression."""
    text = view.text("a marker expression")
    if text.lstrip().startswith("-"):
        raise view.error(
            f"{text!r} is no marker expression: pytest's -m would read it as an option",
            hint="write an expression of marker names: not slow, gpu and not flaky",
        )
    return text


def _backend_args(view: View) -> tuple[tuple[str, tuple[str, ...]], ...]:
    pairs = []
    for key, value in view.entries().items():
        if key not in BACKENDS:
            raise value.error(f"unknown backend; choose from: {', '.join(BACKENDS)}")
        pairs.append((key, value.words()))
    return tuple(sorted(pairs))


def _unique(views_and_names: list[tuple[View, str]], what: str) -> None:
    seen: dict[str, View] = {}
    for view, name in views_and_names:
        if view.is_mapping:  # point at the name itself when it was written out
            view = view.entries().get("name", view)
        key = name.casefold()  # variant names become directories: also on macOS
        if key in seen:
            raise view.error(f"duplicate {what} name '{name}' (first on line {seen[key].line})")
        seen[key] = view


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")
    return slug[:64].rstrip("-._") or "case"


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.base = path.parent

    def experiment(self, root: View) -> Experiment:
        f = root.mapping(TOP)
        name = f.require("name").name()
        source = self.source(f.require("source"))
        variants = [self.variant(v) for v in f.require("variants").items()]
        runs = [self.run(r) for r in f.require("runs").items()]
        self.cases_from = builds.cases_from(f.get("cases_from"))
        cases = [self.case(c) for c in f.require("cases").items()]
        for key, items in (("variants", variants), ("runs", runs), ("cases", cases)):
            if not items:
                raise f.require(key).error(f"needs at least one entry ({TOP[key]})")
        _unique(
            [(v, x.name) for v, x in zip(f.require("variants").items(), variants, strict=True)],
            "variant",
        )
        _unique([(v, x.name) for v, x in zip(f.require("runs").items(), runs, strict=True)], "run")
        _unique(
            [(v, x.name) for v, x in zip(f.require("cases").items(), cases, strict=True)], "case"
        )
        repeats = f.get("repeats")
        timeout = f.get("timeout")
        description = f.get("description")
        slurm = f.get("slurm")
        case_timeout, pytest_args = f.get("case_timeout"), f.get("pytest_args")
        experiment = Experiment(
            name=name,
            source=source,
            variants=tuple(variants),
            runs=tuple(runs),
            cases=tuple(cases),
            repeats=repeats.integer(minimum=1, maximum=MAX_REPEATS) if repeats else 1,
            timeout=timeout.duration() if timeout else 900.0,
            description=description.text() if description else "",
            config=self.path,
            executor=executor_of(f.get("executor")),
            slurm=read_slurm(slurm) if slurm else SlurmSettings(),
            case_timeout=case_timeout.duration() if case_timeout else None,
            pytest_args=pytest_args.words() if pytest_args else (),
            environment=builds.environment(f),
            cases_from=self.cases_from,
        )
        if experiment.attempts() > MAX_ATTEMPTS:
            raise ConfigError(
                self.path,
                None,
                "repeats",
                f"the experiment plans {experiment.attempts():,} attempts (variants x runs x "
                f"repeats x cases); at most {MAX_ATTEMPTS:,}",
                hint="lower repeats, or split the experiment",
            )
        expect = f.get("expect")
        if expect is None:
            return experiment
        return dataclasses.replace(experiment, expect=expectations(expect, experiment))

    def source(self, view: View) -> SourceSpec:
        if not view.is_mapping:
            return SourceSpec(SourceKind.PATH, str(view.path(directory=True)))
        f = view.mapping(SOURCE)
        path, git = f.get("path"), f.get("git")
        if (path is None) == (git is None):
            raise view.error("give exactly one of 'path' or 'git'")
        if path is not None:
            for key in ("ref", "subdir"):
                if key in f:
                    raise f.require(key).error(
                        "applies to a git source only", hint="for a directory, point 'path' at it"
                    )
            return SourceSpec(SourceKind.PATH, str(path.path(directory=True)))
        assert git is not None
        text = git.text("a repository")
        location = text if URL_RE.match(text) else str(git.path(directory=True))
        ref = f.get("ref")
        subdir = f.get("subdir")
        sub = subdir.text("a directory") if subdir else ""
        if sub and (sub.startswith("/") or ".." in Path(sub).parts):
            raise subdir.error("must be a relative path inside the repository")  # type: ignore[union-attr]
        return SourceSpec(SourceKind.GIT, location, ref.text("a ref") if ref else "HEAD", sub)

    def variant(self, view: View) -> Variant:
        f = view.mapping(VARIANT)
        patches = f.get("patches")
        build = f.require("build")
        source = f.get("source")
        description = f.get("description")
        spec = builds.read(build)
        if spec.kind is BuildKind.PREBUILT and patches is not None:
            raise patches.error(
                "a prebuilt control is the release binary unchanged: it takes no patches",
                hint="to test a patched build, give this variant build: pip (or wheel)",
            )
        return Variant(
            name=f.require("name").name(),
            build=spec,
            patches=tuple(p.path(directory=False, limit=PATCH.limit) for p in patches.items())
            if patches
            else (),
            source=self.source(source) if source else None,
            description=description.text() if description else "",
        )

    def run(self, view: View) -> Run:
        f = view.mapping(RUN)
        if f.require("checker").value() == Checker.ASAN.value:
            raise f.require("checker").error(
                "'asan' is a backend, not a run checker",
                hint="write memcheck: ASan stands in for it with --backend asan (or auto on a "
                "host without a GPU)",
            )
        checker = _choice(f.require("checker"), Checker, RUN_CHECKERS)
        options = f.get("options")
        opts = options.words() if options else ()
        if opts and checker is Checker.NONE:
            raise options.error("options are checker options; this run's checker is none")  # type: ignore[union-attr]
        for item in options.items() if options and options.is_list else ():
            flag = item.word().split("=", 1)[0]
            if flag in RESERVED_OPTIONS:
                raise item.error(f"{flag} is set by csorch: {RESERVED_OPTIONS[flag]}")
        env, repeats = f.get("env"), f.get("repeats")
        timeout, description = f.get("timeout"), f.get("description")
        preset, targets = f.get("preset"), f.get("target_processes")
        for key, view in (("preset", preset), ("target_processes", targets)):
            if view is not None and checker is Checker.NONE:
                raise view.error(f"{key} sets checker options; this run's checker is none")
        name = preset.choice(list(PRESETS)) if preset else ""
        if name and checker.value not in PRESETS[name].checkers:  # type: ignore[attr-defined]
            raise preset.error(  # type: ignore[union-attr]
                f"preset {name} is for {', '.join(PRESETS[name].checkers)}, not {checker.value}",  # type: ignore[attr-defined]
                hint="drop it from this run, or pick a preset for its checker",
            )
        case_timeout = f.get("case_timeout")
        return Run(
            name=f.require("name").name(),
            checker=checker,  # type: ignore[arg-type]
            options=opts,
            preset=name,
            target_processes=targets.choice(list(TARGET_PROCESSES)) if targets else "",
            suppressions=self._suppressions(f.get("suppressions"), checker),  # type: ignore[arg-type]
            env=_env(env) if env else (),
            repeats=repeats.integer(minimum=1, maximum=MAX_REPEATS) if repeats else None,
            timeout=timeout.duration() if timeout else None,
            description=description.text() if description else "",
            case_timeout=case_timeout.duration() if case_timeout else None,
        )

    def _suppressions(self, view: View | None, checker: Checker) -> tuple[Suppression, ...]:
        """The records of the run's suppression files (each file checked and read now)."""
        if view is None:
            return ()
        if checker is Checker.NONE:
            raise view.error("suppressions apply to a checker's findings; this run has none")
        files = [item.path(directory=False) for item in (view.items() if view.is_list else [view])]
        return tuple(s for path in files for s in suppressions.load(path))

    def _pytest_target(self, view: View) -> str:
        text = view.word()
        file_part, sep, rest = text.partition("::")
        if self.cases_from is CasesFrom.VARIANT:
            # checked once each variant's tree exists (run/builds/cases.py)
            if file_part.startswith("/") or ".." in Path(file_part).parts:
                raise view.error(
                    "under cases_from: variant, a case is a path inside the variant's tree",
                    hint="write it relative to the tree's root: test/test_extension.py",
                )
            return text
        try:
            path = (self.base / file_part).resolve()
            exists = path.exists()
            kind = "" if path.is_dir() else special_kind(path.stat().st_mode) if exists else ""
        except (OSError, ValueError) as exc:  # a name too long, a NUL byte
            raise view.error(f"not a usable path: {exc}") from None
        if not exists:
            raise view.error(f"no such test file or directory: {path}")
        if kind:  # pytest would block on a pipe, and csorch digests every case file
            raise view.error(
                f"{path} is {kind}, not a test file or directory",
                hint="give a regular file or a directory (csorch reads no pipe, device or socket)",
            )
        return str(path) + sep + rest

    def case(self, view: View) -> Case:
        if view.is_list:
            argv = view.words(allow_single=False)
            if not argv:
                raise view.error("a command case needs a non-empty argv")
            return Case(
                _slug(" ".join([Path(argv[0]).name, *argv[1:]])), CaseKind.COMMAND, command=argv
            )
        if not view.is_mapping:
            target = self._pytest_target(view)
            return Case(
                _slug(Path(view.word()).name.replace(".py", "")), CaseKind.PYTEST, pytest=(target,)
            )
        f = view.mapping(CASE)
        pytest, command = f.get("pytest"), f.get("command")
        if (pytest is None) == (command is None):
            raise view.error("give exactly one of 'pytest' or 'command'")
        name = f.get("name")
        if command is not None:
            argv = command.words(allow_single=False)
            if not argv:
                raise command.error("must not be empty")
            for key in ("marker", "args", "backend_args"):
                if key in f:
                    raise f.require(key).error("applies to pytest cases only")
            derived = _slug(" ".join([Path(argv[0]).name, *argv[1:]]))
            return Case(name.name() if name else derived, CaseKind.COMMAND, command=argv)
        assert pytest is not None
        items = list(pytest.items()) if pytest.is_list else [pytest]
        if not items:
            raise pytest.error("needs at least one path or node id")
        marker, args, per_backend = f.get("marker"), f.get("args"), f.get("backend_args")
        derived = _slug(Path(items[0].word()).name.replace(".py", ""))
        return Case(
            name=name.name() if name else derived,
            kind=CaseKind.PYTEST,
            pytest=tuple(self._pytest_target(i) for i in items),
            marker=_marker(marker) if marker else "",
            args=args.words() if args else (),
            backend_args=_backend_args(per_backend) if per_backend else (),
        )
