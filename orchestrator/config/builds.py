"""The build kinds and the project's environment in a config: `build:` of a variant, and
the experiment's `python:`, `test_requires:`, `wheels:` and `cases_from:` keys.

    variants:
      - name: patched
        build: pip                    # pip install --no-deps --no-build-isolation --target P
      - name: rebuilt
        build: {kind: pip, flags: [-DDEBUG_OWNERS]}
      - name: release                 # the release binary as users install it, no patches:
        build: {kind: prebuilt, wheel: dist/extension_cpp-0.0.1-cp311-linux_x86_64.whl}
        # build: {kind: prebuilt, requirement: "extension_cpp==0.0.1", find_links: wheelhouse}
        # build: {kind: prebuilt, requirement: "extension_cpp==0.0.1", index: https://...}
        # build: {kind: prebuilt, installed: extension_cpp}   (in the environment's python)
      - name: made
        build: {kind: command, command: [make], import_path: build/lib}
    python: ~/venvs/ext/bin/python    # the interpreter the builds and cases use
    test_requires: [expecttest==0.3.0]  # or a requirements file: requirements-test.txt
    wheels: wheelhouse                # install them from this directory only (offline)
    cases_from: config                # or variant: the cases' paths are in each variant's tree

`jit` is csorch's own build.py contract (config/experiment.py), not torch's JIT loader.
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.config import sanitizer_options
from orchestrator.config.nodes import Fields, View
from orchestrator.config.schema import BUILD, BUILD_KINDS, ENV_NAME_RE, PREBUILT_SOURCES, URL_RE
from orchestrator.model import BuildKind, BuildSpec, CasesFrom, Env, Environment

#: which keys each kind accepts besides kind, env and outputs
_KEYS = {
    BuildKind.JIT: ("description", "flags"),
    BuildKind.WHEEL: ("flags",),
    BuildKind.PIP: ("flags",),
    BuildKind.COMMAND: ("command", "import_path"),
    BuildKind.PREBUILT: (*PREBUILT_SOURCES, "find_links", "index"),
}
_KINDS_HINT = "; ".join(f"{k}: {why}" for k, why in BUILD_KINDS.items())


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


def _kind(view: View) -> BuildKind:
    text = view.text("a build kind")
    if text not in BUILD_KINDS:
        raise view.error(
            f"'{text}' is not a build kind; choose one of: {', '.join(BUILD_KINDS)}",
            hint=_KINDS_HINT,
        )
    return BuildKind(text)


def read(view: View) -> BuildSpec:
    """A variant's `build:`: a kind's name, or a mapping with `kind`."""
    if not view.is_mapping:
        kind = _kind(view)
        if kind is BuildKind.COMMAND:
            raise view.error(
                "a command build needs its argv",
                hint="write build: {kind: command, command: [make], import_path: build/lib}",
            )
        if kind is BuildKind.PREBUILT:
            raise view.error(
                "a prebuilt control needs the binary it stands for",
                hint="write build: {kind: prebuilt, wheel: FILE.whl} (or requirement: "
                "NAME==VERSION with find_links: DIR or index: URL, or installed: NAME)",
            )
        return BuildSpec(kind)
    f = view.mapping(BUILD)
    kind = _kind(f.require("kind"))
    for key in BUILD:
        if key in f and key not in ("kind", "env", "outputs", *_KEYS[kind]):
            takers = [k.value for k, keys in _KEYS.items() if key in keys]
            named = ", ".join(takers[:-1]) + " and " + takers[-1] if len(takers) > 1 else takers[0]
            raise f.require(key).error(f"applies to {named} builds only, not {kind.value}")
    outputs, env = f.get("outputs"), f.get("env")
    common = {
        "outputs": _outputs(outputs) if outputs else (),
        "env": _env(env) if env else (),
    }
    if kind is BuildKind.COMMAND:
        return _command(f, common)
    if kind is BuildKind.PREBUILT:
        return _prebuilt(view, f, common)
    description, flags = f.get("description"), f.get("flags")
    return BuildSpec(
        kind=kind,
        description=_relative(description, "a path") if description else "",
        flags=flags.words() if flags else (),
        **common,
    )


def _relative(view: View, what: str) -> str:
    text = view.text(what)
    if text.startswith("/") or ".." in Path(text).parts:
        raise view.error("must be a relative path inside the tree")
    return text


def _outputs(view: View) -> tuple[str, ...]:
    """The declared outputs: globs inside the built tree (each is hashed as a binary of
    the build: one that leads outside would hash the user's files)."""
    globs = []
    for item in view.items() if view.is_list else [view]:
        text = item.word()
        if text.startswith("/") or ".." in Path(text).parts:
            raise item.error(
                f"{text!r} leads outside the built tree",
                hint="write a glob relative to the tree's root: build/*.so",
            )
        globs.append(text)
    return tuple(globs)


def _not_an_option(view: View, text: str, what: str) -> str:
    """`text`, unless it starts with '-': pip would read it as an option (`--index-url=`,
    `-r FILE`), not as the requirement it stands for."""
    if text.startswith("-"):
        raise view.error(
            f"{text!r} starts with '-': pip would read it as an option, not {what}",
            hint="write NAME==VERSION; pip's options are not taken here",
        )
    return text


def _command(f: Fields, common: dict) -> BuildSpec:
    argv = f.require("command").words(allow_single=False)
    if not argv:
        raise f.require("command").error("must not be empty")
    path = f.get("import_path")
    return BuildSpec(
        BuildKind.COMMAND,
        command=argv,
        import_path=_relative(path, "a directory") if path else "",
        **common,
    )


def _prebuilt(view: View, f: Fields, common: dict) -> BuildSpec:
    given = [k for k in PREBUILT_SOURCES if k in f]
    if len(given) != 1:
        raise view.error(
            f"a prebuilt control takes exactly one of {', '.join(PREBUILT_SOURCES)}"
            + (f"; found {', '.join(given)}" if given else ""),
            hint="wheel: a .whl file; requirement: NAME==VERSION (with find_links or index); "
            "installed: a distribution installed in the environment's python",
        )
    links, index = f.get("find_links"), f.get("index")
    if given[0] != "requirement":
        for other in (links, index):
            if other is not None:
                raise other.error("applies to a prebuilt requirement only")
    if given[0] == "wheel":
        wheel = f.require("wheel").path(directory=False)
        if wheel.suffix != ".whl":
            raise f.require("wheel").error(f"not a wheel file: {wheel.name}")
        return BuildSpec(BuildKind.PREBUILT, wheel=str(wheel), **common)
    if given[0] == "installed":
        name = f.require("installed").text("a distribution name")
        return BuildSpec(BuildKind.PREBUILT, installed=name, **common)
    req = f.require("requirement")
    text = _not_an_option(req, req.text("a requirement"), "a requirement")
    if "==" not in text:
        raise req.error(
            f"'{text}' is not pinned",
            hint="a control is one release: write NAME==VERSION",
        )
    if (links is None) == (index is None):
        raise req.error(
            "say where the wheel comes from: exactly one of find_links (a wheel "
            "directory) or index (a package index URL)"
        )
    if index is not None:
        url = index.text("a URL")
        if not URL_RE.match(url):
            raise index.error(f"not a URL: {url!r}")
        return BuildSpec(BuildKind.PREBUILT, requirement=text, index=url, **common)
    assert links is not None
    directory = links.path(directory=True)
    return BuildSpec(BuildKind.PREBUILT, requirement=text, find_links=str(directory), **common)


def environment(f: Fields) -> Environment:
    """The experiment's `python:`, `test_requires:` and `wheels:`."""
    python, requires, wheels = f.get("python"), f.get("test_requires"), f.get("wheels")
    interpreter = ""
    if python is not None:
        text = os.path.expanduser(python.text("an interpreter path"))
        path = (python.file.parent / text).absolute() if os.sep in text else None
        if path is None:
            raise python.error(
                f"'{text}' is not a path", hint="give the interpreter's path: venv/bin/python"
            )
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise python.error(f"no executable interpreter at {path}")
        interpreter = str(path)
    pins: tuple[str, ...] = ()
    req_file = ""
    if requires is not None:
        if requires.is_list:
            pins = requires.words()
            for item in requires.items():
                _not_an_option(item, item.word(), "a requirement")
                if "==" not in item.word() and not item.word().endswith(".whl"):
                    raise item.error(
                        f"'{item.word()}' is not pinned",
                        hint="test requirements go in each variant's directory without their "
                        "dependencies: pin each one (NAME==VERSION) and list them all",
                    )
        else:
            req_file = str(requires.path(directory=False))
    return Environment(
        python=interpreter,
        requires=pins,
        requirements_file=req_file,
        wheels=str(wheels.path(directory=True)) if wheels else "",
    )


def cases_from(view: View | None) -> CasesFrom:
    if view is None:
        return CasesFrom.CONFIG
    return CasesFrom(view.choice([c.value for c in CasesFrom]))
