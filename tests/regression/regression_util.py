"""Shared helpers for the regression cases: logical views and byte comparison."""

from __future__ import annotations

import torch


def logical_nvfp4(t) -> dict[str, torch.Tensor]:
    """Packed data and compact scales without their padding, on the CPU."""
    out = {}
    m = 1
    for d in t.shape[:-1]:
        m *= d
    k = t.shape[-1]
    if t.rowwise_data is not None:
        out["rowwise_data"] = t.rowwise_data.cpu()
        out["rowwise_scales"] = t.compact_scales(False)[:m, : k // 16].cpu()
    if t.columnwise_data is not None:
        out["columnwise_data"] = t.columnwise_data.cpu()
        out["columnwise_scales"] = t.compact_scales(True)[:k, : m // 16].cpu()
    return out


def assert_same_bytes(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], what: str) -> None:
    """Fails with the first differing buffer, index and byte counts."""
    assert a.keys() == b.keys()
    for name in a:
        x, y = a[name], b[name]
        diff = (x != y).nonzero()
        if len(diff):
            idx = tuple(diff[0].tolist())
            raise AssertionError(
                f"{what}: {name} differs in {len(diff)} of {x.numel()} bytes; first at {idx}: "
                f"{x[idx].item()} vs {y[idx].item()}")


def snapshot(t, names) -> dict[str, torch.Tensor]:
    """Copies of the named buffers, with their addresses."""
    return {n: (getattr(t, n).clone(), getattr(t, n).data_ptr()) for n in names
            if getattr(t, n, None) is not None}
