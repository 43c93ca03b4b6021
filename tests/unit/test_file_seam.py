"""The file seam: no module outside `orchestrator/files/` opens, reads, writes, copies,
walks or removes a file itself, as no module outside `proc.py` starts a process.

`files` is where the checks live that every read and write needs (a regular file only, no
link followed, a size bound per kind, no recursion over a tree); a plain `open` elsewhere
is a way around them: a named pipe given as a config hung every verb that read one, and
a symlink planted as a bundle's lock or logs/ was written through. The rule, read from
every module's syntax tree: no call of `open`, `io.open`, `os.open`, `os.fdopen`,
`Path.open`, `read_text`, `read_bytes`, `write_text`, `write_bytes` (save `files.`'s own),
`shutil.rmtree`, `copytree`, `copy`, `copy2`, `copyfile`, `move`, `os.walk`, `rglob`,
`ElementTree.parse` (which opens its path itself), and
no recursive glob (`recursive=True`, or a pattern with `**`), outside `files/` and the
modules named in EXEMPT, each with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import orchestrator

PACKAGE = Path(orchestrator.__file__).resolve().parent

#: modules that may touch files themselves, and why
EXEMPT = {
    "orchestrator/sandbox/init.py": "PID 1 of the sandbox's namespace, run by unshare as a "
    "stdlib-only script (`python -I -S`): it cannot import csorch, and it reads /proc and "
    "makes mount points before anything else runs",
    "orchestrator/run/builds/ccwrap.py": "the compiler wrapper, run by each compiler call "
    "of a build as a stdlib-only script (`python -I -S`, once per compile: it cannot import "
    "csorch), appending to the build's record, which csorch reads back through files",
    "orchestrator/markers/plugin.py": "a pytest plugin loaded into the subject's own "
    "interpreter: it imports nothing of csorch (a subject's environment need not import "
    "it), and writes only its markers file, which csorch reads back through files",
}

#: names whose call is a way around files, whatever the module they come from
CALLS = frozenset({"open", "rmtree", "copytree", "copyfile", "copy2", "fdopen"})
#: methods whose call is one, on any object but `files` itself
METHODS = frozenset(
    {"open", "read_text", "read_bytes", "write_text", "write_bytes", "rglob", "fdopen"}
    | {"rmtree", "copytree", "copyfile", "copy2"}
)
#: functions of one module that are: (module, name)
MODULE_CALLS = frozenset(
    {
        ("os", "walk"),
        ("shutil", "copy"),
        ("shutil", "move"),
        ("ET", "parse"),
        ("ElementTree", "parse"),
    }
)


def _recursive_glob(node: ast.Call) -> bool:
    if not (isinstance(node.func, ast.Attribute) and node.func.attr in ("glob", "iglob")):
        return False
    if any(k.arg == "recursive" for k in node.keywords):
        return True
    return any(isinstance(a, ast.Constant) and "**" in str(a.value) for a in node.args)


def ways_around(source: str) -> list[str]:
    """Each call in `source` that touches a file without `files`, as `line: name`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in CALLS:
            found.append((node.lineno, func.id))
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else ""
            if owner == "files":
                continue
            if func.attr in METHODS or (owner, func.attr) in MODULE_CALLS:
                found.append((node.lineno, f"{owner or '...'}.{func.attr}"))
            elif _recursive_glob(node):
                found.append((node.lineno, f"recursive {func.attr}"))
    return [f"{line}: {name}" for line, name in sorted(found)]


def test_the_rule_sees_every_way_around() -> None:
    source = """\
with open(p) as f: pass
fd = os.open(p, os.O_RDONLY)
io.open(p)
text = path.read_text()
Path(p).write_bytes(b"")
with path.open("w") as f: pass
shutil.rmtree(d, ignore_errors=True)
rmtree(d)
shutil.copytree(a, b)
for d, _, names in os.walk(top): pass
found = glob.glob(pattern, recursive=True)
more = root.glob("pkg/**/*.so")
deep = root.rglob("*.py")
shutil.copy(a, b)
root = ET.parse(path).getroot()
"""
    assert sorted(int(w.split(": ")[0]) for w in ways_around(source)) == list(range(1, 16))
    fine = """\
text = files.read_text(path, files.CONFIG)
files.atomic_write(path, text, root=out)
files.remove_tree(d)
top = sorted(root.glob("*.whl"))
webpage = "open('x')"
"""
    assert ways_around(fine) == []


def test_no_module_outside_files_touches_a_file_itself() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    outside = [p for p in modules if (PACKAGE / "files") not in p.parents]
    assert len(outside) > 100
    found = {}
    for path in outside:
        name = path.relative_to(PACKAGE.parent).as_posix()
        hits = ways_around(path.read_text(encoding="utf-8"))
        if hits and name not in EXEMPT:
            found[name] = hits
    assert found == {}, "read, write, copy and remove through orchestrator.files: " + repr(found)


def test_every_exemption_still_needs_one() -> None:
    for name, reason in EXEMPT.items():
        assert reason and ways_around((PACKAGE.parent / name).read_text(encoding="utf-8")), name
