"""``python -m qext``: quantize a tensor on the best device present and summarise errors."""

from __future__ import annotations

import sys

import torch

from . import _C, MXFP8Quantizer, NVFP4Quantizer


def _rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def main() -> int:
    device = "cuda" if torch.cuda.is_available() and _C.with_cuda else "cpu"
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    torch.manual_seed(0)
    x = torch.randn(256, 512, dtype=torch.bfloat16, device=device)
    print(f"qext summary on {device} ({name}); torch {torch.__version__}; "
          f"extension built with CUDA: {_C.with_cuda}")
    print(f"input: {tuple(x.shape)} {x.dtype}; relative error ||deq(q(x)) - x|| / ||x||")
    rows = []
    rn = NVFP4Quantizer(stochastic_rounding=False)(x).dequantize()
    rows.append(("NVFP4 round-to-nearest", _rel_err(rn, x)))
    sr_mean = torch.zeros_like(rn)
    n = 64
    for _ in range(n):
        sr_mean += NVFP4Quantizer(stochastic_rounding=True)(x).dequantize()
    one_sr = NVFP4Quantizer(stochastic_rounding=True)(x).dequantize()
    rows.append(("NVFP4 stochastic rounding (one draw)", _rel_err(one_sr, x)))
    rows.append((f"NVFP4 stochastic rounding (mean of {n})", _rel_err(sr_mean / n, x)))
    rht = NVFP4Quantizer(rowwise=False, stochastic_rounding=True, with_rht=True)(x).dequantize()
    rows.append(("NVFP4 SR + RHT, columnwise", _rel_err(rht, x)))
    rows.append(("MXFP8 rowwise", _rel_err(MXFP8Quantizer(columnwise=False)(x).dequantize(), x)))
    for label, err in rows:
        print(f"  {label:<40} {err:.4f}")
    ok = rows[2][1] < rows[0][1] and rows[4][1] < rows[0][1]
    print("summary: SR mean beats RN and MXFP8 beats NVFP4:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
