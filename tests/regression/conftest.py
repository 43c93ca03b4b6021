"""Regression cases that csorch runs against each built variant of qext.

qext is taken from the import path, so csorch can point these cases at any variant's
build. ``--qext-device`` picks the devices (default: every device present).
"""

from __future__ import annotations

import pytest
import torch


def _devices(config) -> list[str]:
    chosen = config.getoption("--qext-device")
    if chosen:
        return chosen
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", _devices(metafunc.config))


@pytest.fixture(autouse=True)
def _cuda_present(request):
    callspec = getattr(request.node, "callspec", None)
    device = callspec.params.get("device") if callspec else None
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA was asked for with --qext-device but no GPU is present")
