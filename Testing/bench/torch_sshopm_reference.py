#!/usr/bin/env python3
"""Reference figure for tk-bench teig, measured in the same run: SS-HOPM in PyTorch.

Full (T, 3, 3, 3, 3) tensors, S starts each, a fixed number of iterations with shift 0,
A x^3 as one batched matrix product per iteration (x (x) x (x) x against the tensor
reshaped to 3 x 27), as a torch user would write it.  Prints start-iterations/s and
GFLOP/s at the seed's 140 flops per iteration, the count tk-bench uses.

Usage: torch_sshopm_reference.py [--tensors 1000000] [--starts 128] [--iters 100]
"""
import argparse

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tensors", type=int, default=1_000_000)
    p.add_argument("--starts", type=int, default=128)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--chunk", type=int, default=65536)
    a = p.parse_args()
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    starts = torch.rand(a.starts, 3, device=dev, generator=g) * 2 - 1
    starts /= starts.norm(dim=1, keepdim=True)
    total_ms = 0.0
    done = 0
    while done < a.tensors:
        t = min(a.chunk, a.tensors - done)
        full = torch.rand(t, 3, 3, 3, 3, device=dev, generator=g) * 2 - 1
        # symmetrize so that A x^3 is the gradient direction of A x^4
        perms = [(0, 1, 2, 3), (1, 0, 2, 3), (2, 1, 0, 3), (3, 1, 2, 0)]
        full = sum(full.permute(0, *(q + 1 for q in pq)) for pq in perms) / 4
        b = full.reshape(t, 3, 27).transpose(1, 2).contiguous()  # (t, 27, 3)
        x = starts.expand(t, -1, -1).contiguous()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(a.iters):
            xx = (x[:, :, :, None, None] * x[:, :, None, :, None] * x[:, :, None, None, :]).reshape(t, a.starts, 27)
            y = torch.bmm(xx, b)
            x = y / y.norm(dim=2, keepdim=True)
        end.record()
        torch.cuda.synchronize()
        total_ms += start.elapsed_time(end)
        done += t
    its = a.tensors * a.starts * a.iters
    print(f"torch {torch.__version__} SS-HOPM (4,3): {a.tensors} tensors x {a.starts} starts x {a.iters} iterations "
          f"in {total_ms:.1f} ms: {its / total_ms / 1e6:.3f} G start-iterations/s, "
          f"{its * 140 / total_ms / 1e6:.1f} GFLOP/s (seed's 140 flops/iteration)")


if __name__ == "__main__":
    main()
