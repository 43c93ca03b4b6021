"""Shared by the qext tests: exact byte comparison with a useful failure message."""

import torch


def assert_same_bytes(actual, expected, what: str) -> None:
    """Exact equality (bitwise for floats); on failure names the first mismatching index."""
    assert actual is not None, f"{what}: missing (None)"
    a = actual.detach().cpu()
    e = expected.detach().cpu()
    assert tuple(a.shape) == tuple(e.shape), f"{what}: shape {tuple(a.shape)} != {tuple(e.shape)}"
    assert a.dtype == e.dtype, f"{what}: dtype {a.dtype} != {e.dtype}"
    if a.dtype == torch.float32:
        a, e = a.contiguous().view(torch.int32), e.contiguous().view(torch.int32)
    bad = (a != e).nonzero()
    if bad.numel():
        idx = tuple(bad[0].tolist())
        raise AssertionError(f"{what}: {bad.shape[0]} of {a.numel()} elements differ; first at "
                             f"{idx}: got {a[idx].item():#x}, expected {e[idx].item():#x}")

