"""The training driver: corpus, examples, learning-rate schedule, threads, progress.

Reads top to bottom: encode the corpus, initialise the matrix, then for every epoch
shuffle the targets and hand the compiled kernel one batch at a time. Between batches the
driver checks the loss for NaN, draws the progress line and lets Ctrl-C through.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from .config import TrainConfig
from .corpus import Corpus, CorpusError, load_corpus
from .model import Model
from .progress import Progress

# Examples per kernel call: long enough to amortise the thread launch, short enough for
# a lively progress line and a prompt Ctrl-C.
BATCH = 1 << 15


class TrainingError(RuntimeError):
    """Training diverged or cannot start."""


@dataclass
class TrainResult:
    model: Model
    seconds: float
    examples: int
    losses: list = field(default_factory=list)  # mean loss of each batch, in order


def resolve_threads(threads: int) -> int:
    import numba

    available = numba.config.NUMBA_NUM_THREADS
    if threads == 0:
        return available
    if threads > available:
        raise TrainingError(f"--threads {threads} is more than the {available} threads numba can use here")
    return threads


def trainable_targets(corpus: Corpus) -> np.ndarray:
    """Sentences with at least one neighbour in their document (int64, sorted)."""
    doc = np.asarray(corpus.sent_doc)
    has = np.zeros(len(doc), dtype=bool)
    same = doc[1:] == doc[:-1]
    has[1:] |= same
    has[:-1] |= same
    return np.flatnonzero(has).astype(np.int64)


def init_vectors(n_words: int, config: TrainConfig) -> np.ndarray:
    rng = np.random.default_rng(config.seed)
    W = rng.standard_normal((n_words, config.dim), dtype=np.float32)
    W *= np.float32(config.init_std)
    return W


def train(corpus, config: TrainConfig | None = None, quiet: bool = False, cache_dir=None, use_cache: bool = True,
          on_batch=None) -> TrainResult:
    """Train Siamese CBOW embeddings.

    ``corpus`` is a :class:`~scbow.corpus.Corpus` or paths of text files. ``on_batch``,
    if given, is called as ``on_batch(examples_done, W)`` after every kernel call.
    """
    config = config or TrainConfig()
    if config.device != "cpu":
        raise TrainingError(f"device {config.device!r} is not handled by the CPU trainer")
    threads = resolve_threads(config.threads)
    if not isinstance(corpus, Corpus):
        reading = Progress(0, unit="tok", enabled=None if not quiet else False)
        corpus = load_corpus(corpus, config.min_count, config.max_vocab, cache_dir=cache_dir,
                             use_cache=use_cache, progress=lambda n: reading.update(n, prefix="reading corpus: "))
        reading.close()
    targets = trainable_targets(corpus)
    if corpus.n_sentences < 4 or len(targets) == 0:
        raise CorpusError(
            f"no training example: the corpus has {corpus.n_sentences} usable sentences in "
            f"{corpus.n_documents} documents; an example needs a sentence with a neighbour in its "
            "document and at least 4 sentences in all"
        )

    from . import kernels  # noqa: F401  (numba is imported here, not at package import)
    from .kernels.cpu import NEG_DOCUMENT, NEG_UNIFORM, N_FPARAMS, N_IPARAMS, train_batch_parallel, train_batch_serial
    from .kernels import cpu as K
    import numba

    W = init_vectors(len(corpus.vocab), config)
    tokens = np.ascontiguousarray(corpus.tokens)
    offsets = np.ascontiguousarray(corpus.offsets)
    sent_doc = np.ascontiguousarray(corpus.sent_doc)
    doc_offsets = np.ascontiguousarray(corpus.doc_offsets)
    n_targets = len(targets)
    total = n_targets * config.epochs

    if threads == 1:
        kernel = train_batch_serial
    else:
        numba.set_num_threads(threads)
        kernel = train_batch_parallel
    fparams = np.zeros(N_FPARAMS, dtype=np.float64)
    fparams[K.P_LR] = config.lr
    fparams[K.P_LR_MIN] = config.lr * config.min_lr_fraction
    fparams[K.P_TOTAL] = total
    iparams = np.zeros(N_IPARAMS, dtype=np.int64)
    iparams[K.P_NEGATIVES] = config.negatives
    iparams[K.P_MAX_LEN] = config.max_length
    iparams[K.P_NEG_MODE] = NEG_DOCUMENT if config.negative_mode == "document" else NEG_UNIFORM
    iparams[K.P_SEED] = config.seed
    iparams[K.P_CHUNKS] = threads
    stats = np.zeros((threads, 2), dtype=np.float64)

    bar = Progress(total, unit="ex", enabled=None if not quiet else False)
    losses: list[float] = []
    done = 0
    seconds = 0.0
    shuffle = np.random.default_rng([config.seed, 1])
    try:
        for epoch in range(config.epochs):
            order = shuffle.permutation(targets)
            for lo in range(0, n_targets, BATCH):
                hi = min(lo + BATCH, n_targets)
                iparams[K.P_LO] = lo
                iparams[K.P_HI] = hi
                iparams[K.P_DONE] = done
                t0 = time.perf_counter()
                kernel(W, tokens, offsets, sent_doc, doc_offsets, order, fparams, iparams, stats)
                seconds += time.perf_counter() - t0
                n = stats[:, 1].sum()
                loss = stats[:, 0].sum() / max(n, 1)
                done += hi - lo
                if not np.isfinite(loss):
                    raise TrainingError(
                        f"the loss became {loss} after {done:,} examples: the learning rate "
                        f"({config.lr:g}) is probably too high; try a smaller --lr"
                    )
                losses.append(float(loss))
                bar.update(done, prefix=f"epoch {epoch + 1}/{config.epochs} ", suffix=f"loss {loss:.4f}")
                if on_batch is not None:
                    on_batch(done, W)
    finally:
        bar.close()
    if not np.isfinite(W).all():
        raise TrainingError("the embeddings hold NaN or inf: the learning rate is probably too high; try a smaller --lr")

    info = {
        "corpus": {k: v for k, v in corpus.stats.items()},
        "training": {
            "examples": done,
            "targets_per_epoch": n_targets,
            "threads": threads,
            "kernel_seconds": round(seconds, 3),
            "examples_per_second": round(done / seconds, 1) if seconds else None,
            "first_loss": losses[0] if losses else None,
            "final_loss": float(np.mean(losses[-max(1, len(losses) // 20):])) if losses else None,
        },
    }
    model = Model(corpus.vocab, W, config.to_dict(), info)
    return TrainResult(model=model, seconds=seconds, examples=done, losses=losses)


def default_threads() -> int:
    return os.cpu_count() or 1
