"""What a run starts from: its training targets, the words' frequency weights and step
rates, and the initial matrix. Plain numpy, shared by the trainer, the pretrained start
(``scbow.training.pretrained``) and the benchmarks.
"""

from __future__ import annotations

import numpy as np

from ..config import TrainConfig
from ..vectors.numeric import word_weights  # noqa: F401  (its home: shared with the STS overlap control)
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
    raw = corpus.stats.get("raw_tokens") or int(np.asarray(corpus.vocab.counts).sum())
    return word_weights(corpus.vocab.counts, raw, config.frequency_weight)


def init_vectors(n_words: int, config: TrainConfig, weights: np.ndarray | None = None) -> np.ndarray:
    """N(0, init_std) rows, row w scaled by ``weights[w]`` when given.

    With frequency weights the plain average of the initial rows is the weighted average
    of fixed random vectors: SIF-weighted word overlap, the untrained starting point.
    """
    rng = np.random.default_rng(config.seed)
    W = rng.standard_normal((n_words, config.dim), dtype=np.float32)
    W *= np.float32(config.init_std)
    if weights is not None:
        W *= weights[:, None]
    return W


def step_rates(weights: np.ndarray, counts, config: TrainConfig) -> np.ndarray:
    """Per-word factors of the SGD step (float32, see ``kernels.cpu.sgd_step``).

    ``weights**2`` (rows ``W = a * U`` trained with factor ``a**2`` are plain SGD on ``U``,
    whose sentences are ``a``-weighted averages) times
    ``min(1, count_floor / count) ** count_power``.
    """
    counts = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    damp = np.minimum(1.0, config.count_floor / counts) ** config.count_power
    return np.ascontiguousarray(weights.astype(np.float64) ** 2 * damp, dtype=np.float32)
