import torch
import extension_cpp


def test_muladd_noncontiguous_cuda():
    a = torch.randn(64, 33, device="cuda")[:, :32]
    b = torch.randn(64, 33, device="cuda")[:, :32]
    out = extension_cpp.ops.mymuladd(a, b, 1.5)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a * b + 1.5)


def test_muladd_contiguous_cuda():
    a = torch.randn(64, 32, device="cuda")
    b = torch.randn(64, 32, device="cuda")
    out = extension_cpp.ops.mymuladd(a, b, 1.5)
    torch.testing.assert_close(out, a * b + 1.5)
