"""What this machine has: Python, torch and its CUDA, compilers, GPUs, driver, checkers.

The facts feed three consumers: `--backend auto` (are there GPUs?), the build-cache key
(torch, CUDA, compiler versions and GPU architectures change the binaries) and the
bundle's manifest (what a reviewer needs to trust the evidence). Every probe is a child
process through `proc`, so csorch itself never imports torch (slow, and the torch that
matters is the one the builds and cases use, `python`). A probe that fails records
"" rather than raising: a missing nvcc is a fact, not an error.

Asking torch means `import torch` in a child: 2 s on the CPU machine, 3.3-3.8 s on the
H200, where every run waited for it before its first build (most of csorch's own
overhead). So the probe has two parts (`start` returns `Facts`). The fast part, well
under a second, answers what is needed before the builds start (the backend, `--devices
all`, the build-cache key) from children that do not import torch: torch's version and
CUDA from its torch/version.py (found with `importlib.util.find_spec`, read with `ast`,
never run), the driver, GPU names and capabilities from one nvidia-smi call. Torch's own
answer starts at the same moment in the background; the pipeline joins it
(`Facts.full`) behind the builds, before anything records the host or runs an attempt,
and checks it against the fast facts: a disagreement in the cache key's toolchain or in
the GPU count stops the run with HostMismatch (the builds were keyed by the fast facts).

The fast facts are used only where they are exact; otherwise `start` waits for torch
first, as csorch always did: CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER set (CUDA's GPUs
or their order are then not nvidia-smi's), torch/version.py unreadable (or a ROCm
build), or a CUDA build of torch where nvidia-smi fails. A CPU build of torch sees no
GPU, whatever nvidia-smi says. `gpu_uuids` (CUDA's order, which may differ from
nvidia-smi's) come from torch only.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import platform
import re
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from orchestrator import files, proc, sandbox
from orchestrator.errors import CheckerUnavailable, HostMismatch, ProcessStartError
from orchestrator.model import ToolInfo
from orchestrator.model.record import Record

# printed by the torch probe as one JSON line; capabilities as "9.0"
_TORCH_PROBE = """\
import json
try:
    import torch
except ImportError as exc:
    print(json.dumps({"error": str(exc)}))
    raise SystemExit(0)
gpus, caps, uuids = [], [], []
if torch.cuda.is_available():
    for i in range(torch.cuda.device_count()):
        gpus.append(torch.cuda.get_device_name(i))
        caps.append("%d.%d" % torch.cuda.get_device_capability(i))
        uuid = str(getattr(torch.cuda.get_device_properties(i), "uuid", "") or "")
        uuids.append(uuid if not uuid or uuid.startswith(("GPU-", "MIG-")) else "GPU-" + uuid)
print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda or "",
                  "gpus": gpus, "capabilities": caps, "uuids": uuids}))
