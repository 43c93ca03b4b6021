"""A run as asked, from the command line or from Python: one record that `csorch run`,
`csorch gate` and `csorch bisect` build (`Request`, its `Settings`), one way to resume one
(`resumed`: the saved settings under the ones given again; a bisection's from its own
state), one `prepare` (the checks, the config loaded, the backend and devices chosen) and
the library entry of `csorch run` (`run`).

What a resume starts again from is saved with the records' own serializer
(model/record.py): a run's in its journal's begin line (`resume.settings`, written by the
pipeline), a gate's in OUT/gate-run.json. Both formats are the ones csorch wrote before
this module, so a run or gate interrupted by an earlier version resumes.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from orchestrator import cache, host
from orchestrator.backends import Choice
from orchestrator.bundle import signing
from orchestrator.config.experiment import load_experiment, only_cases
from orchestrator.errors import CsorchError
from orchestrator.executors.choice import check_local_only, executor_for
from orchestrator.files import atomic_write, load_json
from orchestrator.model import Experiment
from orchestrator.model.job import Fanout
from orchestrator.model.record import Record
from orchestrator.run import carried, journal, options, places, runner
from orchestrator.run.events import QUIET, Listener
from orchestrator.run.options import Options

#: what `csorch gate --resume OUT` starts again from: the configs and settings of the gate
GATE_RUN = "gate-run.json"
GATE_RUN_SCHEMA = "csorch.gate-run/1"


@dataclass(frozen=True)
class Settings(Record):
    """How a run or a gate runs beyond its configs (saved for a resume)."""

    backend: str = "auto"  # auto | compute-sanitizer | asan
    repeat: int | None = None  # N for every run
    jobs: int | None = None  # child processes at once (default: options.default_jobs())
    devices: str | None = None  # --devices as given: "0,1", "all"
    fanout: Fanout = Fanout.SHARD
    executor: str | None = None  # local | slurm (default: each experiment's own)
    slurm: tuple[str, ...] | None = None  # KEY=VALUE over the configs' slurm: blocks
    cache: Path = cache.DEFAULT_DIR
    cases: tuple[str, ...] = ()  # run only these config cases (csorch run --case)
    keep_work: bool = False  # keep the scratch trees
    # a gate's experiments all at once (they share one pool of `jobs` slots); False: one
    # at a time
    together: bool = True
    # a gate on a host that cannot sandbox its builds and attempts may still pass
    # (`gate --allow-unsandboxed`)
    allow_unsandboxed: bool = False
    # the SSH key a gate or a run signs its manifest with (`--sign`), kept so that its
    # resume signs again
    sign: Path | None = None
    # a stored bundle (run) or gate directory (run, gate) whose verdicts carry where this
    # run's trees and builds change nothing executable (run/carried.py)
    carry_from: Path | None = None

    def over(self, saved: Settings) -> Settings:
        """These settings (given again) over `saved` ones: each one given (not left at its
        default) wins, the rest are the saved ones; the fanout is always the saved one
        (the journal's attempts were placed by it)."""
        default = Settings()
        merged = {
            f.name: getattr(self, f.name)
            if getattr(self, f.name) != getattr(default, f.name)
            else getattr(saved, f.name)
            for f in dataclasses.fields(Settings)
        }
        return Settings(**{**merged, "fanout": saved.fanout})


@dataclass(frozen=True)
class Request(Record):
    """A run as asked: its configs (`csorch run`: one), settings, and either a new `out`
    (None: results/<name>-<time>) or the `resume` of an interrupted one."""

    configs: tuple[Path, ...] = ()
    settings: Settings = Settings()
    out: Path | None = None
    resume: Path | None = None


R = TypeVar("R")


def saved(verb: str, resume: Path) -> tuple[tuple[Path, ...], Settings]:
    """The configs and settings the `verb` (run, gate) kept in `resume` began with;
    ResumeError when there is none or it cannot be read."""
    if verb == "gate":
        return _gate_saved(resume)
    given = journal.Journal.read(resume).settings
    config = str(given.get("config", ""))
    return (Path(config),) if config else (), _from_run(given)


def _from_run(doc: dict[str, Any]) -> Settings:
    """A run's settings as its journal's begin line keeps them (`resume.settings`)."""
    kept = Settings(
        backend=str(doc.get("backend", "auto")),
        repeat=doc.get("repeat"),
        jobs=doc.get("jobs"),
        devices=",".join(doc.get("devices", [])) or None,
        cases=tuple(doc.get("cases", [])),
        sign=Path(str(doc["sign"])) if doc.get("sign") else None,
    )
    if doc.get("fanout"):
        kept = dataclasses.replace(kept, fanout=Fanout(doc["fanout"]))
    if doc.get("cache"):
        kept = dataclasses.replace(kept, cache=Path(str(doc["cache"])))
    return kept


def _gate_saved(resume: Path) -> tuple[tuple[Path, ...], Settings]:
    path = resume / GATE_RUN
    try:
        doc = load_json(path)
    except FileNotFoundError:
        raise journal.ResumeError(
            f"{resume} holds no gate to resume (no {GATE_RUN})",
            hint="give the --out of a `csorch gate` that was interrupted",
        ) from None
    except (OSError, ValueError) as exc:
        raise journal.ResumeError(f"{path} cannot be read: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != GATE_RUN_SCHEMA:
        raise journal.ResumeError(f"{path} is not a {GATE_RUN_SCHEMA} record")
    names = {f.name for f in dataclasses.fields(Settings)}
    try:
        # a gate-run.json keeps the settings beside its configs (older ones only some)
        kept = Settings.from_dict({k: v for k, v in doc.items() if k in names and v is not None})
        configs = tuple(Path(c) for c in doc["configs"])
    except (KeyError, TypeError, ValueError) as exc:
        raise journal.ResumeError(f"{path} is not a {GATE_RUN_SCHEMA} record: {exc}") from None
    return configs, kept


def save_gate(out: Path, configs: tuple[Path, ...], settings: Settings) -> None:
    """Keep what `csorch gate --resume OUT` needs in `out` (OSError if it cannot)."""
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "schema": GATE_RUN_SCHEMA,
        "configs": [str(c.resolve()) for c in configs],
        **settings.to_dict(),
        "cache": str(settings.cache.resolve()),
        "resume": journal.resume_command("gate", out),
    }
    atomic_write(out / GATE_RUN, json.dumps(record, indent=1))


def resumed(request: R, verb: str, kept: tuple[tuple[Path, ...], Settings] | None = None) -> R:
    """`request` (a run's or a gate's, with configs, settings, out and resume) as the
    `verb` it resumes began: the saved configs unless given again, the saved settings
    under the ones given, and its out the resumed directory. CsorchError for an --out
    that is another directory. `kept`: the configs and settings saved, when the verb
    reads its own record (a bisection's state); else `saved(verb, resume)`."""
    resume: Path = request.resume  # type: ignore[attr-defined]
    out: Path | None = request.out  # type: ignore[attr-defined]
    configs, kept_settings = kept or saved(verb, resume)
    if out is not None and places.resolved(out) != places.resolved(resume):
        raise CsorchError(
            f"--out {out} with --resume {resume}: a resume continues the {verb} in its own "
            "directory",
            hint=f"drop --out: {journal.resume_command(verb, resume)}",
        )
    return dataclasses.replace(
        request,  # type: ignore[type-var]
        configs=request.configs or configs,  # type: ignore[attr-defined]
        settings=request.settings.over(kept_settings),  # type: ignore[attr-defined]
        out=resume,
    )


def check_new(out: Path, verb: str) -> None:
    """CsorchError unless `out` can take a new run or gate (an interrupted one's resume
    command is named)."""
    places.nameable(out, "--out")  # before any stat of it (ENAMETOOLONG)
    try:
        options.check_out(out)
    except CsorchError as exc:
        # a bundle's manifest hashes every log in it: old files would pass as evidence
        marker = GATE_RUN if verb == "gate" else journal.JOURNAL
        if (out / marker).is_file():
            exc.hint += f", or continue that {verb}: {journal.resume_command(verb, out)}"
        raise


@dataclass(frozen=True)
class Prepared:
    """A run ready to start: its experiment, options, the host's facts and the backend
    chosen (and why)."""

    experiment: Experiment
    options: Options
    facts: host.Facts
    choice: Choice


def prepare(request: Request) -> Prepared:
    """The request checked, resumed when it is a resume, its config loaded, its backend,
    executor and devices chosen: CsorchError for anything wrong, before any work."""
    if request.resume is not None:
        request = resumed(request, "run")
    if not request.configs:
        raise CsorchError("give CONFIG (or --resume OUT)", hint="csorch run CONFIG [--out DIR]")
    s, resuming, out = request.settings, request.resume is not None, request.out
    options.check_backend(s.backend)
    carried.check_source(s.carry_from, out, resuming)
    if not resuming and out is not None:
        check_new(out, "run")
    places.check_directory(s.cache, "--cache-dir")
    experiment = only_cases(load_experiment(request.configs[0]), list(s.cases))
    # the flags first (pure), then the places (which ask git where the sources' own
    # repositories keep their .git)
    options.check_repeat(experiment, s.repeat)
    runner = executor_for(experiment, s.executor, list(s.slurm) if s.slurm else None)
    check_local_only(runner, s.devices)
    places.check_cache(s.cache, places.sources([experiment]))
    if out is not None:
        places.check_out(
            out, sources=places.sources([experiment]), cache=s.cache, resuming=resuming
        )
    choice, facts = options.choose_backend(s.backend, options.interpreter_of([experiment]))
    devices = (
        options.resolve_devices(s.devices, choice.backend, facts.fast) if runner is None else ()
    )
    made = options.make(
        choice,
        out or options.default_out(experiment.name),
        cache=s.cache,
        jobs=s.jobs,
        devices=devices,
        fanout=s.fanout,
        repeat=s.repeat,
        keep_work=s.keep_work,
        executor=runner,
        resume=resuming,
        selected=s.cases,
        carry_from=carried.source_for(s.carry_from, experiment.name),
        sign=s.sign.resolve() if s.sign is not None else None,
    )
    if made.sign is not None and not made.sign.is_file():  # a resume's saved key, say
        raise CsorchError(
            f"--sign {made.sign}: no such key file",
            hint="an SSH private key (a resumed run signs with the key it began with; "
            "--sign KEY gives another)",
        )
    return Prepared(experiment, made, facts, choice)


def run(request: Request, listener: Listener = QUIET) -> runner.RunResult:
    """`csorch run` from Python: the request prepared, then its experiment run into its
    bundle (`execute`). CsorchError for bad input or a resume refused (nothing run)."""
    ready = prepare(request)
    listener.backend(ready.choice)
    result = execute(ready.experiment, ready.options, ready.facts, listener)
    if ready.options.sign is not None:  # last: the manifest is final once the run returned
        signing.sign(result.bundle, ready.options.sign)
    return result


def execute(
    experiment: Experiment, made: Options, facts: host.Facts, listener: Listener = QUIET
) -> runner.RunResult:
    """One experiment run into its bundle `made.out`, with the errors a caller maps:
    CsorchError for a resume refused or host facts that contradict each other,
    journal.Interrupted on Ctrl-C or SIGTERM, journal.NotWritten when the bundle or the
    journal cannot be written (both name the command that resumes)."""
    try:
        return runner.run_experiment(experiment, made, facts, listener)
    except KeyboardInterrupt:
        raise journal.Interrupted("run", made.out) from None
    except OSError as exc:  # the disk is full, the bundle directory went away
        raise journal.NotWritten(exc, "run", made.out) from None
