"""What this machine has: Python, torch and its CUDA, compilers, GPUs, driver, checkers.

The facts feed three consumers: `--backend auto` (are there GPUs?), the build-cache key
(torch, CUDA, compiler versions and GPU architectures change the binaries) and the
bundle's manifest (what a reviewer needs to trust the evidence). Every probe is a child
process through `proc`, so csorch itself never imports torch (slow, and the torch that
matters is the one the builds and cases use, `python`). A probe that fails records
"" rather than raising: a missing nvcc is a fact, not an error.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from orchestrator import proc
from orchestrator.backends import Asan, ComputeSanitizer
from orchestrator.backends.base import ToolInfo
from orchestrator.errors import CheckerUnavailable, ProcessStartError
from orchestrator.serial import Record

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


def _torch(python: str) -> dict[str, object]:
    try:
        out = proc.capture([python, "-c", _TORCH_PROBE], timeout=120)
    except ProcessStartError:
        return {}
    for line in reversed(out.output.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return {}
    return {}


def _tool(probe: ToolInfo | CheckerUnavailable) -> tuple[str, str]:
    return ("", "") if isinstance(probe, CheckerUnavailable) else (probe.version, probe.path)


def probe_checkers() -> tuple[ToolInfo | CheckerUnavailable, ToolInfo | CheckerUnavailable]:
    """(compute-sanitizer, ASan) as `backends.choose` wants them."""
    found: list[ToolInfo | CheckerUnavailable] = []
    for backend in (ComputeSanitizer(), Asan()):
        try:
            found.append(backend.probe())
        except CheckerUnavailable as exc:
            found.append(exc)
    return found[0], found[1]


def probe(
    python: str = sys.executable,
    checkers: tuple[ToolInfo | CheckerUnavailable, ToolInfo | CheckerUnavailable] | None = None,
) -> Host:
    """Probe this machine (a few seconds: it starts `python` once to ask torch). The
    probes are independent child processes and run at once: every run of csorch waits
    for the slowest of them (torch's import), not for their sum."""
    with ThreadPoolExecutor(max_workers=6) as pool:
        checkers_f = pool.submit(probe_checkers) if checkers is None else None
        torch_f = pool.submit(_torch, python)
        driver_f = pool.submit(
            _first_line, ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        )
        nvcc_f = pool.submit(_lines, ["nvcc", "--version"])
        cc_f = pool.submit(_first_line, [os.environ.get("CC", "cc"), "--version"])
        cxx_f = pool.submit(_first_line, [os.environ.get("CXX", "c++"), "--version"])
        sanitizer, asan = checkers if checkers_f is None else checkers_f.result()
        facts, driver, nvcc = torch_f.result(), driver_f.result(), nvcc_f.result()
        cc, cxx = cc_f.result(), cxx_f.result()
    cs_version, cs_path = _tool(sanitizer)
    return Host(
        python=f"{platform.python_version()} ({python})",
        platform=platform.platform(),
        torch=str(facts.get("torch", "")),
        torch_cuda=str(facts.get("cuda", "")),
        gpus=tuple(facts.get("gpus", ())),  # type: ignore[arg-type]
        capabilities=tuple(facts.get("capabilities", ())),  # type: ignore[arg-type]
        gpu_uuids=tuple(facts.get("uuids", ())),  # type: ignore[arg-type]
        driver=driver,
        cc=cc,
        cxx=cxx,
        nvcc=nvcc[-1] if nvcc else "",
        nvcc_release=nvcc_release(nvcc),
        compute_sanitizer=cs_version,
        compute_sanitizer_path=cs_path,
        asan_runtime=_tool(asan)[1],
        env=tuple((k, os.environ[k]) for k in RECORDED_ENV if k in os.environ),
    )
