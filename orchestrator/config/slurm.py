"""How attempts are handed to Slurm: the settings record, its config block and flags,
and the `sbatch` argv they make. Pure: nothing here starts a process.

In an experiment config (every key optional; `--executor slurm` and `--slurm KEY=VALUE`
give or override the same on the command line):

    executor: slurm                 # local (default) | slurm
    slurm:
      partition: gpu
      account: my-project
      time: 30m                     # per array task; default: the run's timeout + 5m
      gres: gpu:1                   # default: gpu:1 under compute-sanitizer, none under asan
      sbatch: [--qos=high, --constraint=h100]   # extra sbatch options, verbatim
      throttle: 64                  # at most N attempts at once (the array's %N)
      poll: 30s                     # between squeue calls (one call per poll for all tasks)
      max_array: 1000               # tasks per array (Slurm's MaxArraySize is 1001 by default)
      compile_cache: redis://cachehost:6379   # the builds' shared compile cache (remote.py)
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from orchestrator.config import compile_cache as remote
from orchestrator.config.nodes import View
from orchestrator.config.schema import DURATION_RE, UNITS
from orchestrator.errors import CsorchError
from orchestrator.model.experiment import SlurmSettings

EXECUTORS = ("local", "slurm")
#: the attempt's own timeout fires first (an inconclusive attempt, as locally); Slurm's
#: limit only catches a task that hangs outside it (a stuck file system, a lost node)
TIME_MARGIN = 300.0
SLURM = {
    "partition": "the Slurm partition (sbatch --partition)",
    "account": "the Slurm account to charge (sbatch --account)",
    "time": "time limit per array task: seconds, or 90s / 10m / 2h",
    "gres": "generic resources per attempt, e.g. gpu:1 ('none' asks for none)",
    "sbatch": "extra sbatch options, passed verbatim",
    "throttle": "at most N attempts running at once (the job array's %N)",
    "poll": "seconds between queue polls: seconds, or 30s / 1m",
    "max_array": "at most N tasks per job array",
    "compile_cache": "a Redis server every building host shares as its compile cache's "
    "remote storage, e.g. redis://cachehost:6379",
}
#: sbatch options csorch sets itself (what for): a user's `sbatch:` may not set them too, as
#: sbatch's last setting wins and csorch's are not last (`--output` there moved every
#: task's output where csorch never reads it); the keys above set the ones users may
RESERVED_SBATCH = {
    "parsable": "csorch reads the job id from its answer",
    "job-name": "csorch names the array",
    "array": "csorch submits the attempts as the array's tasks",
    "output": "csorch reads each task's output in the bundle",
    "error": "csorch reads each task's output (stderr included) in the bundle",
    "time": "set the slurm: time key (or --slurm time=...)",
    "ntasks": "each attempt is one task",
    "chdir": "each task runs in csorch's spool directory",
    "requeue": "csorch retries a task Slurm ended itself, once, and records both",
    "no-requeue": "csorch retries a task Slurm ended itself, once, and records both",
    "partition": "set the slurm: partition key (or --slurm partition=...)",
    "account": "set the slurm: account key (or --slurm account=...)",
    "gres": "set the slurm: gres key (or --slurm gres=...)",
    "wrap": "csorch submits its own task script",
}
#: sbatch's short spellings of those, and the short options that take a value (the rest
#: of a bundled `-xVALUE` is that value, not more options)
RESERVED_SHORT = {"J": "job-name", "a": "array", "o": "output", "e": "error", "t": "time",
                  "n": "ntasks", "D": "chdir", "p": "partition", "A": "account"}  # fmt: skip
SHORT_WITH_VALUE = frozenset("ABCDFGJLMNSabcdeimnopqtwx")


def sbatch_problem(words: Sequence[str]) -> str:
    """Why extra sbatch options clash with csorch's own ("" when they do not). A long
    option counts by any prefix sbatch would take for it (`--out=` is `--output=`)."""
    for word in words:
        if word == "--":
            return "'--' ends sbatch's options: csorch's task script must stay the script"
        if word.startswith("--"):
            name = word[2:].split("=", 1)[0]
            hit = next((r for r in RESERVED_SBATCH if name and r.startswith(name)), None)
            if hit:
                return f"{word!r} sets --{hit}, csorch's own: {RESERVED_SBATCH[hit]}"
        elif word.startswith("-") and len(word) > 1:
            for letter in word[1:]:
                if letter in RESERVED_SHORT:
                    long = RESERVED_SHORT[letter]
                    return (
                        f"{word!r} sets -{letter} (--{long}), csorch's own: {RESERVED_SBATCH[long]}"
                    )
                if letter in SHORT_WITH_VALUE:
                    break
    return ""


_GRES_RE = re.compile(r"^[A-Za-z0-9_.:-]+(,[A-Za-z0-9_.:-]+)*$")
_PARTITION_RE = re.compile(r"^[A-Za-z0-9_.,-]+$")


def read(view: View) -> SlurmSettings:
    """The config's `slurm:` block; ConfigError names the file, line and key."""
    f = view.mapping(SLURM)
    values: dict[str, object] = {}
    for key in SLURM:
        item = f.get(key)
        if item is None:
            continue
        if key in ("time", "poll"):
            values[key] = item.duration()
        elif key in ("throttle", "max_array"):
            values[key] = item.integer(minimum=1)
        elif key == "sbatch":
            values[key] = item.words()
            problem = sbatch_problem(values[key])  # type: ignore[arg-type]
            if problem:
                raise item.error(problem, hint=_SBATCH_HINT)
        else:
            problem, hint = _problem(key, item.word())
            if problem:
                raise item.error(problem, hint=hint)
            values[key] = item.word()
    return SlurmSettings(**values)  # type: ignore[arg-type]


