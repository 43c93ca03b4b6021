"""host: the probe in two parts, on real programs (conftest's FakeHost: a torch package
first on PYTHONPATH, an nvidia-smi script first on PATH). The fast facts come back
before `import torch` ends and key the builds exactly; each condition under which they
are not exact makes `start` wait for torch as before; torch's answer, joined by
`Facts.full`, stops a run where it contradicts them. The readers of torch/version.py and
of nvidia-smi's lines are pure and tested on their texts."""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import pytest

from orchestrator import backends, host
from orchestrator.errors import HostMismatch

pytestmark = pytest.mark.process  # builds, runs a checker, git or a child process

#: torch/version.py of a CUDA build, as torch 2.13.0+cu130 writes it
CUDA_VERSION_PY = """\
from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.13.0+cu130'
debug = False
cuda: Optional[str] = '13.0'
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
"""
SLOW = 3.0  # seconds `import torch` takes where a test tells the fast part from the full
H200 = ("NVIDIA H200", "9.0")
UUIDS = ("GPU-5e2a1c9d-0000-4000-8000-000000000001", "GPU-5e2a1c9d-0000-4000-8000-000000000002")
SMI_H200 = ["580.95.05, NVIDIA H200, 9.0", "580.95.05, NVIDIA H200, 9.0"]
CPU_VERSION_PY = CUDA_VERSION_PY.replace("2.13.0+cu130", "2.13.0+cpu").replace(
    "cuda: Optional[str] = '13.0'", "cuda: Optional[str] = None"
)


def timed_start(python: str = sys.executable) -> tuple[host.Facts, float]:
    began = time.monotonic()
    facts = host.start(python, backends.probe_checkers)
    return facts, time.monotonic() - began


# --- the fast part: exact, and back before `import torch` is ---------------------------


def test_a_cpu_build_is_known_at_once_and_sees_no_gpu(fake_host) -> None:
    # nvidia-smi lists GPUs, but a CPU build of torch sees none
    fake_host.torch(CPU_VERSION_PY, import_s=SLOW)
    fake_host.smi(SMI_H200)
    began = time.monotonic()
    facts, took = timed_start()
    assert took < SLOW, f"start took {took:.2f} s: it waited for `import torch`"
    assert facts.waited == ""
    fast = facts.fast
    assert (fast.torch, fast.torch_cuda, fast.gpus, fast.capabilities) == ("2.13.0+cpu", "", (), ())
    assert fast.driver == "580.95.05"  # the driver comes from the same nvidia-smi call
    assert fast.toolchain()["arch"] == ""
    full = facts.full()
    assert time.monotonic() - began >= SLOW  # torch's own answer: after its import
    assert full.toolchain() == fast.toolchain() and full.gpus == () and full.torch == fast.torch
    assert facts.full() is full  # joined once


def test_a_cuda_build_takes_gpus_from_nvidia_smi_and_uuids_from_torch_only(fake_host) -> None:
    # CUDA's order (torch's) is not nvidia-smi's: the A100 is first for CUDA, last for smi
    smi = ["580.95.05, NVIDIA H200, 9.0", "580.95.05, NVIDIA A100-SXM4-80GB, 8.0"]
    cuda_order = [("NVIDIA A100-SXM4-80GB", "8.0", UUIDS[1]), (*H200, UUIDS[0])]
    fake_host.torch(CUDA_VERSION_PY, cuda_order, import_s=SLOW)
    fake_host.smi(smi)
    facts, took = timed_start()
    assert took < SLOW and facts.waited == ""
    fast = facts.fast
    assert (fast.torch, fast.torch_cuda) == ("2.13.0+cu130", "13.0")
    assert fast.gpus == ("NVIDIA H200", "NVIDIA A100-SXM4-80GB")
    assert fast.capabilities == ("9.0", "8.0")
    assert fast.gpu_uuids == ()  # never from nvidia-smi: its order is not CUDA's
    assert fast.toolchain()["arch"] == "8.0,9.0"
    full = facts.full()  # the same key and count: agreed
    assert full.gpus == ("NVIDIA A100-SXM4-80GB", "NVIDIA H200")
    assert full.gpu_uuids == (UUIDS[1], UUIDS[0])
    assert full.toolchain() == fast.toolchain()


