"""qext's CUDA kernels on inputs larger and stranger than test_cuda.py's: CUDA bytes ==
CPU bytes.

Every finite bf16 bit pattern at random (subnormals, huge values), fp32 and fp16 with a
wide dynamic range, inputs that do not start on a 16-byte boundary (the kernels' vector
loads must fall back), shapes of several thread blocks in each direction, for MXFP8 and
NVFP4 (round-to-nearest, and stochastic rounding with the same explicit states); and
MXFP8 blocks holding NaN and infinities (NVFP4's amax makes such a tensor all NaN).
Written for the register-only MXFP8 kernel and the bit-trick E2M1 rounding
(docs/benchmarks.md); skipped without a GPU.
"""

import pytest
import qext
import torch
from ext_util import assert_same_bytes
from qext import reference as ref

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA GPU (qext's CUDA kernels)")

CUDA = torch.device("cuda")
NVFP4_BUFFERS = ("rowwise_data", "rowwise_scale_inv", "rowwise_amax",
                 "columnwise_data", "columnwise_scale_inv", "columnwise_amax")
MXFP8_BUFFERS = ("rowwise_data", "rowwise_scale_inv", "columnwise_data", "columnwise_scale_inv")
USAGES = {"both": (True, True), "rowwise": (True, False), "columnwise": (False, True)}


def _finite_bf16_bits(shape, g) -> torch.Tensor:
    """Random bf16 bit patterns, NaN and infinity replaced by zero."""
    bits = torch.randint(0, 1 << 16, shape, generator=g, dtype=torch.int32)
    bits = torch.where((bits & 0x7F80) == 0x7F80, torch.zeros_like(bits), bits)
    return bits.to(torch.int16).view(torch.bfloat16)


def _wide(shape, dtype, g) -> torch.Tensor:
    scale = torch.exp2(torch.randint(-60, 40, shape, generator=g).float())
    return (torch.randn(shape, generator=g) * scale).to(dtype).nan_to_num(0.0, 0.0, 0.0)


def _input(name: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(2026)
    if name == "bf16-bits-512x1024":
        return _finite_bf16_bits((512, 1024), g)
    if name == "bf16-randn-320x2112":
        return torch.randn(320, 2112, generator=g).to(torch.bfloat16)
    if name == "fp32-wide-256x768":
        return _wide((256, 768), torch.float32, g)
    assert name == "fp16-wide-192x640"
    return _wide((192, 640), torch.float16, g)


INPUTS = ["bf16-bits-512x1024", "bf16-randn-320x2112", "fp32-wide-256x768", "fp16-wide-192x640"]


def _pair(name: str, misaligned: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(cpu, cuda) copies of the input; misaligned ones start one element into storage."""
    x = _input(name)
    if not misaligned:
        return x, x.to(CUDA)
    flat = torch.cat([torch.zeros(1, dtype=x.dtype), x.reshape(-1)])
    cuda = flat.to(CUDA)[1:].view(x.shape)
    assert cuda.data_ptr() % 16 != 0
    return flat[1:].view(x.shape), cuda


def _assert_same(actual, expected, names, what: str) -> None:
    for n in names:
        a, e = getattr(actual, n, None), getattr(expected, n, None)
        assert (a is None) == (e is None), f"{what}: {n} present on one side only"
        if e is not None:
            assert_same_bytes(a, e, f"{what}: {n}")


@pytest.mark.parametrize("gemm", [False, True], ids=["compact", "gemm"])
@pytest.mark.parametrize("usage", list(USAGES))
@pytest.mark.parametrize("misaligned", [False, True], ids=["aligned", "misaligned"])
@pytest.mark.parametrize("name", INPUTS)
def test_mxfp8_cuda_equals_cpu(name, misaligned, usage, gemm):
    cpu, cuda = _pair(name, misaligned)
    r, c = USAGES[usage]
    q = qext.MXFP8Quantizer(rowwise=r, columnwise=c, optimize_for_gemm=gemm)
    _assert_same(q(cuda), q(cpu), MXFP8_BUFFERS, f"mxfp8 {name} {usage}")


@pytest.mark.parametrize("gemm", [False, True], ids=["compact", "gemm"])
@pytest.mark.parametrize("sr", [False, True], ids=["rn", "sr"])
@pytest.mark.parametrize("misaligned", [False, True], ids=["aligned", "misaligned"])
@pytest.mark.parametrize("name", INPUTS)
def test_nvfp4_cuda_equals_cpu(name, misaligned, sr, gemm):
    cpu, cuda = _pair(name, misaligned)
    q = qext.NVFP4Quantizer(stochastic_rounding=sr, optimize_for_gemm=gemm)
    n = ref.nvfp4_state_count(cpu, True, True, False, True) if sr else 0

    def states(device):
        if not sr:
            return None
        return [torch.tensor([1234 + 7919 * i, 4 * i + 3], dtype=torch.int64, device=device)
                for i in range(n)]

    got = q.quantize(cuda, rng_states=states(CUDA))
    _assert_same(got, q.quantize(cpu, rng_states=states("cpu")), NVFP4_BUFFERS,
                 f"nvfp4 {name} sr={sr}")


@pytest.mark.parametrize("usage", list(USAGES))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_mxfp8_nan_and_infinity_blocks(dtype, usage):
    x = torch.randn(128, 320, generator=torch.Generator().manual_seed(7))
    x.view(-1)[::97] = float("nan")
    x.view(-1)[5::389] = float("inf")
    x.view(-1)[7::211] = float("-inf")
    x = x.to(dtype)
    r, c = USAGES[usage]
    q = qext.MXFP8Quantizer(rowwise=r, columnwise=c)
    _assert_same(q(x.to(CUDA)), q(x), MXFP8_BUFFERS, f"mxfp8 nan/inf {usage}")
