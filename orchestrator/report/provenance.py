"""The provenance sections of the Markdown report: what was validated, and on what.

`setup`: the backend and why it was chosen, the checker, config, command and executor,
and the host's versions (python, torch and its CUDA, driver, compute-sanitizer,
compilers, GPUs). `variants`: each variant's identity: its source tree's digest, its
patches, its build (cache hit or built, cache key) and its binaries. Digests are
shortened in the tables for width and given in full in a collapsed list, since a
reviewer re-checks them (`csorch verify`). The rows are made once, with the inline
marks of the format asked for (`Ink`: GitHub Markdown here, HTML in `report.html`), so
every report states the same facts the same way. Pure: documents in, text out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from orchestrator import bundle, judge
from orchestrator.model import Checker, Experiment, SourceKind, SourceTree
from orchestrator.report import gfm
from orchestrator.report.gfm import DASH, table


@dataclass(frozen=True)
class Ink:
    """The inline marks of one output format: `esc` makes text safe, `code` a code span,
    `strong` bolds text already made safe."""

    esc: Callable[[str], str]
    code: Callable[[str], str]
    strong: Callable[[str], str]


#: GitHub Markdown's marks (the Markdown report's)
GFM = Ink(esc=gfm.esc, code=gfm.code, strong=lambda text: f"**{text}**")


def _digest(sha: str, ink: Ink = GFM) -> str:
    return ink.code(sha[:12]) if sha else DASH


def _runs(experiment: Experiment, tools: Mapping[str, Checker], ink: Ink) -> str:
    parts = []
    for run in experiment.runs:
        tool = tools.get(run.name, run.checker)
        checker = "no checker" if run.checker is Checker.NONE else run.checker.value
        if tool is not run.checker and tool is not Checker.NONE:
            checker += f" ({tool.value} ran)"
        n = experiment.repeats_for(run)
        parts.append(f"{ink.code(run.name)}: {checker}, {n} repeat{'s' * (n != 1)}")
    return "; ".join(parts)


def _executor(results: Mapping[str, Any], ink: Ink) -> str:
    """Where the attempts ran: here, or which Slurm arrays and nodes."""
    executor = results.get("options", {}).get("executor", "local")
    if not isinstance(executor, Mapping):
        return ink.esc(str(executor))
    placed = [a["placement"] for a in results.get("attempts", []) if a.get("placement")]
    arrays = sorted({p["job_id"].split("_")[0] for p in placed}, key=int)
    nodes = sorted({p["node"] for p in placed if p["node"]})
    retried = sum(1 for p in placed if len(p.get("tries", ())) > 1)
    return (
        f"{ink.esc(str(executor.get('name')))}: {len(placed)} attempts as array tasks of job "
        f"{ink.esc(', '.join(arrays)) or 'none'} on {ink.esc(', '.join(nodes)) or 'no node'}"
        + (f", {retried} retried after Slurm ended them" if retried else "")
        # the facts below are probed where csorch ran, not on the nodes
        + "; the host rows below describe the submitting host"
    )


def unsandboxed(fact: str) -> bool:
    """Whether a host's `sandbox` fact says its builds and attempts ran unsandboxed
    ("none: why", or "off": the user turned it off)."""
    return fact.startswith(("none", "off"))


def sandboxing(host: Mapping[str, Any]) -> str:
    """The host's sandbox fact, said as a warning where builds and attempts ran without."""
    fact = str(host.get("sandbox") or "")
    if not fact:
        return "not recorded (a bundle from before the sandbox)"
    if unsandboxed(fact):
        return f"{fact}: builds and attempts ran UNSANDBOXED (a child could hide from csorch)"
    return f"{fact}: every build and attempt (read-only tree, no network, every process counted)"


def setup_rows(
    results: Mapping[str, Any],
    manifest: Mapping[str, Any],
    experiment: Experiment,
    tools: Mapping[str, Checker],
    ink: Ink = GFM,
) -> list[list[str]]:
    """The setup's (fact, value) rows, marked with `ink`: how the run was made and where."""
    esc, code = ink.esc, ink.code
    backend = results.get("backend", {})
    host = manifest.get("host", {})
    config = manifest.get("config", {})
    command = list(manifest.get("command", []))

    def value(text: Any) -> str:
        return esc(str(text)) if text not in ("", None, [], ()) else "not recorded"

    gpus = host.get("gpus", [])
    caps = host.get("capabilities", [])
    gpu_text = ", ".join(f"{g} (sm {caps[i]})" if i < len(caps) else g for i, g in enumerate(gpus))
    compilers = "; ".join(
        f"{name}: {host[key]}"
        for name, key in (("cc", "cc"), ("c++", "cxx"), ("nvcc", "nvcc"))
        if host.get(key)
    )
    sanitizer = host.get("compute_sanitizer", "")
    torch = value(host.get("torch"))
    if host.get("torch"):  # an empty torch.version.cuda is a CPU build, not a gap
        torch += f" (CUDA {esc(host['torch_cuda'])})" if host.get("torch_cuda") else " (CPU build)"
    return [
        ["backend", f"{ink.strong(value(backend.get('name')))}: {value(backend.get('reason'))}"],
        ["checker", f"{value(backend.get('version'))} ({value(backend.get('path'))})"],
        ["runs", _runs(experiment, tools, ink)],
        [
            "config",
            f"{code(config.get('path', ''))} (sha256 {_digest(config.get('sha256', ''), ink)})",
        ],
        ["command", code(" ".join(["csorch", *command[1:]])) if command else "not recorded"],
        ["executor", _executor(results, ink)],
        [
            "csorch",
            f"{value(results.get('csorch'))}, "
            f"{value(results.get('started'))} to {value(results.get('finished'))}",
        ],
        ["sandbox", esc(sandboxing(host))],
        ["python", value(host.get("python"))],
        ["platform", value(host.get("platform"))],
        ["torch", torch],
        ["driver", value(host.get("driver"))],
        [
            "compute-sanitizer",
            f"{esc(sanitizer)} ({esc(host.get('compute_sanitizer_path', ''))})"
            if sanitizer
            else "not found",
        ],
        ["compilers", value(compilers)],
        ["GPUs", esc(gpu_text) if gpu_text else "none"],
    ]


