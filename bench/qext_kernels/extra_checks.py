"""CUDA == CPU on inputs larger and stranger than tests/ext/test_cuda.py's.

Run on a GPU host after the kernels change, beside test_cuda.py:
``python bench/qext_kernels/extra_checks.py``. Exit status 0 when every case gives the
same bytes on CUDA and the CPU. The cases: every finite bf16 bit pattern at random
(subnormals, huge values), fp32 and fp16 inputs with a wide dynamic range, inputs that
are not 16-byte aligned, and shapes of several thread blocks in each direction, for
MXFP8 and NVFP4 (round-to-nearest and stochastic rounding with the same states); and
MXFP8 blocks holding NaN and infinities.
"""

from __future__ import annotations

import sys

import qext
import torch

CUDA = torch.device("cuda")
NVFP4_BUFFERS = ("rowwise_data", "rowwise_scale_inv", "rowwise_amax",
                 "columnwise_data", "columnwise_scale_inv", "columnwise_amax")
MXFP8_BUFFERS = ("rowwise_data", "rowwise_scale_inv", "columnwise_data", "columnwise_scale_inv")


def finite_bf16_bits(shape, g) -> torch.Tensor:
    """Random bf16 bit patterns, NaN and infinity replaced by zero."""
    bits = torch.randint(0, 1 << 16, shape, generator=g, dtype=torch.int32)
    bits = torch.where((bits & 0x7F80) == 0x7F80, torch.zeros_like(bits), bits)
    return bits.to(torch.int16).view(torch.bfloat16)


def wide(shape, dtype, g) -> torch.Tensor:
    x = torch.randn(shape, generator=g) * torch.exp2(torch.randint(-60, 40, shape, generator=g).float())
    return x.to(dtype)


def misaligned(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(cpu, cuda) views of x that start one element into their storage."""
    flat = torch.cat([torch.zeros(1, dtype=x.dtype), x.reshape(-1)])
    cpu = flat[1:].view(x.shape)
    cuda = flat.to(CUDA)[1:].view(x.shape)
    assert cuda.data_ptr() % 16 != 0
    return cpu, cuda


def differ(a, b, names) -> list[str]:
    out = []
    for n in names:
        x, y = getattr(a, n, None), getattr(b, n, None)
        if x is None and y is None:
            continue
        if x is None or y is None:
            out.append(f"{n}: present on one side only")
            continue
        x, y = x.detach().cpu(), y.detach().cpu()
        if x.dtype == torch.float32:
            x, y = x.view(torch.int32), y.view(torch.int32)
        bad = (x != y).nonzero()
        if bad.numel():
            out.append(f"{n}: {bad.shape[0]} of {x.numel()} differ, first at {tuple(bad[0].tolist())}")
    return out


def main() -> int:
    g = torch.Generator().manual_seed(2026)
    inputs = {
        "bf16 random bits 512x1024": finite_bf16_bits((512, 1024), g),
        "bf16 randn 320x2112": torch.randn(320, 2112, generator=g).to(torch.bfloat16),
        "fp32 wide 256x768": wide((256, 768), torch.float32, g),
        "fp16 wide 192x640": wide((192, 640), torch.float16, g).nan_to_num(0.0, 0.0, 0.0),
    }
    # NaN and infinity inside blocks (MXFP8 only: NVFP4's amax pass makes them all NaN)
    specials = {}
    for dt in (torch.bfloat16, torch.float32):
        x = torch.randn(128, 320, generator=g)
        x.view(-1)[::97] = float("nan")
        x.view(-1)[5::389] = float("inf")
        x.view(-1)[7::211] = float("-inf")
        specials[f"{dt} nan/inf 128x320"] = x.to(dt)
    failures = 0
    n = 0
    for name, x in inputs.items():
        variants = [(name, x, x.to(CUDA))]
        cpu_m, cuda_m = misaligned(x)
        variants.append((name + " misaligned", cpu_m, cuda_m))
        for label, xc, xg in variants:
            for r, c in ((True, True), (True, False), (False, True)):
                for gemm in (False, True):
                    q = qext.MXFP8Quantizer(rowwise=r, columnwise=c, optimize_for_gemm=gemm)
                    bad = differ(q(xg), q(xc), MXFP8_BUFFERS)
                    n += 1
                    if bad:
                        failures += 1
                        print(f"FAIL mxfp8 {label} r={r} c={c} gemm={gemm}: {bad}")
            for sr in (False, True):
                for gemm in (False, True):
                    q = qext.NVFP4Quantizer(stochastic_rounding=sr, optimize_for_gemm=gemm)
                    nst = qext.reference.nvfp4_state_count(xc, True, True, False, True)

                    def st(dev, nst=nst, sr=sr):
                        if not sr:
                            return None
                        return [torch.tensor([1234 + 7919 * i, 4 * i + 3], dtype=torch.int64,
                                             device=dev) for i in range(nst)]

                    bad = differ(q.quantize(xg, rng_states=st(CUDA)),
                                 q.quantize(xc, rng_states=st("cpu")), NVFP4_BUFFERS)
                    n += 1
                    if bad:
                        failures += 1
                        print(f"FAIL nvfp4 {label} sr={sr} gemm={gemm}: {bad}")
    for name, x in specials.items():
        for r, c in ((True, True), (True, False), (False, True)):
            q = qext.MXFP8Quantizer(rowwise=r, columnwise=c)
            bad = differ(q(x.to(CUDA)), q(x), MXFP8_BUFFERS)
            n += 1
            if bad:
                failures += 1
                print(f"FAIL mxfp8 {name} r={r} c={c}: {bad}")
    print(f"extra_checks: {n - failures} of {n} cases CUDA == CPU")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
