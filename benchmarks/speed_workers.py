"""Fresh-process measurements of the speed suite: one job per process, one JSON line out
(``python -m benchmarks.speed_workers JOB --help``).

Every job prints a JSON object as its last stdout line: phase times (``time.perf_counter``,
imports of the libraries not counted, reported as ``import_seconds``) and memory read from
``benchmarks.common.memory_mib`` (``VmHWM`` is the peak resident set, ``VmRSS`` the current one).

- ``scbow-e2e``: raw text to a saved model, one epoch, what ``scbow-numba train --epochs 1``
  does with an empty corpus cache: compile (the first training call, on a tiny corpus),
  encode the text, train (kernel epoch, then the common-component post-processing), save.
- ``gensim-e2e``: gensim word2vec CBOW with its own tokenizer
  (``gensim.utils.simple_preprocess`` per line, the list of token lists kept in memory), the
  paper's settings (window 5, min count 5, sample 1e-5, negative 5), ``workers=threads``,
  one epoch: tokenize, build the vocabulary, train, ``model.save``.
- ``gensim-skipgram``: one epoch of gensim's skip-gram on a token file: the word part's peer.
- ``build-cache``: the corpus cache of a file (what ``scbow-memory`` reloads).
- ``scbow-memory``: peak RSS of training one epoch on an already cached corpus. The
  kernels are compiled first on a tiny corpus, then the peak is reset (``clear_refs``) so
  that it covers only loading the corpus and training.
"""

from __future__ import annotations

import time

_T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

from benchmarks.common import memory_mib as proc_status  # noqa: E402
from benchmarks.common import reset_peak  # noqa: E402

TINY_DOC = "the cat sat on the mat .\nthe dog ran to the cat .\na bird sang .\nthe sun was red .\n"


def _warm(config, tmp: Path) -> float:
    """Train once on a tiny corpus: compiles (or loads) every kernel the real run calls."""
    from scbow.training import load_corpus, train

    tiny = tmp / "warmup.txt"
    tiny.write_text((TINY_DOC * 3 + "\n") * 4 * config.min_count)
    t0 = time.perf_counter()
    corpus = load_corpus([tiny], config.min_count, config.max_vocab, cache_dir=tmp / "warm-cache")
    train(corpus, config.replace(common_components=-1), quiet=True)
    return time.perf_counter() - t0


def scbow_e2e(args) -> dict:
    import numba  # noqa: F401  (the import the CLI pays too, counted with the others)

    from scbow.config import TrainConfig
    from scbow.training import load_corpus, train
    from scbow.vectors.modeldir import save_model

    t_imported = time.perf_counter()
    config = TrainConfig(dim=args.dim, epochs=1, threads=args.threads)
    if args.word_passes is not None:
        config = config.replace(word_passes=args.word_passes)
    out = Path(args.out)
    t0 = time.perf_counter()
    compile_s = _warm(config, out)
    t1 = time.perf_counter()
    corpus = load_corpus([args.text], config.min_count, config.max_vocab, cache_dir=args.cache_dir)
    t2 = time.perf_counter()
    result = train(corpus, config, quiet=True)
    t3 = time.perf_counter()
    save_model(result.model, out / "model")
    t4 = time.perf_counter()
    word = (result.model.info["training"].get("word_part") or {}).get("kernel_seconds", 0.0)
    return {
        "system": "scbow",
        "dim": args.dim,
        "word_passes": config.word_passes,
        "threads": args.threads,
        "import_seconds": round(t_imported - _T_START, 3),
        "seconds": round(t4 - t0, 3),
        "phases": {
            "compile": round(compile_s, 3),
            "encode": round(t2 - t1, 3),
            "kernel": round(result.seconds, 3),
            "word_part": round(word, 3),
            "post_process": round(t3 - t2 - result.seconds - word, 3),
            "save": round(t4 - t3, 3),
        },
        "examples": result.examples,
        "raw_tokens": corpus.stats["raw_tokens"],
        "kept_tokens": corpus.stats["tokens"],
        "vocab_size": len(corpus.vocab),
        "model": str(out / "model"),
        "memory_mib": proc_status(),
    }


def gensim_skipgram(args) -> dict:
    """One epoch of gensim's skip-gram on a token file (one sentence a line, scbow's kept tokens):
    the word part's peer at the same settings. Times ``train`` alone (the vocabulary is built first)."""
    import gensim
    from gensim.models import Word2Vec
    from gensim.models.word2vec import LineSentence

    sentences = LineSentence(args.tokens)
    model = Word2Vec(vector_size=args.dim, window=args.window, min_count=1, sample=args.sample, negative=args.negative,
                     hs=0, sg=1, alpha=args.alpha, workers=args.threads, seed=1)
    model.build_vocab(sentences)
    t0 = time.perf_counter()
    _, effective = model.train(sentences, total_examples=model.corpus_count, epochs=1)
    return {"system": "gensim-skipgram", "gensim": gensim.__version__, "train_seconds": round(time.perf_counter() - t0, 3),
            "effective_words": int(effective), "threads": args.threads}