def setup(
    results: Mapping[str, Any],
    manifest: Mapping[str, Any],
    experiment: Experiment,
    tools: Mapping[str, Checker],
) -> list[str]:
    """The Markdown report's Setup section."""
    return ["### Setup", "", *table(["", ""], setup_rows(results, manifest, experiment, tools))]


def _source(tree: SourceTree | None, experiment: Experiment, variant: str, ink: Ink) -> str:
    spec = tree.source if tree else experiment.source_for(experiment.variant(variant))
    where = ink.esc(PurePath(spec.location).name or spec.location)
    if spec.kind is SourceKind.GIT:
        commit = f" {ink.code(tree.commit[:12])}" if tree and tree.commit else ""
        where = f"{where}{ink.esc('@' + spec.ref)}{commit}" + (
            ink.esc(f"/{spec.subdir}") if spec.subdir else ""
        )
    return f"{_digest(tree.digest, ink) if tree else 'not materialized'} ({where})"


@dataclass(frozen=True)
class Identities:
    """Each variant's identity, marked with one format's `Ink`: the table's rows, what
    each variant is and how it was built, and the full digests (level 0: a variant's
    source tree, level 1: its patches and binaries)."""

    header: tuple[str, ...]
    body: tuple[tuple[str, ...], ...]
    described: tuple[str, ...]
    digests: tuple[tuple[int, str], ...]


def identities(experiment: Experiment, records: bundle.Records, ink: Ink = GFM) -> Identities:
    """Each variant's source tree, patches, build (cache hit, or built with its compile
    cache's hits) and binaries, with their sha256 digests."""
    code, esc = ink.code, ink.esc
    trees = {s.variant: s for s in records.sources}
    builds = {b.variant: b for b in records.builds}
    body, full, described = [], [], []
    for v in experiment.variants:
        tree, build = trees.get(v.name), builds.get(v.name)
        if tree is not None:
            patches = ", ".join(
                f"{code(p.path.name)} {_digest(p.sha256, ink)}" for p in tree.patches
            )
        else:
            patches = ", ".join(code(p.name) for p in v.patches)
        if build is None:
            status = "not built"
        elif not build.ok:
            failed = esc(judge.failed_builds([build])[v.name])
            status = f"{build.kind.value}, {ink.strong('failed')}: {failed}"
        else:
            how = "cache hit" if build.cached else f"built in {build.duration:.1f} s"
            units = build.compile_hits + build.compile_misses
            if not build.cached and units:  # ccache served some units (run/builds/compilecache)
                remote = (
                    f", {build.compile_remote_hits} remote" if build.compile_remote_hits else ""
                )
                how += f" (compile cache {build.compile_hits}/{units} hits{remote})"
            status = f"{build.kind.value}, {how}, key {_digest(build.cache_key, ink)}"
        binaries = ", ".join(
            f"{code(a.path)} {_digest(a.sha256, ink)}" for a in (build.artifacts if build else ())
        )
        body.append(
            (
                code(v.name),
                esc(experiment.role(v.name)) or DASH,
                _source(tree, experiment, v.name, ink),
                patches or "none",
                status,
                binaries or DASH,
            )
        )
        about = []
        if v.description:
            about.append(esc(v.description))
        if v.build.env:
            about.append(
                "build environment " + ", ".join(code(f"{k}={val}") for k, val in v.build.env)
            )
        if v.build.flags:
            about.append("flags " + " ".join(code(f) for f in v.build.flags))
        if v.build.command:
            about.append("command " + code(" ".join(v.build.command)))
        if about:
            described.append(f"{code(v.name)}: " + "; ".join(about))
        if tree is not None:
            full.append((0, f"{code(v.name)} source tree: {code(tree.digest)}"))
            full += [(1, f"patch {code(str(p.path))}: {code(p.sha256)}") for p in tree.patches]
        for a in build.artifacts if build else ():
            full.append((1, f"binary {code(a.path)}: {code(a.sha256)} ({a.size} bytes)"))
    header = ("variant", "role", "source tree", "patches (sha256)", "build", "binaries (sha256)")
    return Identities(header, tuple(body), tuple(described), tuple(full))


def variants(experiment: Experiment, records: bundle.Records) -> list[str]:
    """The Markdown report's Variants section, the full digests collapsed."""
    view = identities(experiment, records)
    lines = ["### Variants", "", *table(view.header, view.body)]
    if view.described:
        described = [f"- {d}" for d in view.described]
        lines += ["What each variant is and how it was built:", "", *described, ""]
    if view.digests:
        full = [("  " * level) + f"- {text}" for level, text in view.digests]
        lines += ["<details><summary>Full sha256 digests</summary>", "", *full, "", "</details>"]
    return lines + [""]
