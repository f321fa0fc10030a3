#!/usr/bin/env python3
"""Reference figures for tk-bench eig, measured in the same session: torch.linalg.eigvals.

The seed's Table 4 set-up: random double matrices with entries uniform in [-1, 1],
n = 5, 10, ..., 30, eigenvalues only.  On the GPU the matrices are already in device
memory (CUDA events, as tk-bench's "cuda kernel" line); on the CPU torch uses its own
threads (torch.get_num_threads()).  Prints milliseconds per size next to the seed's
TITAN X time scaled to the same count.

Usage: torch_eig_reference.py [--matrices 500000] [--sizes 5,10,15,20,25,30]
                              [--device cuda|cpu] [--chunk 50000]
"""
import argparse
import time

import torch

SEED_MS = {5: 20.01, 10: 125.61, 15: 338.79, 20: 751.42, 25: 1337.03, 30: 2191.16}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--matrices", type=int, default=500_000)
    p.add_argument("--sizes", default="5,10,15,20,25,30")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--chunk", type=int, default=50_000)
    a = p.parse_args()
    dev = torch.device(a.device)
    print(f"# torch {torch.__version__} linalg.eigvals on {dev}, {a.matrices} double matrices per size"
          + ("" if dev.type == "cuda" else f", {torch.get_num_threads()} threads"))
    print(f"{'n':>3} {'ms':>12} {'seed_ms':>10}")
    g = torch.Generator(device=dev).manual_seed(0)
    for n in (int(s) for s in a.sizes.split(",")):
        total_ms, done = 0.0, 0
        while done < a.matrices:
            m = min(a.chunk, a.matrices - done)
            x = torch.rand(m, n, n, dtype=torch.float64, device=dev, generator=g) * 2 - 1
            torch.linalg.eigvals(x[:16])  # warm-up (library load, first call)
            if dev.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                torch.linalg.eigvals(x)
                end.record()
                end.synchronize()
                total_ms += start.elapsed_time(end)
            else:
                t0 = time.perf_counter()
                torch.linalg.eigvals(x)
                total_ms += (time.perf_counter() - t0) * 1e3
            done += m
        seed = SEED_MS.get(n, 0) * a.matrices / 500_000
        print(f"{n:>3} {total_ms:>12.2f} {seed:>10.2f}" if seed else f"{n:>3} {total_ms:>12.2f} {'-':>10}")


if __name__ == "__main__":
    main()