_SBATCH_HINT = (
    "leave that option to csorch (the slurm: keys partition, account, time and gres set "
    "the ones you may); extra sbatch options are for the rest, e.g. --qos=high"
)


def _problem(key: str, value: str) -> tuple[str, str]:
    """(problem, hint) with a name-like value, or ("", "") when it is fine."""
    if key == "compile_cache":
        try:
            remote.parse(value, "compile_cache")
        except CsorchError as exc:
            return exc.message, exc.hint or ""
    if key == "gres" and value != "none" and not _GRES_RE.match(value):
        return f"'{value}' is not a gres list", "e.g. gpu:1 or gpu:h100:1, or none"
    if key in ("partition", "account") and not _PARTITION_RE.match(value):
        return f"'{value}' is not a Slurm {key} name", ""
    return "", ""


def _duration(key: str, text: str) -> float:
    m = DURATION_RE.match(text.strip())
    if not m or float(m["n"]) <= 0:
        raise CsorchError(
            f"--slurm {key}={text}: expected a positive duration", hint="e.g. 600, 90s, 10m, 2h"
        )
    return float(m["n"]) * UNITS[m["unit"]]


def with_flags(settings: SlurmSettings, pairs: Sequence[str]) -> SlurmSettings:
    """`settings` with `--slurm KEY=VALUE` flags applied over it; CsorchError for a bad one."""
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in SLURM:
            raise CsorchError(
                f"--slurm {pair}: expected KEY=VALUE with KEY one of: {', '.join(SLURM)}",
                hint="e.g. --slurm partition=gpu --slurm time=2h --slurm sbatch='--qos=high'",
            )
        if key in ("time", "poll"):
            settings = replace(settings, **{key: _duration(key, value)})
        elif key in ("throttle", "max_array"):
            if not value.isdigit() or int(value) < 1:
                raise CsorchError(f"--slurm {pair}: expected a whole number of at least 1")
            settings = replace(settings, **{key: int(value)})
        elif key == "sbatch":
            try:
                words = tuple(shlex.split(value))
            except ValueError as exc:  # a quote left open
                raise CsorchError(f"--slurm {pair}: {exc}", hint=_SBATCH_HINT) from None
            problem = sbatch_problem(words)
            if problem:
                raise CsorchError(f"--slurm {pair}: {problem}", hint=_SBATCH_HINT)
            settings = replace(settings, sbatch=settings.sbatch + words)
        else:
            problem, hint = _problem(key, value)
            if problem:
                raise CsorchError(f"--slurm {pair}: {problem}", hint=hint)
            settings = replace(settings, **{key: value})
    return settings


def executor_of(view: View | None) -> str:
    """The config's `executor:` key ("local" when absent)."""
    return view.choice(EXECUTORS) if view is not None else "local"


def time_limit(seconds: float) -> str:
    """Slurm's D-HH:MM:SS, rounded up to a whole minute (Slurm's own granularity)."""
    minutes = max(1, math.ceil(seconds / 60))
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00"


def array_spec(indices: Sequence[int], throttle: int) -> str:
    """`--array` for these task indices: ranges where contiguous, `%N` when throttled."""
    if not indices:
        raise ValueError("an array needs at least one task")
    parts, ordered = [], sorted(set(indices))
    start = prev = ordered[0]
    for i in [*ordered[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ",".join(parts) + (f"%{throttle}" if throttle else "")


def pattern_text(path: Path) -> str:
    """`path` as literal text in sbatch's filename pattern (`%` doubled). CsorchError for
    a path with a backslash, which turns the pattern off (every task's output would go to
    one file named `%A_%a.out`) and has no escape."""
    text = str(path)
    if "\\" in text:
        raise CsorchError(
            f"{text}: sbatch reads a backslash in --output as 'no pattern', so the tasks' "
            "outputs cannot be told apart",
            hint="give an --out whose path has no backslash",
        )
    return text.replace("%", "%%")


def sbatch_argv(
    settings: SlurmSettings,
    *,
    name: str,
    indices: Sequence[int],
    output: Path,
    script: Path,
    seconds: float,
    gres: str,
    workdir: Path,
) -> list[str]:
    """The `sbatch` command that submits `script` as one array over `indices`."""
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={name}",
        f"--array={array_spec(indices, settings.throttle)}",
        # %A_%a: the array's job id and the task index, so a retry never overwrites (the
        # directory's own `%` doubled: sbatch reads its output name as a pattern)
        f"--output={pattern_text(output)}/%A_%a.out",
        f"--time={time_limit(settings.time or seconds + TIME_MARGIN)}",
        "--ntasks=1",
        f"--chdir={workdir}",
        # csorch retries a killed attempt itself, once, and records both job ids
        "--no-requeue",
    ]
    if settings.partition:
        argv.append(f"--partition={settings.partition}")
    if settings.account:
        argv.append(f"--account={settings.account}")
    if gres:
        argv.append(f"--gres={gres}")
    return [*argv, *settings.sbatch, str(script)]
