"""The `command` kind: the variant's argv in its tree (`make`); the built tree becomes the
entry's `tree/`, where command cases run. Pytest cases import from its `import_path` (a
directory in the built tree), which goes first on their PYTHONPATH; without one they import
nothing of the build. The recorded binaries are the declared `outputs`, else every file
the command wrote or changed."""

from __future__ import annotations

from pathlib import Path

from orchestrator import files
from orchestrator.model import Variant
from orchestrator.run.builds.step import Context, Step, compile_env


def _stamps(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _, names in files.walk(root):
        for name in names:
            path = Path(dirpath) / name
            st = path.lstat()
            out[path.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def _short(path: Path, tree: Path) -> str:
    """`path` relative to the tree, cut to a line (a path 1200 directories deep is long)."""
    rel = path.relative_to(tree).as_posix() if path.is_relative_to(tree) else str(path)
    return rel if len(rel) <= 80 else rel[:77] + "..."


def build(variant: Variant, tree: Path, out: Path, step: Step, ctx: Context) -> list[str]:
    """Run the argv; the produced files, relative to the entry."""
    before = _stamps(tree)
    step(list(variant.build.command), cwd=tree, env=compile_env(variant, ctx, step.wrappers))
    try:
        files.copy_tree(tree, out / "tree")
    except (files.TooDeep, files.NotRegularFile) as exc:  # what the build made, named
        where = _short(exc.path, tree)
        raise step.fail(f"the built tree is refused: {exc.strerror}: {where}") from None
    declared = variant.build.import_path
    if declared and not (out / "tree" / declared).is_dir():
        raise step.fail(
            f"import_path {declared!r} is not a directory in the built tree; set build."
            "import_path to where the command leaves the importable package's parent"
        )
    if variant.build.outputs:
        produced = []
        for pattern in variant.build.outputs:
            if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
                raise step.fail(f"declared output {pattern!r} leads outside the built tree")
            matches = files.glob(out / "tree", pattern)
            inside = (out / "tree").resolve()
            for m in matches:  # hashed as this build's binaries: never a file outside it
                if not (out / "tree" / m).resolve().is_relative_to(inside):
                    raise step.fail(
                        f"declared output {pattern!r} matches {m}, outside the built tree"
                    )
            if not matches:
                raise step.fail(f"declared output {pattern!r} was not produced")
            produced += matches
        return [f"tree/{m}" for m in produced]
    after = _stamps(out / "tree")
    return [
        f"tree/{rel}"
        for rel, stamp in sorted(_stamps(tree).items())
        if rel in after and before.get(rel) != stamp
    ]


def import_path(variant: Variant, entry: Path) -> Path | None:
    """Where a command build's pytest cases import from (None: nowhere in the build)."""
    declared = variant.build.import_path
    return entry / "tree" / declared if declared else None