"""
# printed by the torch locator as one JSON line: torch's package directory, found without
# importing torch (find_spec of a top-level name imports nothing)
_TORCH_FIND = """\
import importlib.util, json
spec = importlib.util.find_spec("torch")
where = list(spec.submodule_search_locations or []) if spec else []
print(json.dumps({"dir": where[0] if where else ""}))
"""
#: one nvidia-smi call for the driver and every GPU (nvidia-smi's order, not CUDA's)
#: torch's version.py, read whole (a link, as some installs make, is followed)
_VERSION_PY = files.Kind("torch's version.py", 1 << 20, follow=True)

SMI_QUERY = ("nvidia-smi", "--query-gpu=driver_version,name,compute_cap", "--format=csv,noheader")
# 580.95.05, NVIDIA H200, 9.0      (a line of SMI_QUERY's output; a name may hold commas)
SMI_GPU_RE = re.compile(r"^(?P<driver>[^,]+), (?P<name>.+), (?P<cap>\d+\.\d+)$")
#: set, they make CUDA's GPUs (or their order) other than nvidia-smi's, which ignores them
CUDA_VIEW_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
# Cuda compilation tools, release 13.0, V13.0.88      (a line of `nvcc --version`)
NVCC_RELEASE_RE = re.compile(r"^Cuda compilation tools, release [\d.]+, V(?P<version>\d[\d.]*)")
#: environment variables that change what gets built or run; recorded in the manifest
RECORDED_ENV = (
    "CC",
    "CXX",
    "CUDA_HOME",
    "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "PATH",
    "TORCH_CUDA_ARCH_LIST",
)


@dataclass(frozen=True)
class Host(Record):
    python: str  # "3.11.7 (/path/to/python)"
    platform: str
    torch: str = ""
    torch_cuda: str = ""
    gpus: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    gpu_uuids: tuple[str, ...] = ()  # CUDA's order, as CUDA_VISIBLE_DEVICES indexes it
    driver: str = ""
    cc: str = ""  # first line of `cc --version`
    cxx: str = ""
    nvcc: str = ""  # last line of `nvcc --version` (the build id; it keys the cache)
    nvcc_release: str = ""  # "13.0.88": what a person reads (not in the cache key)
    compute_sanitizer: str = ""  # version, "" when missing
    compute_sanitizer_path: str = ""
    asan_runtime: str = ""
    env: tuple[tuple[str, str], ...] = ()
    #: how its children are sandboxed ("unshare pid+mount+net"), or "none: why not"
    sandbox: str = ""

    def toolchain(self) -> dict[str, object]:
        """What the build-cache key needs to know about this machine."""
        arch = dict(self.env).get("TORCH_CUDA_ARCH_LIST", "")
        return {
            "python": self.python.split(" ")[0],
            "torch": self.torch,
            "torch_cuda": self.torch_cuda,
            "cc": self.cc,
            "cxx": self.cxx,
            "nvcc": self.nvcc,
            "arch": arch or ",".join(sorted(set(self.capabilities))),
        }


def _lines(argv: list[str]) -> list[str]:
    """The non-blank output lines of a successful `argv`; [] when it fails or is missing."""
    try:
        out = proc.capture(argv, timeout=60)
    except ProcessStartError:
        return []
    if out.returncode != 0:
        return []
    return [line.strip() for line in out.output.splitlines() if line.strip()]


def _first_line(argv: list[str]) -> str:
    return next(iter(_lines(argv)), "")


def nvcc_release(lines: list[str]) -> str:
    """The "V13.0.88" version in `nvcc --version` output, without the V ("" if absent)."""
    for line in lines:
        if m := NVCC_RELEASE_RE.match(line):
            return m["version"]
    return ""


def _json_line(output: str) -> dict[str, object]:
    """The last line of `output` that is a JSON object ({} when none is)."""
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except json.JSONDecodeError:
                return {}
            return found if isinstance(found, dict) else {}
    return {}


def _torch(python: str) -> dict[str, object]:
    """Torch's own answer (the slow part: `import torch`)."""
    try:
        out = proc.capture([python, "-c", _TORCH_PROBE], timeout=120)
    except ProcessStartError as exc:
        return {"error": exc.message}
    return _json_line(out.output) or {"error": f"no answer (exit {out.returncode})"}


def torch_version(text: str) -> tuple[str, str]:
    """(torch.__version__, torch.version.cuda or "") from the text of torch/version.py,
    read as literals, never run. ValueError says why not: a value that is not a literal,
    no `__version__` or `cuda`, or a ROCm build (its torch.cuda is HIP's)."""
    try:
        body = ast.parse(text).body
    except SyntaxError as exc:
        raise ValueError(f"torch/version.py does not parse: {exc.msg}") from None
    values: dict[str, object] = {}
    for node in body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in ("__version__", "cuda", "hip", "rocm"):
            try:
                values[target.id] = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError):
                raise ValueError(f"torch/version.py: {target.id} is not a literal") from None
    version, cuda = values.get("__version__"), values.get("cuda")
    if not isinstance(version, str) or not version:
        raise ValueError("torch/version.py has no __version__ string")
    if "cuda" not in values or not (cuda is None or isinstance(cuda, str)):
        raise ValueError("torch/version.py has no `cuda` (None or a version string)")
    if values.get("hip") or values.get("rocm"):
        raise ValueError(f"torch {version} is a ROCm build")
    return version, cuda or ""


