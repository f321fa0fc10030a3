"""python -m tensorkernels --version: the package's and its core's version and backends."""
import argparse
import sys

from . import __version__, _tensorkernels


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tensorkernels",
                                description="TensorKernels' cores for Python (Documentation/python.md)")
    p.add_argument("--version", action="store_true", help="print the version and the backends built, then exit")
    args = p.parse_args(argv)
    if args.version:
        backends = "cpu, omp" + (", cuda" if _tensorkernels.has_cuda() else "")
        print(f"tensorkernels {__version__} (core {_tensorkernels.core_version()}; backends: {backends})")
        return 0
    p.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
