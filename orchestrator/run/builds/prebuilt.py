"""The `prebuilt` kind: the pinned-release control as users install it, with no patches
and nothing rebuilt. Its source is exactly one of:
- `wheel`: an existing wheel file, copied into the entry and installed into P;
- `requirement` (NAME==VERSION) with `find_links` (a wheel directory, offline) or `index`
  (a package index URL): `pip download` of that one wheel, then the same;
- `installed`: a distribution installed in the environment's python, its files (as its
  RECORD lists them) copied into P.
The record carries the release's identity (`Distribution`: name, version, the wheel's file
name and sha256); the binaries in P are hashed like any build's. A requirement from an
index and an installed distribution are read again on every run (they can change under
the same name); a wheel file or directory is keyed by its content."""

from __future__ import annotations

import re
import time
from pathlib import Path

from orchestrator import files
from orchestrator.files import INPUT, file_digest
from orchestrator.model import Distribution, Variant
from orchestrator.run.builds.pip import install_into
from orchestrator.run.builds.step import PIP_ENV, Context, Step

# extension_cpp-0.0.1-cp311-cp311-linux_x86_64.whl (an optional build tag after the version)
WHEEL_RE = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")

# run by the environment's interpreter, which need not be able to import csorch
_COPY_INSTALLED = """\
import importlib.metadata as md, json, pathlib, shutil, sys
name, dest, meta = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
try:
    dist = md.distribution(name)
except md.PackageNotFoundError:
    sys.exit(f"no distribution {name!r} is installed for {sys.executable}")
copied = []
for rel in dist.files or ():
    src = pathlib.Path(dist.locate_file(rel))
    if ".." in rel.parts or "__pycache__" in rel.parts or not src.is_file():
        continue  # console scripts live outside site-packages
    (dest / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest / rel)
    copied.append(str(rel))
code = [c for c in copied if ".dist-info" not in c and not c.endswith(".pth")]
if not code:
    sys.exit(f"{name} {dist.version} has no files of its own in {dist.locate_file('')} "
             "(an editable install is not a release binary)")
meta.write_text(json.dumps({"name": dist.metadata["Name"], "version": dist.version,
                            "location": str(dist.locate_file(""))}))
print(f"copied {len(copied)} files of {name} {dist.version}")
"""


def key_inputs(variant: Variant) -> dict[str, object]:
    """What a prebuilt entry is keyed by besides its spec: the wheel's content."""
    spec = variant.build
    if spec.wheel:
        return {"wheel_sha256": file_digest(Path(spec.wheel), INPUT)}
    if spec.find_links:
        wheels = sorted(Path(spec.find_links).glob("*.whl"))
        return {"find_links": {w.name: file_digest(w, INPUT) for w in wheels}}
    return {"read_at": time.time_ns()}  # an index or an environment: read again each run


def _identity(wheel: Path, origin: str, step: Step) -> Distribution:
    m = WHEEL_RE.match(wheel.name)
    if not m:
        raise step.fail(f"{wheel.name} is not a wheel's file name (NAME-VERSION-TAGS.whl)")
    return Distribution(m["name"], m["version"], origin, wheel.name, file_digest(wheel))


def build(variant: Variant, tree: Path, out: Path, step: Step, ctx: Context) -> Distribution:
    """Install the release into out/pkg; its identity."""
    spec = variant.build
    env = dict(spec.env) | PIP_ENV
    files.make_dirs(out / "wheel")
    if spec.installed:
        meta = out / "installed.json"
        argv = [ctx.python, "-c", _COPY_INSTALLED, spec.installed, str(out / "pkg"), str(meta)]
        step(argv, cwd=out, env=env)
        found = files.load_json(meta)
        meta.unlink()
        origin = f"installed in {ctx.python} ({found['location']})"
        return Distribution(found["name"], found["version"], origin)
    if spec.wheel:
        wheel = out / "wheel" / Path(spec.wheel).name
        files.copy_file(Path(spec.wheel), wheel, kind=INPUT)
        origin = spec.wheel
    else:
        where = ["--no-index", "--find-links", spec.find_links] if spec.find_links else []
        where = where or ["--index-url", spec.index]
        argv = [ctx.python, "-m", "pip", "download", spec.requirement, "--no-deps"]
        argv += ["--only-binary", ":all:", "--no-cache-dir", "-d", str(out / "wheel"), *where]
        step(argv, cwd=out, env=env)
        wheels = sorted((out / "wheel").glob("*.whl"))
        if len(wheels) != 1:
            raise step.fail(f"pip download of {spec.requirement} gave {len(wheels)} wheels")
        wheel = wheels[0]
        origin = f"{spec.requirement} from {spec.find_links or spec.index}"
    identity = _identity(wheel, origin, step)
    install_into(wheel, out, step, ctx, env)
    return identity
