"""Post-processing: centre the corpus's sentence averages and remove their common directions.

Averages of word vectors share a large common component (frequent words, style) that inflates every
cosine; removing it is what SIF and all-but-the-top do. Both steps are linear, and averaging commutes
with a linear map, so applied to the word vectors they apply to every sentence average: the model
stays "the plain average of word vectors".

:class:`CommonComponents` is the one estimator (a fixed sample of training sentences, never
evaluation data), :class:`SentenceSample` the one averager of a sample of sentences (also read by
``collapse`` and ``wordpart``).
"""

from __future__ import annotations

import numpy as np


def sample_sentences(n_sentences: int, n: int, seed: int, stream: int = 2) -> np.ndarray:
    """Up to ``n`` random sentences (sorted int64) for ``seed`` from its ``stream`` (2: post-processing)."""
    rng = np.random.default_rng([seed, stream])
    return np.sort(rng.choice(n_sentences, size=min(n, n_sentences), replace=False)).astype(np.int64)


# Sentences the post-processing of a trained model is estimated on.
COMMON_SAMPLE = 100_000


class SentenceSample:
    """The sentences ``pick`` (sorted int64 ids) of a corpus, averaged under any matrix, ``block`` at a time
    (those with a known word only) by ``kernels.embed`` reading the token ids in place."""

    def __init__(self, corpus, pick: np.ndarray, block: int = 8192):
        self.tokens = np.asarray(corpus.tokens)
        self.offsets = np.asarray(corpus.offsets)
        self.pick = pick
        self.block = block

    def spans(self):
        """Yield ``(starts, stops)`` (contiguous int64) of each block's sentences with a known word."""
        for lo in range(0, len(self.pick), self.block):
            p = self.pick[lo : lo + self.block]
            starts, stops = self.offsets[p], self.offsets[p + 1]
            keep = stops > starts
            if keep.any():
                yield np.ascontiguousarray(starts[keep]), np.ascontiguousarray(stops[keep])

    def blocks(self, W: np.ndarray):
        """Yield the float32 averages of the rows of ``W`` over each block's sentences (n x d)."""
        from ..kernels.embed import mean_lines

        W = np.ascontiguousarray(W, dtype=np.float32)
        for starts, stops in self.spans():
            S = np.empty((len(starts), W.shape[1]), dtype=np.float32)
            mean_lines(W, self.tokens, starts, stops, 0.0, S, np.empty(len(starts), dtype=np.int64))
            yield S

    def averages(self, W: np.ndarray) -> np.ndarray:
        """Every average of :meth:`blocks`, float64 (n x d)."""
        parts = [S.astype(np.float64) for S in self.blocks(W)]
        return np.concatenate(parts) if parts else np.empty((0, W.shape[1]), dtype=np.float64)

    def words(self) -> int:
        """The distinct words of the sentences averaged."""
        spans = [self.tokens[a:b] for starts, stops in self.spans() for a, b in zip(starts, stops)]
        return int(len(np.unique(np.concatenate(spans)))) if spans else 0


class CommonComponents:
    """The post-processing estimator: mean and top ``k`` directions (``k <= 0``: none) of the averages of
    ``sample`` sentences drawn once for ``seed``; each :meth:`fit` takes the top eigenvectors of their
    d x d covariance under the current matrix (the centred averages' right singular vectors)."""

    def __init__(self, corpus, k: int, seed: int, sample: int = COMMON_SAMPLE):
        self.corpus = corpus
        self.k = k
        self.sentences = SentenceSample(corpus, sample_sentences(corpus.n_sentences, sample, seed))
        self.sample = len(self.sentences.pick)

    def fit(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, U)`` for the matrix ``W``: float64 (d,) and float32 (k, d), U's rows orthonormal."""
        d = W.shape[1]
        mean, scatter, n = np.zeros(d, dtype=np.float64), np.zeros((d, d), dtype=np.float64), 0
        for S in self.sentences.blocks(W):  # the averages' sum and scatter, in float64
            S = S.astype(np.float64)
            mean += S.sum(axis=0)
            scatter += S.T @ S
            n += len(S)
        if n:
            mean /= n
        if self.k <= 0:
            return mean, np.zeros((0, d), dtype=np.float32)
        cov = scatter / n - np.outer(mean, mean) if n else scatter
        return mean, np.linalg.eigh(cov)[1][:, ::-1][:, : self.k].T.astype(np.float32)

    @staticmethod
    def apply_rows(W: np.ndarray, mean: np.ndarray, U: np.ndarray) -> None:
        """Centre and project the rows of the float32 matrix ``W`` in place, a block at a time."""
        W -= mean.astype(np.float32)
        if len(U):
            step = 1 << 13  # rows per projection: its temporary stays ~10 MB at 300 dims
            for lo in range(0, len(W), step):
                block = W[lo : lo + step]
                block -= (block @ U.T) @ U

    @staticmethod
    def apply(X: np.ndarray, mean: np.ndarray, U: np.ndarray) -> np.ndarray:
        """:meth:`apply_rows`'s map on a float64 copy of averages ``X`` (NaN rows stay NaN); einsum, not BLAS,
        whose threads would spin against the training threads between batches."""
        X = np.asarray(X, dtype=np.float64) - mean
        U = np.asarray(U, dtype=np.float64)
        return X - np.einsum("ik,kj->ij", np.einsum("ij,kj->ik", X, U), U)


def remove_common_components(W: np.ndarray, corpus, k: int, seed: int, sample: int = COMMON_SAMPLE) -> None:
    """Fit :class:`CommonComponents` on ``sample`` sentences of ``corpus`` and apply it to ``W`` in place."""
    estimator = CommonComponents(corpus, k, seed, sample)
    CommonComponents.apply_rows(W, *estimator.fit(W))
