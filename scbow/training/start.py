"""What a run starts from (:func:`prepare`): its targets, the words' frequency weights and step rates, and
the initial matrix; plus the word part's sampling tables. Plain numpy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import TrainConfig
from ..errors import ConfigError, CorpusError, TrainingError
from ..progress import plural
from ..vectors.numeric import word_weights  # its home: shared with the STS overlap control
from .corpus import Corpus


def trainable_targets(corpus: Corpus) -> np.ndarray:
    """Sentences with at least one neighbour in their document (int64, sorted)."""
    doc = np.asarray(corpus.sent_doc)
    has = np.zeros(len(doc), dtype=bool)
    same = doc[1:] == doc[:-1]
    has[1:] |= same
    has[:-1] |= same
    return np.flatnonzero(has).astype(np.int64)


def corpus_weights(corpus: Corpus, config: TrainConfig) -> np.ndarray:
    """:func:`word_weights` of the corpus's vocabulary under ``config.frequency_weight``."""
    return word_weights(corpus.vocab.counts, corpus.raw_tokens, config.frequency_weight)


def init_vectors(n_words: int, config: TrainConfig, weights: np.ndarray | None = None) -> np.ndarray:
    """N(0, init_std) rows, row w scaled by ``weights[w]`` when given (then the plain average of the rows is
    SIF-weighted word overlap of fixed random vectors: the untrained starting point)."""
    rng = np.random.default_rng(config.seed)
    W = rng.standard_normal((n_words, config.dim), dtype=np.float32)
    W *= np.float32(config.init_std)
    if weights is not None:
        W *= weights[:, None]
    return W


def step_rates(weights: np.ndarray, counts, config: TrainConfig) -> np.ndarray:
    """Per-word factors of the SGD step (float32, ``kernels.cpu.sgd_step``): ``weights**2`` (so rows ``a * U``
    train as plain SGD on ``U``) times ``min(1, count_floor / count) ** count_power``."""
    counts = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    damp = np.minimum(1.0, config.count_floor / counts) ** config.count_power
    return np.ascontiguousarray(weights.astype(np.float64) ** 2 * damp, dtype=np.float32)


# The word part's noise table: ids in proportion to count**0.75 (word2vec's), at most 16 MiB, else 100 a word.
NOISE_TABLE = 1 << 22
NOISE_POWER = 0.75


def noise_table(counts) -> np.ndarray:
    """int32 word ids, ``count(w)**0.75`` of them per unit (a table drawn from uniformly)."""
    counts = np.maximum(np.asarray(counts, dtype=np.float64), 0.0)
    size = min(NOISE_TABLE, max(100 * len(counts), 1))
    p = counts ** NOISE_POWER
    cum = np.cumsum(p) / max(p.sum(), 1e-300)
    ids = np.searchsorted(cum, (np.arange(size) + 0.5) / size, side="right")
    return np.minimum(ids, len(counts) - 1).astype(np.int32)


def keep_probabilities(counts, raw_tokens: int, sample: float) -> np.ndarray:
    """word2vec's subsampling: keep a word of share f with probability (sqrt(f/t) + 1) t/f, at most 1."""
    counts = np.asarray(counts, dtype=np.float64)
    if sample <= 0:
        return np.ones(len(counts), dtype=np.float32)
    threshold = sample * max(float(raw_tokens), float(counts.sum()), 1.0)
    c = np.maximum(counts, 1e-300)
    return np.minimum((np.sqrt(c / threshold) + 1.0) * threshold / c, 1.0).astype(np.float32)


def output_biases(counts, keep, negatives: int) -> np.ndarray:
    """The output biases at their optimum for zero rows, ``log(p_context(o) / (k * p_noise(o)))``: the first
    steps then do not push every row one way (a common direction that flattens the cosines)."""
    counts = np.maximum(np.asarray(counts, dtype=np.float64), 1e-12)
    context = counts * np.asarray(keep, dtype=np.float64)
    noise = counts ** NOISE_POWER
    return np.log(context / context.sum() / (negatives * noise / noise.sum())).astype(np.float32)


@dataclass
class Start:
    """A run's targets (int64), frequency weights, initial matrix ``W`` (float32, fresh) and step rates."""

    targets: np.ndarray
    weights: np.ndarray
    W: np.ndarray
    rates: np.ndarray


def prepare(corpus: Corpus, config: TrainConfig, init=None) -> Start:
    """Everything a run of ``config`` on ``corpus`` starts from, checked.

    ``init``: None (random rows) or a matrix used as it is (a checkpoint's). Raises CorpusError (no example),
    ConfigError (too many negatives) or TrainingError (a matrix of the wrong shape).
    """
    targets = trainable_targets(corpus)
    if corpus.n_sentences < 4 or len(targets) == 0:
        raise CorpusError(
            f"no training example: the corpus has {plural(corpus.n_sentences, 'usable sentence')} in "
            f"{plural(corpus.n_documents, 'document')}; an example needs a sentence with a neighbour in its "
            "document and at least 4 sentences in all"
        )
    if config.negatives >= corpus.n_sentences - 1:
        raise ConfigError(
            f"negatives must be fewer than the sentences a negative is drawn from: this corpus has "
            f"{plural(corpus.n_sentences, 'usable sentence')}, so at most "
            f"{plural(max(corpus.n_sentences - 2, 0), 'negative')} "
            f"(the paper's best is 2), got {config.negatives:,}")
    weights = corpus_weights(corpus, config)
    if init is None:
        W = init_vectors(len(corpus.vocab), config, weights)
    else:
        if init.shape != (len(corpus.vocab), config.dim):
            raise TrainingError(f"initial vectors have shape {init.shape}; this run needs "
                                f"{(len(corpus.vocab), config.dim)}")
        W = np.array(init, dtype=np.float32, order="C", copy=True)
    return Start(targets, weights, W, step_rates(weights, corpus.vocab.counts, config))
