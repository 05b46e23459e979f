"""The training driver: corpus, examples, learning-rate schedule, threads, progress.

Reads top to bottom: encode the corpus, initialise the matrix, then for every epoch
shuffle the targets and hand the compiled kernel one batch at a time. Between batches the
driver checks the loss for NaN, draws the progress line and lets Ctrl-C through.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .config import TrainConfig
from .corpus import Corpus, load_corpus
from .errors import CorpusError, TrainingError
from .model import Model, mean_rows
from .progress import Progress

# Examples per kernel call: long enough to amortise the thread launch, short enough for
# a lively progress line and a prompt Ctrl-C.
BATCH = 1 << 15


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


def sample_sentence_means(W: np.ndarray, corpus: Corpus, n: int, seed: int) -> np.ndarray:
    """Averages of up to ``n`` random corpus sentences: float64, shape (m, d)."""
    rng = np.random.default_rng([seed, 2])
    pick = np.sort(rng.choice(corpus.n_sentences, size=min(n, corpus.n_sentences), replace=False))
    starts = np.asarray(corpus.offsets[pick])
    stops = np.asarray(corpus.offsets[pick + 1])
    out = np.empty((len(pick), W.shape[1]), dtype=np.float64)
    step = 4096  # bounds the gathered rows to a few hundred MB
    for lo in range(0, len(pick), step):
        a, b = starts[lo : lo + step], stops[lo : lo + step]
        lengths = b - a
        positions = np.repeat(b - np.cumsum(lengths), lengths) + np.arange(lengths.sum())
        out[lo : lo + step] = mean_rows(W, np.asarray(corpus.tokens[positions]), lengths)
    return out


def remove_common_components(W: np.ndarray, corpus: Corpus, k: int, seed: int, sample: int = 100_000) -> None:
    """Centre the sentence averages of the corpus and project out their top ``k`` directions.

    Both are linear maps, and averaging commutes with a linear map, so applying them to
    every word vector (in place) applies them to every sentence average: the model stays
    "the plain average of word vectors". Averages share a large common component (frequent
    words, style) that inflates every cosine; removing it is what SIF and all-but-the-top
    do. Estimated on ``sample`` training sentences, never on evaluation data.
    """
    S = sample_sentence_means(W, corpus, sample, seed)
    mean = S.mean(axis=0)
    W -= mean.astype(np.float32)
    if k > 0:
        U = np.linalg.svd(S - mean, full_matrices=False)[2][:k]
        W -= ((W.astype(np.float64) @ U.T) @ U).astype(np.float32)


def kernel_params(config: TrainConfig, threads: int, total: int):
    """The float64 and int64 parameter arrays of ``train_batch`` (layout in kernels.cpu)."""
    from .kernels import cpu as K

    fparams = np.zeros(K.N_FPARAMS, dtype=np.float64)
    fparams[K.P_LR] = config.lr
    fparams[K.P_LR_MIN] = config.lr * config.min_lr_fraction
    fparams[K.P_TOTAL] = total
    fparams[K.P_DECAY] = config.weight_decay
    iparams = np.zeros(K.N_IPARAMS, dtype=np.int64)
    iparams[K.P_NEGATIVES] = config.negatives
    iparams[K.P_MAX_LEN] = config.max_length
    iparams[K.P_NEG_MODE] = K.NEG_DOCUMENT if config.negative_mode == "document" else K.NEG_UNIFORM
    iparams[K.P_SEED] = config.seed
    iparams[K.P_CHUNKS] = threads
    return fparams, iparams


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

    import numba  # imported here, not at package import: `--help` stays fast

    from .kernels import cpu as K
    from .kernels.cpu import train_batch_parallel, train_batch_serial

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
    fparams, iparams = kernel_params(config, threads, total)
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
    if config.common_components >= 0:
        remove_common_components(W, corpus, min(config.common_components, config.dim // 10), config.seed)

    info = {
        "corpus": dict(corpus.stats),
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