def test_probe_is_both_parts_at_once(fake_host) -> None:
    fake_host.torch(CUDA_VERSION_PY, [(*H200, UUIDS[0]), (*H200, UUIDS[1])])
    fake_host.smi(SMI_H200)
    facts = host.probe(sys.executable, backends.probe_checkers)
    assert facts.gpus == ("NVIDIA H200",) * 2 and facts.gpu_uuids == UUIDS
    assert facts.driver == "580.95.05" and facts.torch_cuda == "13.0"


# --- where the fast facts would not be exact, torch is waited for first ----------------


def _no_torch_python(tmp_path: Path) -> str:
    """A `python` that finds no torch at all (a real script: this Python without site)."""
    script = tmp_path / "python-without-torch"
    script.write_text(f"#!/bin/sh\nexec '{sys.executable}' -I -S \"$@\"\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize(
    "case, waited",
    [
        ("CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES is set"),
        ("CUDA_DEVICE_ORDER", "CUDA_DEVICE_ORDER is set"),
        ("no version.py", "cannot read"),
        ("version.py not literal", "cuda is not a literal"),
        ("rocm", "is a ROCm build"),
        ("smi fails", "is a CUDA build and nvidia-smi is missing, failed or lists no GPU"),
        ("smi n/a", "is a CUDA build and nvidia-smi said"),
        ("no torch", "finds no torch package"),
    ],
)
def test_torch_is_waited_for_where_the_fast_facts_are_not_exact(
    fake_host, monkeypatch, tmp_path: Path, case: str, waited: str
) -> None:
    gpus = [(*H200, UUIDS[0]), (*H200, UUIDS[1])]
    fake_host.torch(CUDA_VERSION_PY, gpus, import_s=1.0)
    fake_host.smi(SMI_H200)
    python = sys.executable
    if case in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"):
        monkeypatch.setenv(case, "1" if case == "CUDA_VISIBLE_DEVICES" else "PCI_BUS_ID")
    elif case == "no version.py":
        fake_host.torch(None, gpus, import_s=1.0)
    elif case == "version.py not literal":
        text = CUDA_VERSION_PY.replace("= '13.0'", "= '.'.join(['13', '0'])")
        fake_host.torch(text, gpus, import_s=1.0)
    elif case == "rocm":
        text = CUDA_VERSION_PY.replace("rocm: Optional[str] = None", "rocm = '6.4'")
        fake_host.torch(text.replace("= '13.0'", "= None"), gpus, import_s=1.0)
    elif case == "smi fails":
        fake_host.smi(["NVIDIA-SMI has failed because it couldn't communicate"], returncode=9)
    elif case == "smi n/a":
        fake_host.smi(["580.95.05, NVIDIA H200, [N/A]"])
    elif case == "no torch":
        python = _no_torch_python(tmp_path)
    facts, took = timed_start(python)
    assert waited in facts.waited
    assert took >= (0.9 if case != "no torch" else 0.0)  # it waited for `import torch`
    # the fast facts are torch's answer itself: nothing left to join or to contradict
    assert facts.full() is facts.fast
    if case == "no torch":
        assert facts.fast.torch == "" and facts.fast.gpus == ()
    else:
        assert facts.fast.gpu_uuids == UUIDS and facts.fast.gpus == ("NVIDIA H200",) * 2


# --- torch's answer contradicting the fast facts ----------------------------------------


