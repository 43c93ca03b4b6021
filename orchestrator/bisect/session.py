"""A bisection as asked (the command line's or a saved state's), made ready for its first
probe (`prepare`), and the tree one `csorch probe` judges (`probe_spec`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from orchestrator import cache, host
from orchestrator.bisect import driver, evaluator, history
from orchestrator.bisect.state import Mark
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import CsorchError
from orchestrator.files import CONFIG, file_digest
from orchestrator.model import SourceKind, SourceSpec
from orchestrator.run import options, places, request
from orchestrator.run.request import Request, Settings


def stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


@dataclass(frozen=True)
class Asked:
    """The search as the command line (or a saved state) gives it."""

    config: Path
    good: str
    bad: str
    repo: Path | None = None
    subdir: str | None = None
    find_fix: bool = False
    backend: str = "auto"
    variant: str | None = None
    repeat: int | None = None


def resumed(
    resume: Path,
    cache_dir: Path | None,
    jobs: int | None,
    probes: int | None = None,
    out: Path | None = None,
) -> tuple[Asked, Path, int, int]:
    """The saved search in `resume`, and its settings (cache, jobs, probes) unless given
    again: the one resume of a run request (`request.resumed`), from the bisection's
    state. CsorchError for an `out` other than `resume`."""
    old = driver.load(resume)
    if old is None:
        raise CsorchError(f"{resume} holds no bisection ({driver.STATE} is missing)")
    s = old.search
    if not s.config.is_file() or file_digest(s.config, CONFIG) != s.config_sha256:
        raise CsorchError(
            f"{s.config} changed since the bisection started",
            hint="restore it, or start a new bisection with a new --out",
        )
    saved = old.settings
    kept = Settings(backend=s.backend, repeat=s.repeat, jobs=saved.jobs, cache=saved.cache)
    given = Settings(jobs=jobs, cache=cache_dir or cache.DEFAULT_DIR)
    asked = request.resumed(
        Request(settings=given, out=out, resume=resume), "bisect", ((s.config,), kept)
    )
    settings = asked.settings
    search = Asked(
        s.config, s.good, s.bad, Path(s.repo), s.subdir, s.find_fix, s.backend, s.variant, s.repeat
    )
    return search, settings.cache, settings.jobs or saved.jobs, probes or saved.probes


@dataclass(frozen=True)
class Prepared:
    """Everything a bisection needs before its first probe."""

    out: Path
    state: driver.State
    subject: evaluator.Subject
    facts: host.Facts
    notes: tuple[str, ...] = ()  # a resume's steps whose record was not believed


def prepare(
    asked: Asked,
    out_dir: Path | None,
    cache_dir: Path | None,
    jobs: int | None,
    probes: int = 1,
) -> Prepared:
    """The search resolved against the repository and the host, its state begun (or the
    same search's resumed) in `out_dir`, `probes` commits a round; CsorchError on bad
    input."""
    experiment = load_experiment(asked.config)
    choice, facts = options.choose_backend(asked.backend, options.interpreter_of([experiment]))
    subj = evaluator.subject(experiment, asked.variant, choice.backend)
    repo, sub = evaluator.locate(experiment, subj.variant, asked.repo, asked.subdir)
    if not (Path(repo) / sub).resolve().is_relative_to(Path(repo).resolve()):
        raise CsorchError(
            f"--subdir {sub} leads outside the repository {repo}",
            hint="give a directory inside the repository",
        )
    good, bad = history.resolve(repo, asked.good), history.resolve(repo, asked.bad)
    commits = history.chain(repo, good, bad)
    # the repository bisected is the user's, too, where --repo names another than the config
    trees = (*places.sources([experiment]), Path(repo))
    places.check_directory(Path(cache_dir or cache.DEFAULT_DIR), "--cache-dir")
    places.check_cache(Path(cache_dir or cache.DEFAULT_DIR), trees)
    if out_dir is not None:
        places.check_out(
            out_dir,
            sources=trees,
            cache=Path(cache_dir or cache.DEFAULT_DIR),
            resuming=(out_dir / driver.STATE).is_file(),
        )
    out_dir = (out_dir or options.RESULTS / f"bisect-{experiment.name}-{stamp()}").resolve()
    search = driver.Search(
        config=asked.config.resolve(),
        config_sha256=file_digest(asked.config, CONFIG),
        repo=repo,
        subdir=sub,
        good=good,
        bad=bad,
        find_fix=asked.find_fix,
        variant=subj.variant,
        backend=choice.backend,
        repeat=asked.repeat,
    )
    settings = driver.Settings(
        cache=Path(cache_dir or cache.DEFAULT_DIR).resolve(),
        jobs=jobs or options.default_jobs(),
        reason=choice.reason,
        probes=probes,
    )
    state = driver.begin(out_dir, search, settings, commits)
    notes: tuple[str, ...] = ()
    if state.steps:  # a resume: its marks come from its step bundles, not bisect.json

        def again(step: driver.Step, bundle: Path) -> tuple[Mark, str] | str:
            spec = evaluator.at_commit(search.repo, step.commit.sha, search.subdir)
            return evaluator.judged_again(subj, bundle, step.commit.sha, spec, search.repeat)

        state, notes = driver.rederive(out_dir, state, again)
    return Prepared(out_dir, state, subj, facts, notes)


def probe_spec(
    subj: evaluator.Subject, repo: Path | None, ref: str | None, subdir: str | None
) -> tuple[str, SourceSpec]:
    """(a label for the bundle, the source to judge): a commit with --repo/--ref/--subdir,
    else the variant's own source (the work tree `git bisect run` has checked out)."""
    if repo is None and ref is None and subdir is None:
        spec = subj.experiment.source
        if spec.kind is SourceKind.PATH:
            return (history.head(Path(spec.location))[:10] or "tree"), spec
        sha = history.resolve(spec.location, spec.ref) if Path(spec.location).is_dir() else ""
        return (sha[:10] or "tree"), spec
    repo_dir, sub = evaluator.locate(subj.experiment, subj.variant, repo, subdir)
    sha = history.resolve(repo_dir, ref or "HEAD")
    return sha[:10], evaluator.at_commit(repo_dir, sha, sub)
