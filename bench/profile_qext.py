"""One quantize call per bench case between cudaProfilerStart/Stop, for Nsight Compute.

Run it under ``tools/ncu_qext.sh`` (which passes ``--profile-from-start off``), so that
ncu sees exactly one call of each case after warm-ups: every kernel of that call (amax,
RNG-state writes, the quantize kernel), in launch order, with the L2 left as the call
itself leaves it (the script asks ncu not to flush caches between kernels).
"""

from __future__ import annotations

import argparse
import sys

import bench_qext
import torch


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--dtype", choices=("bfloat16", "float32", "float16"), default="bfloat16")
    p.add_argument("--case", action="append", default=[],
                   help="bench case name (nvfp4_sr, nvfp4_rn, mxfp8, nvfp4_sr_rht); default all")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("profile_qext: no CUDA GPU here; nothing to profile")
        return 0
    import qext

    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(args.size, args.size, generator=g, device="cuda",
                    dtype=torch.float32).to(getattr(torch, args.dtype))
    for case in bench_qext.make_cases(qext, x):
        if args.case and case["name"] not in args.case:
            continue
        q = case["q"]
        out = q(x)
        for _ in range(3):
            q.quantize(x, out=out)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(case["name"])
        torch.cuda.profiler.start()
        q.quantize(x, out=out)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        torch.cuda.nvtx.range_pop()
        print(f"profiled one call: {case['name']} ({case['what']})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