@pytest.mark.parametrize(
    "torch_says, fact, fast, full",
    [
        ({"gpus": [(*H200, UUIDS[0])]}, "the GPU count", "2", "1"),  # MIG, a hidden GPU
        ({"gpus": []}, "toolchain 'arch'", "'9.0'", "''"),  # a driver too old for CUDA 13
        ({"version": "2.12.1+cu130"}, "toolchain 'torch'", "'2.13.0+cu130'", "'2.12.1+cu130'"),
        ({"fail": "libcudart.so.13: cannot open"}, "toolchain 'torch'", "'2.13.0+cu130'", "''"),
    ],
)
def test_a_contradiction_is_an_error_naming_the_fact_and_both_values(
    fake_host, torch_says: dict, fact: str, fast: str, full: str
) -> None:
    gpus = torch_says.pop("gpus", [(*H200, UUIDS[0]), (*H200, UUIDS[1])])
    fake_host.torch(CUDA_VERSION_PY, gpus, **torch_says)
    fake_host.smi(SMI_H200)
    facts = host.start(sys.executable, backends.probe_checkers)
    assert facts.waited == "" and len(facts.fast.gpus) == 2
    with pytest.raises(HostMismatch) as caught:
        facts.full()
    error = caught.value
    assert error.fact == fact
    assert f"{fact} is {fast} by torch/version.py and nvidia-smi but {full} by `import torch`" in (
        error.message
    )
    assert "the builds were keyed by the first, so no attempt runs on them" in error.message
    assert "CUDA_DEVICE_ORDER=FASTEST_FIRST" in error.hint
    if "fail" in torch_says:
        assert "libcudart.so.13: cannot open" in error.message
    with pytest.raises(HostMismatch):  # every later join says the same
        facts.full()
    answer = () if "fail" in torch_says else tuple(g[0] for g in gpus)
    assert facts.wait().gpus == answer  # torch's answer itself, unchecked


# --- the readers ------------------------------------------------------------------------


def test_torch_version_reads_literals_only() -> None:
    assert host.torch_version(CUDA_VERSION_PY) == ("2.13.0+cu130", "13.0")
    assert host.torch_version(CPU_VERSION_PY) == ("2.13.0+cpu", "")
    # torch 1.x wrote plain assignments
    assert host.torch_version("__version__ = '1.13.1+cu117'\ncuda = '11.7'\n") == (
        "1.13.1+cu117",
        "11.7",
    )
    for text, why in [
        ("cuda = None\n", "no __version__"),
        ("__version__ = '2.13.0'\n", "no `cuda`"),
        ("__version__ = '2.13.0'\ncuda = 13.0\n", "no `cuda`"),
        ("__version__ = v()\ncuda = None\n", "__version__ is not a literal"),
        ("__version__ = '2.13.0'\ncuda = None\nhip = '6.4.1'\n", "ROCm build"),
        ("__version__ = '2.13\n", "does not parse"),
    ]:
        with pytest.raises(ValueError, match=why):
            host.torch_version(text)


def test_torch_version_of_this_environment_matches_torch() -> None:
    """The reader against the real torch/version.py of this Python (when torch is here)."""
    torch = pytest.importorskip("torch")
    text = (Path(torch.__file__).parent / "version.py").read_text()
    assert host.torch_version(text) == (str(torch.__version__), torch.version.cuda or "")


def test_smi_gpus() -> None:
    lines = ["580.95.05, NVIDIA H200, 9.0", "580.95.05, NVIDIA RTX 6000, Ada Generation, 8.9"]
    assert host.smi_gpus(lines) == (
        "580.95.05",
        ("NVIDIA H200", "NVIDIA RTX 6000, Ada Generation"),
        ("9.0", "8.9"),
    )
    for lines, why in [
        ([], "lists no GPU"),
        (["580.95.05, NVIDIA H200, [N/A]"], "not: driver, name, capability"),
        (['Field "compute_cap" is not a valid field to query.'], "not: driver"),
    ]:
        with pytest.raises(ValueError, match=why):
            host.smi_gpus(lines)


def test_the_host_is_the_projects_interpreter_where_a_config_names_one(tmp_path: Path) -> None:
    """`python:` may be another Python than csorch's: the version recorded is the one that
    interpreter reports, beside its path (a wrapper that answers as 3.99.1 stands in for
    a venv of another Python; the torch it imports is csorch's, as a venv's would be)."""
    wrapper = tmp_path / "venv" / "bin" / "python"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(
        "#!/bin/sh\n"
        'case "$*" in *python_version*) echo 3.99.1; exit 0;; esac\n'
        f'exec {sys.executable} "$@"\n'
    )
    wrapper.chmod(0o755)
    found = host.start(str(wrapper), backends.probe_checkers).full()
    assert found.python == f"3.99.1 ({wrapper})"
    assert found.torch  # asked of the wrapper, which runs csorch's interpreter
    own = host.start(sys.executable, backends.probe_checkers).full()
    assert own.python.split(" ")[0] == platform.python_version()
