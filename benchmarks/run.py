"""The one entry point of the benchmarks: ``python -m benchmarks.run SUITE [options]``.

    python -m benchmarks.run --help            # the suites, one line each
    python -m benchmarks.run SUITE --help      # every option of a suite
    python -m benchmarks.run speed --quick     # a plumbing check of the speed suite

Every suite is a module of ``benchmarks/`` with a ``main(argv)``; it writes its report as
``benchmarks/results/<name>.md`` and ``.json`` (machine, threads, versions recorded). The
goals the reports judge against are in ``benchmarks/targets.py``; what was tried on the
kernel, and what it did, is in ``benchmarks/NOTES.md``. Finished research (the searches that
chose the defaults, the prototypes, sweeps and studies) is retired: its reports stay in
``benchmarks/results/`` as history, its code in git (``benchmarks/README.md``, "Retired research").
"""

from __future__ import annotations

import importlib
import inspect
import sys

SUITES = {  # name: (module of benchmarks/, one line for --help)
    "speed": ("speed", "training kernel and its scaling (real backend), PyTorch peer, end to end vs gensim, "
                       "preprocessing, reload, STS inference, memory"),
    "ab": ("ab", "kernel examples/s of this checkout against another (--base), alternating fresh processes"),
    "quality": ("quality", "every system on gutenberg-100M: 19 SemEval STS sets, STS-B dev, word similarity"),
    "quality_ja": ("quality_ja", "Japanese on the Aozora corpus, JSTS dev: the tokenizer rules, the defaults against "
                                 "SIF-weighted overlap, skip-gram and fastText, neighbours, tokenizing speed"),
    "word_part": ("word_part", "the word part's passes, width and mix on the STS-B dev set (the defaults' choice)"),
    "unknown_pieces": ("unknown_pieces", "unknown words as pieces against hashed words on the STS-B dev set (the rule's "
                                         "choice)"),
    "export_parity": ("export_parity", "exported sentence-transformers and model2vec folders against the model's encode "
                                       "(19 STS sets, 2015.headlines)"),
    "embed_speed": ("embed_speed", "`scbow-numba embed` lines per minute"),
    "most_similar": ("most_similar", "`model.wv.most_similar` against gensim's KeyedVectors"),
    "gpu": ("gpu", "the CUDA path against the CPU path (needs a GPU)"),
    "gpu_check": ("gpu_check", "what a session with a GPU checks (benchmarks/gpu_check.sh): both parts on both "
                               "devices on 10M and 1M, the 30-sentence corpus, --lr 1e30"),
    "cluster": ("cluster_embed", "`embed` on a local Dask cluster against one process; 1B/10B sentences on paper"),
    "index": ("ann_index", "nearest-sentence search: faiss-cpu and scbow.use.index against exact search"),
    "search_payoff": ("search_payoff", "when an index pays off: `neighbors --in` scans against `embed` + `index` "
                                       "then `neighbors --index`, on 1M and 10M"),
}
ALIASES = {"embed": "embed_speed"}


def usage() -> str:
    width = max(map(len, SUITES))
    lines = [__doc__.strip(), "", "Suites:", ""]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in SUITES.items()]
    lines += ["", "Aliases: " + ", ".join(f"{a} = {n}" for a, n in ALIASES.items())]
    return "\n".join(lines)


def run_suite(name: str, argv: list[str]):
    """Import the suite's module and call its ``main`` with ``argv`` (and ``prog``, where it takes one)."""
    name = ALIASES.get(name, name)
    module = importlib.import_module(f"benchmarks.{SUITES[name][0]}")
    prog = f"python -m benchmarks.run {name}"
    if "prog" in inspect.signature(module.main).parameters:
        return module.main(argv, prog=prog)
    return module.main(argv)


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        sys.exit(0 if argv else 2)
    name, rest = argv[0], argv[1:]
    if ALIASES.get(name, name) not in SUITES:
        sys.exit(f"unknown suite {name!r}; choose from: {', '.join(SUITES)} (python -m benchmarks.run --help)")
    run_suite(name, rest)


if __name__ == "__main__":
    main()
