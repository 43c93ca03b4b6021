"""Resuming a run: which of an earlier session's work, journaled in `out`, still holds.

A run's progress is journaled (`run/journal.py`) as each build and attempt finishes; with
`Options.resume` the run continues the one journaled in `out`. The journal must be this
run's (the same `identity`); the children a killed csorch left running are stopped;
attempts whose records and logs are intact are kept, every other file under logs/ is
removed, and the rest run again. A variant's kept attempts count only when it rebuilds
to what they ran against (`reusable`), so the bundle ends as an uninterrupted run's
would (timings and whether a build came from the cache aside).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from orchestrator import proc
from orchestrator.files import CONFIG, file_digest, regular_files, remove_partial_writes
from orchestrator.model import Attempt, Build, Experiment, SourceTree
from orchestrator.model.job import Job, slot
from orchestrator.run.journal import Journal, ResumeError, attempt_logs, intact, resume_command
from orchestrator.run.options import Options


def identity(experiment: Experiment, options: Options) -> dict[str, object]:
    """What makes two sessions the same run (a resume must match it)."""
    text = json.dumps(experiment.to_dict(), sort_keys=True)
    config = experiment.config
    return {
        "experiment": hashlib.sha256(text.encode()).hexdigest(),
        "config_sha256": file_digest(config, CONFIG) if config and Path(config).is_file() else "",
        "backend": options.backend,
        "devices": list(options.devices),
        "fanout": options.fanout.value,
    }


def settings(experiment: Experiment, options: Options) -> dict[str, object]:
    """What `csorch run --resume` needs to start the same run again."""
    return {
        "config": str(experiment.config or ""),
        "cases": list(options.selected),
        "repeat": options.repeat,
        "backend": options.backend,
        "reason": options.reason,
        "devices": list(options.devices),
        "fanout": options.fanout.value,
        "jobs": options.jobs,
        "cache": str(Path(options.cache).resolve()),
        "sign": str(options.sign) if options.sign is not None else None,
    }


def reopen(
    root: Path,
    ident: Mapping[str, object],
    command: list[str],
    given: Mapping[str, object] | None = None,
) -> Journal:
    """The journal in `root`, checked to be the run `ident` names (ResumeError saying
    what differs: every differing digest, and the settings `given` now that differ from
    the saved ones, such as --repeat), with an earlier session's leftover children
    stopped and a new session begun."""
    journal = Journal.read(root)
    if differ := journal.differences(ident):
        saved = journal.settings
        for name in ("repeat", "cases", "config"):
            if given is not None and name in given and saved.get(name) != given[name]:
                differ.append(f"{name} {saved.get(name)!r} -> {given[name]!r}")
        raise ResumeError(
            f"{root} holds another run ({'; '.join(differ)})",
            hint=f"continue it as it began (`{resume_command('run', root)}` with no other "
            "option), or start again with a new --out",
        )
    # children of a csorch killed outright may still run (and write their logs)
    proc.stop_leftovers(journal.sessions)
    journal.reopen(command)
    return journal


def keep(root: Path, journal: Journal, jobs: Sequence[Job]) -> dict[tuple, Attempt]:
    """The journaled attempts of `jobs` whose logs are intact, by `plan.slot`; every file
    under logs/ that they do not account for is removed, and so is the temporary file of
    a bundle write that a SIGKILL cut short (the journal, not that file, is the record)."""
    stems = {slot(j): j.stem() for j in jobs}
    kept: dict[tuple, Attempt] = {}
    trusted: set[Path] = set()
    for attempt, logs in journal.attempts:
        stem = stems.get(slot(attempt))
        if stem is not None and intact(root, logs, stem):
            kept[slot(attempt)] = attempt
            trusted |= {root / rel for rel in logs}
    # unlink (not truncate): a child orphaned by a SIGKILL may still hold its log open
    for path in regular_files(root / "logs"):
        if path not in trusted:
            path.unlink()
    remove_partial_writes(root)
    return kept


def reusable(
    before: Mapping[str, tuple[Build, SourceTree | None]],
    variant: str,
    built: Build,
    tree: SourceTree | None,
) -> bool:
    """Whether this variant's journaled attempts (its build in `before`) ran against what
    was just built. ResumeError when its source or patches changed since the run began."""
    if variant not in before:
        return False
    old, old_tree = before[variant]
    if old_tree is not None and tree is not None:
        was = (old_tree.digest, [p.sha256 for p in old_tree.patches])
        now = (tree.digest, [p.sha256 for p in tree.patches])
        if was != now:
            raise ResumeError(
                f"variant {variant}: its source tree or patches changed since the run "
                f"began (tree {was[0][:12]} -> {now[0][:12]})",
                hint="restore them to resume, or start again with a new --out",
            )
    return (
        old.ok and built.ok and (old.cache_key, old.artifacts) == (built.cache_key, built.artifacts)
    )


def forget(root: Path, job: Job) -> None:
    """Drop what an earlier session left of a job that is not kept."""
    for path in attempt_logs(root, job.stem()):
        path.unlink()