def _torch_version(python: str) -> tuple[str, str]:
    """(version, cuda) of the torch `python` would import, without importing it;
    ValueError says why they cannot be read."""
    try:
        out = proc.capture([python, "-c", _TORCH_FIND], timeout=60)
    except ProcessStartError as exc:
        raise ValueError(exc.message) from None
    folder = str(_json_line(out.output).get("dir") or "")
    if not folder:
        raise ValueError(f"{python} finds no torch package")
    path = Path(folder) / "version.py"
    try:
        return torch_version(files.read_text(path, _VERSION_PY))
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


def smi_gpus(lines: list[str]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(driver, GPU names, capabilities) from SMI_QUERY's output lines; ValueError when
    there is none or one does not read (an old driver's error, a capability "[N/A]")."""
    if not lines:
        raise ValueError("nvidia-smi is missing, failed or lists no GPU")
    found = []
    for line in lines:
        if not (m := SMI_GPU_RE.match(line)):
            raise ValueError(f"nvidia-smi said {line!r}, not: driver, name, capability")
        found.append(m)
    return found[0]["driver"], tuple(m["name"] for m in found), tuple(m["cap"] for m in found)


def _with_torch(host: Host, facts: Mapping[str, object]) -> Host:
    """`host` with torch's own answer (`_TORCH_PROBE`'s facts) in its torch fields."""
    return dataclasses.replace(
        host,
        torch=str(facts.get("torch", "")),
        torch_cuda=str(facts.get("cuda", "")),
        gpus=tuple(facts.get("gpus", ())),  # type: ignore[arg-type]
        capabilities=tuple(facts.get("capabilities", ())),  # type: ignore[arg-type]
        gpu_uuids=tuple(facts.get("uuids", ())),  # type: ignore[arg-type]
    )


def check(fast: Host, full: Host, *, detail: str = "") -> None:
    """HostMismatch at the first fact the builds were keyed by (the cache key's toolchain;
    the GPU count behind the backend and `--devices all`) that torch's answer contradicts."""
    keyed, known = fast.toolchain(), full.toolchain()
    facts = [(f"toolchain {k!r}", keyed[k], known.get(k)) for k in keyed]
    facts.append(("the GPU count", len(fast.gpus), len(full.gpus)))
    for fact, was, now in facts:
        if was != now:
            raise HostMismatch(fact, was, now, detail=detail)


def _tool(probe: ToolInfo | CheckerUnavailable) -> tuple[str, str]:
    return ("", "") if isinstance(probe, CheckerUnavailable) else (probe.version, probe.path)


#: (compute-sanitizer, ASan): each found, or why not
Checkers = tuple[ToolInfo | CheckerUnavailable, ToolInfo | CheckerUnavailable]


class Facts:
    """The host's facts in two parts: `fast`, known when `start` returns, and torch's own
    answer, joined by `full()`. A handle on a child still running, not a record: the
    bundle records `full()`. Thread-safe; the join happens once."""

    def __init__(
        self,
        fast: Host,
        checkers: Checkers,
        answer: Future[dict[str, object]] | None = None,
        *,
        waited: str = "",
    ) -> None:
        self.fast = fast  # what the backend, --devices and the build-cache keys use
        self.checkers = checkers  # (compute-sanitizer, ASan) as `backends.choose` wants them
        self.waited = waited  # why torch was waited for before the fast facts were used
        self._answer = answer  # None: `fast` is already torch's answer
        self._joined: Host | None = None if answer is not None else fast
        self._lock = threading.Lock()

    def wait(self) -> Host:
        """Every fact, torch's answer included, unchecked (waits for its child)."""
        with self._lock:
            if self._joined is None:
                assert self._answer is not None
                self._joined = _with_torch(self.fast, self._answer.result())
            return self._joined

    def full(self) -> Host:
        """Every fact, torch's answer included; HostMismatch where it contradicts a fast
        fact (the builds keyed by those cannot be trusted)."""
        host = self.wait()
        if self._answer is not None:
            check(self.fast, host, detail=str(self._answer.result().get("error", "")))
        return host


def start(python: str, checkers: Checkers | Callable[[], Checkers]) -> Facts:
    """Probe this machine (`checkers`: the probed checkers, or the probe to run, as
    `backends.probe_checkers`): the fast facts now (a few short children at once), torch's
    own answer in the background (`Facts.full` joins it), or waited for here where the
    fast facts would not be exact (the module docstring says when)."""
    pool = ThreadPoolExecutor(max_workers=7)
    try:
        answer = pool.submit(_torch, python)  # the slow one: first
        checkers_f = pool.submit(checkers) if callable(checkers) else None
        version_f = pool.submit(_torch_version, python)
        smi_f = pool.submit(_lines, list(SMI_QUERY))
        nvcc_f = pool.submit(_lines, ["nvcc", "--version"])
        cc_f = pool.submit(_first_line, [os.environ.get("CC", "cc"), "--version"])
        cxx_f = pool.submit(_first_line, [os.environ.get("CXX", "c++"), "--version"])
        sandbox_f = pool.submit(sandbox.probe)
        # the version of the interpreter the builds and cases use (a project's venv may
        # be another Python than csorch's own)
        ask = [python, "-c", "import platform; print(platform.python_version())"]
        version_of = pool.submit(_first_line, ask) if python != sys.executable else None
        found = checkers_f.result() if checkers_f is not None else checkers
        nvcc, cc, cxx = nvcc_f.result(), cc_f.result(), cxx_f.result()
        why = next((f"{k} is set" for k in CUDA_VIEW_ENV if k in os.environ), "")
        try:
            torch, cuda = version_f.result()
        except ValueError as exc:
            torch, cuda, why = "", "", why or str(exc)
        try:
            driver, gpus, caps = smi_gpus(smi_f.result())
        except ValueError as exc:
            driver, gpus, caps = "", (), ()
            if cuda and not why:
                why = f"torch {torch} is a CUDA build and {exc}"
    finally:
        pool.shutdown(wait=False)  # the torch child runs on; Facts.full joins it
    if not driver:  # an old driver knows no compute_cap; the driver alone, as before
        driver = _first_line(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    assert not callable(found)
    cs_version, cs_path = _tool(found[0])
    version = (version_of.result() if version_of else "") or platform.python_version()
    base = Host(
        python=f"{version} ({python})",
        platform=platform.platform(),
        driver=driver,
        cc=cc,
        cxx=cxx,
        nvcc=nvcc[-1] if nvcc else "",
        nvcc_release=nvcc_release(nvcc),
        compute_sanitizer=cs_version,
        compute_sanitizer_path=cs_path,
        asan_runtime=_tool(found[1])[1],
        env=tuple((k, os.environ[k]) for k in RECORDED_ENV if k in os.environ),
        sandbox=sandbox_f.result().fact,
    )
    if why:
        return Facts(_with_torch(base, answer.result()), found, waited=why)
    # a CPU build of torch sees no GPU, whatever nvidia-smi lists
    gpus, caps = (gpus, caps) if cuda else ((), ())
    fast = dataclasses.replace(base, torch=torch, torch_cuda=cuda, gpus=gpus, capabilities=caps)
    return Facts(fast, found, answer)


def probe(python: str, checkers: Checkers | Callable[[], Checkers]) -> Host:
    """Every fact of this machine at once (torch's answer waited for and checked)."""
    return start(python, checkers).full()
