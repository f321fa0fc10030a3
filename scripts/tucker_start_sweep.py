#!/usr/bin/env python3
"""Walks the sampling of planted sparse tensors and trains each from the random start and from
the spectral start with one deflation round (tk-tucker train --init random, --init spectral
--deflate 1), printing the test RMSE each ends at and the first iteration within 5% of the
noise (0.105): the measurements behind --init auto's lines (Documentation/benchmarks.md, "The
default start").  Each row: a family's shape, the training entries' density of the best
unfolding's columns (`--densities`), the rank, the synth seed.

    scripts/tucker_start_sweep.py --bin build/bin --families tall,cube --densities 3,6,12 --ranks 4 --seeds 1,2
"""
import argparse
import itertools
import os
import subprocess
import tempfile

# the sizes of each family: the last two modes' product is the first unfolding's 15,000 columns
FAMILIES = {"tall": (4000, 300, 50), "mid": (1000, 150, 100), "cube": (200, 150, 100)}
TARGET = 0.105  # 1.05 x the synth noise 0.1
TEST_FRACTION = 0.05


def train(tool, tns, rank, iters, threads, init, out):
    args = [tool, "train", tns, "--test-fraction", str(TEST_FRACTION), "--rank-j", str(rank), "--rank-r", str(rank),
            "--iters", str(iters), "--threads", str(threads), "--seed", "1", "--force", "--quiet", "--out", out]
    args += ["--init", "random"] if init == "random" else ["--init", "spectral", "--deflate", "1"]
    p = subprocess.run(args, capture_output=True, text=True, check=True)
    test = [float(line.split()[5]) for line in p.stdout.splitlines()[1:] if line.strip()]
    first = next((k + 1 for k, x in enumerate(test) if x <= TARGET), None)
    return test[-1], first


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the folder of the built tools (tk-tucker)")
    ap.add_argument("--families", default="tall,mid,cube", help=f"of {', '.join(FAMILIES)}")
    ap.add_argument("--densities", default="3,6,12", help="training entries a column of the first unfolding")
    ap.add_argument("--ranks", default="4", help="J = R of the planted model and of the training")
    ap.add_argument("--seeds", default="1,2", help="synth seeds")
    ap.add_argument("--iters", type=int, default=40, help="--iters of each run (the spectral runs do twice that)")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    tool = os.path.join(a.bin, "tk-tucker")
    print("| family (shape) | entries a column | a row of mode 1 | J = R | seed | random: test RMSE (first <= 0.105) "
          "| spectral + 1 round (first) | --init auto takes |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as d:
        for fam, dens, rank, seed in itertools.product(a.families.split(","), map(float, a.densities.split(",")),
                                                       map(int, a.ranks.split(",")), map(int, a.seeds.split(","))):
            shape = FAMILIES[fam]
            nnz = int(dens * shape[1] * shape[2] / (1 - TEST_FRACTION))
            tns = os.path.join(d, "s.tns")
            subprocess.run([tool, "synth", "--shape", ",".join(map(str, shape)), "--nnz", str(nnz), "--rank-j",
                            str(rank), "--rank-r", str(rank), "--seed", str(seed), "--allow-duplicates", "--force",
                            "--quiet", tns], check=True, stdout=subprocess.DEVNULL)
            r = train(tool, tns, rank, a.iters, a.threads, "random", os.path.join(d, "m"))
            s = train(tool, tns, rank, a.iters, a.threads, "spectral", os.path.join(d, "m"))
            row = dens * shape[1] * shape[2] / shape[0]
            auto = "spectral" if dens < 8 or row < 32 * rank else "random"  # TK_TUCKER_SPECTRAL_BELOW_*
            print(f"| {fam} {shape[0]} x {shape[1]} x {shape[2]} | {dens:g} | {row:.0f} | {rank} | {seed} | "
                  f"{r[0]:.4f} ({r[1] or '-'}) | {s[0]:.4f} ({s[1] or '-'}) | {auto} |", flush=True)


if __name__ == "__main__":
    main()