def gensim_e2e(args) -> dict:
    import gensim
    from gensim.models import Word2Vec
    from gensim.models.word2vec_inner import FAST_VERSION
    from gensim.utils import simple_preprocess

    t_imported = time.perf_counter()
    out = Path(args.out)
    t0 = time.perf_counter()
    sentences = []
    with open(args.text, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            tokens = simple_preprocess(line)
            if tokens:
                sentences.append(tokens)
    t1 = time.perf_counter()
    model = Word2Vec(vector_size=args.dim, window=5, min_count=5, sample=1e-5, negative=5, sg=0, cbow_mean=1,
                     workers=args.threads, epochs=1, seed=1)
    model.build_vocab(sentences)
    t2 = time.perf_counter()
    model.train(sentences, total_examples=model.corpus_count, epochs=1)
    t3 = time.perf_counter()
    model.save(str(out / "word2vec.model"))
    t4 = time.perf_counter()
    raw_words = int(model.corpus_total_words)
    return {
        "system": "gensim",
        "gensim": gensim.__version__,
        "fast_version": FAST_VERSION,
        "dim": args.dim,
        "threads": args.threads,
        "settings": {"sg": 0, "cbow_mean": 1, "window": 5, "min_count": 5, "sample": 1e-5, "negative": 5,
                     "epochs": 1, "tokenizer": "gensim.utils.simple_preprocess"},
        "import_seconds": round(t_imported - _T_START, 3),
        "seconds": round(t4 - t0, 3),
        "phases": {
            "tokenize": round(t1 - t0, 3),
            "build_vocab": round(t2 - t1, 3),
            "train": round(t3 - t2, 3),
            "save": round(t4 - t3, 3),
        },
        "sentences": len(sentences),
        "raw_words": raw_words,
        "train_raw_words_per_s": round(raw_words / (t3 - t2), 1),
        "vocab_size": len(model.wv),
        "memory_mib": proc_status(),
    }


def build_cache(args) -> dict:
    from scbow.config import TrainConfig
    from scbow.training import load_corpus

    config = TrainConfig()
    t0 = time.perf_counter()
    corpus = load_corpus([args.corpus], config.min_count, config.max_vocab, cache_dir=args.cache_dir)
    return {"seconds": round(time.perf_counter() - t0, 3), "raw_tokens": corpus.stats["raw_tokens"],
            "tokens": corpus.stats["tokens"], "vocab_size": len(corpus.vocab), "cache_path": corpus.cache_path,
            "memory_mib": proc_status()}


def scbow_memory(args) -> dict:
    import gc

    import numpy as np

    from scbow.config import TrainConfig
    from scbow.training import Hook, load_corpus, train

    config = TrainConfig(dim=args.dim, epochs=1, threads=args.threads)
    tmp = Path(args.out)
    _warm(config, tmp)
    gc.collect()
    idle = proc_status()
    reset = reset_peak()
    marks = {}

    class Marks(Hook):
        def after_batch(self, state, matrices):
            if "first_batch" not in marks:
                marks["first_batch"] = proc_status()

        def after_epoch(self, state, matrices):
            marks["end_of_epoch"] = proc_status()

    t0 = time.perf_counter()
    corpus = load_corpus([args.corpus], config.min_count, config.max_vocab, cache_dir=args.cache_dir)
    if not corpus.from_cache:  # the peak would hold the encoding too
        raise SystemExit(f"{args.corpus}: no cached encoding in {args.cache_dir}; run build-cache first")
    result = train(corpus, config, quiet=True, hooks=[Marks()])
    seconds = time.perf_counter() - t0
    end = proc_status()
    V, d = result.model.vectors.shape
    token_bytes = int(np.asarray(corpus.tokens).nbytes)
    # the matrices a run holds: the sentence part's rows, and with a word part its input and
    # output rows (d = dim + word_dim: the saved rows are both parts)
    matrix_bytes = int(V * (d + (config.word_dim + 1 if config.word_passes else 0)) * 4)
    other_arrays = int(sum(np.asarray(a).nbytes for a in (corpus.offsets, corpus.sent_doc, corpus.doc_offsets)))
    return {
        "corpus": str(args.corpus),
        "dim": d,
        "threads": args.threads,
        "vocab_size": V,
        "tokens": len(corpus.tokens),
        "sentences": corpus.n_sentences,
        "examples": result.examples,
        "seconds": round(seconds, 3),
        "kernel_seconds": round(result.seconds, 3),
        "token_bytes": token_bytes,
        "matrix_bytes": matrix_bytes,
        "other_corpus_bytes": other_arrays,
        "peak_reset": reset,
        "idle_mib": idle,  # after imports and compiling, before the corpus is loaded
        "first_batch_mib": marks.get("first_batch", {}),
        "end_of_epoch_mib": marks.get("end_of_epoch", {}),
        "end_mib": end,  # after the common-component post-processing
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.speed_workers", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="job", required=True)
    jobs = {"scbow-e2e": scbow_e2e, "gensim-e2e": gensim_e2e, "gensim-skipgram": gensim_skipgram,
            "build-cache": build_cache, "scbow-memory": scbow_memory}
    p = {name: sub.add_parser(name) for name in jobs}
    for name, positional in (("scbow-e2e", "text out"), ("gensim-e2e", "text out"), ("gensim-skipgram", "tokens"),
                             ("build-cache", "corpus"), ("scbow-memory", "corpus out")):
        for a in positional.split():
            p[name].add_argument(a)
    for name in ("scbow-e2e", "build-cache", "scbow-memory"):
        p[name].add_argument("--cache-dir", required=True)
    for name, dim in (("scbow-e2e", 100), ("gensim-e2e", 300), ("gensim-skipgram", 300), ("scbow-memory", 100)):
        p[name].add_argument("--threads", type=int, default=2)
        p[name].add_argument("--dim", type=int, default=dim)
    p["scbow-e2e"].add_argument("--word-passes", type=int, default=None, help="default: TrainConfig's")
    for option, kind, default in (("--sample", float, 1e-5), ("--window", int, 5), ("--negative", int, 5),
                                  ("--alpha", float, 0.025)):
        p["gensim-skipgram"].add_argument(option, type=kind, default=default)
    args = ap.parse_args(argv)
    Path(getattr(args, "out", ".")).mkdir(parents=True, exist_ok=True)
    print(json.dumps(jobs[args.job](args)), flush=True)


if __name__ == "__main__":
    main()
