"""The one entry point of the benchmarks.

    python -m benchmarks.run speed [--quick] [--corpus 10M] [--threads 1,2] [--repeats 3] [--skip-100m] ...
    python -m benchmarks.run all [OPTIONS]      # every suite below in turn, with the same options
    python -m benchmarks.run speed --help       # every option of a suite

Suites:

  speed   issue 5: training kernel and its scaling, the PyTorch peer, end to end against
          gensim CBOW, preprocessing, cached reload, STS inference, memory, bandwidth
          (benchmarks/speed.py; report benchmarks/results/speed.md and .json)

``python -m benchmarks.throughput`` (the earlier kernel/preprocessing report) and
``python -m benchmarks.sweep`` (dev-set hyperparameter sweep) still run on their own.
"""

from __future__ import annotations

import sys


def _speed(argv, prog):
    from . import speed

    speed.main(argv, prog=prog)


SUITES = {"speed": _speed}


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if argv else 2)
    name, rest = argv[0], argv[1:]
    if name == "all":
        for suite, run in SUITES.items():
            print(f"== {suite}", file=sys.stderr, flush=True)
            run(rest, f"python -m benchmarks.run {suite}")
        return
    if name not in SUITES:
        sys.exit(f"unknown suite {name!r}; choose from: {', '.join(SUITES)}, all")
    SUITES[name](rest, f"python -m benchmarks.run {name}")


if __name__ == "__main__":
    main()
