"""One timed job of the ``ab`` suite, in a fresh process of one checkout: one JSON line out.

    PYTHONPATH=CHECKOUT python -P benchmarks/ab_worker.py CORPUS --threads N --cache-dir DIR --expect ROOT
    ... --warm TINY_TEXT     # instead: build CORPUS's cache and train once on TINY_TEXT (untimed)

Run as a script (``-P``: its folder is not on ``sys.path``), so that ``scbow`` is the
checkout's on ``PYTHONPATH``; it imports nothing of ``benchmarks`` (the other checkout may
not have it in this form) and only what both checkouts have: ``load_corpus``, ``train`` and
``TrainResult.examples`` / ``.seconds``, from ``scbow.training`` or, in an older checkout,
from the modules that held them then (the only training internals the harness imports).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from importlib import metadata
from pathlib import Path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="ab_worker.py")
    ap.add_argument("corpus")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--expect", required=True, help="the checkout scbow must be imported from")
    ap.add_argument("--warm", default=None, help="a tiny text: build the cache, train once on it, time nothing")
    ap.add_argument("--dim", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    import scbow

    where = Path(scbow.__file__).resolve()
    if Path(args.expect).resolve() not in where.parents:
        raise SystemExit(f"scbow was imported from {where}, not from {args.expect}: check PYTHONPATH")
    from scbow.config import TrainConfig

    try:
        from scbow.training import load_corpus, train
    except ImportError:  # an older checkout, before scbow.training's public names
        try:
            from scbow.training.corpus import load_corpus
            from scbow.training.trainer import train
        except ImportError:  # before the layer folders (scbow/training/)
            from scbow.corpus import load_corpus
            from scbow.trainer import train

    fields = {"threads": args.threads, "epochs": 1, "seed": args.seed, "common_components": -1}
    if hasattr(TrainConfig(), "word_passes"):  # the sentence part is what is timed: no word part after it
        fields["word_passes"] = 0
    if args.dim:
        fields["dim"] = args.dim
    config = TrainConfig(**fields)
    corpus = load_corpus([args.corpus], config.min_count, config.max_vocab, cache_dir=args.cache_dir)
    if args.warm:
        corpus = load_corpus([args.warm], config.min_count, config.max_vocab, cache_dir=args.cache_dir)
    result = train(corpus, config, quiet=True)
    versions = {"python": platform.python_version(), "scbow": getattr(scbow, "__version__", None),
                **{name: metadata.version(name) for name in ("numpy", "numba", "llvmlite")}}  # all installed
    print(json.dumps({
        "warm": bool(args.warm),
        "threads": args.threads,
        "dim": config.dim,
        "examples": int(result.examples),
        "seconds": float(result.seconds),
        "examples_per_s": result.examples / result.seconds if result.seconds > 0 else None,
        "scbow_file": str(where),
        "versions": versions,
    }), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
