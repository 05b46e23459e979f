"""Trained embeddings: a vocabulary and its vectors. No training code here."""

from __future__ import annotations

import numpy as np

from .tokenize import tokenize
from .vocab import Vocab


class Model:
    """Word vectors whose average embeds a sentence.

    vectors: array of float32, shape (n_words, dim), row i is ``vocab.words[i]``.
    config: the hyperparameters it was trained with (a dict, as in ``config.json``).
    info: corpus statistics and training summary.
    """

    def __init__(self, vocab: Vocab, vectors: np.ndarray, config: dict | None = None, info: dict | None = None):
        if vectors.ndim != 2 or vectors.shape[0] != len(vocab):
            raise ValueError(
                f"vectors have shape {vectors.shape} but the vocabulary has {len(vocab)} words"
            )
        self.vocab = vocab
        self.vectors = vectors
        self.config = dict(config or {})
        self.info = dict(info or {})

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def __len__(self) -> int:
        return len(self.vocab)

    def __contains__(self, word: str) -> bool:
        return word in self.vocab.index

    def __getitem__(self, word: str) -> np.ndarray:
        try:
            return self.vectors[self.vocab.index[word]]
        except KeyError:
            raise KeyError(f"word {word!r} is not in the vocabulary") from None

    def ids(self, sentence: str) -> tuple[list[int], list[str]]:
        """Vocabulary ids of the known tokens of ``sentence``, and the unknown tokens."""
        index = self.vocab.index
        known, unknown = [], []
        for tok in tokenize(sentence):
            i = index.get(tok)
            if i is None:
                unknown.append(tok)
            else:
                known.append(i)
        return known, unknown

    def embed(self, sentences) -> np.ndarray:
        """Sentence embeddings: the mean of the vectors of the known words.

        Returns an array of float32, shape (n, dim); a sentence with no known word gets
        a row of NaN (it has no embedding).
        """
        if isinstance(sentences, str):
            raise TypeError("embed() takes a list of sentences; wrap a single sentence in a list")
        index = self.vocab.index
        ids: list[int] = []
        lengths = np.zeros(len(sentences), dtype=np.int64)
        for n, sentence in enumerate(sentences):
            known = [i for i in map(index.get, tokenize(sentence)) if i is not None]
            ids.extend(known)
            lengths[n] = len(known)
        return mean_rows(self.vectors, np.asarray(ids, dtype=np.int64), lengths).astype(np.float32)

    def similarity(self, s1: str, s2: str) -> float:
        """Cosine of the two sentence averages; nan when a side has no known word."""
        a, b = self.embed([s1, s2]).astype(np.float64)
        return cosine(a, b)

    def most_similar(self, word: str, topn: int = 10) -> list[tuple[str, float]]:
        """The ``topn`` words nearest to ``word`` by cosine, with their cosines."""
        v = np.asarray(self[word], dtype=np.float64)
        unit = self.vectors / np.maximum(np.linalg.norm(self.vectors, axis=1, keepdims=True), 1e-12)
        scores = unit @ (v / max(np.linalg.norm(v), 1e-12))
        scores[self.vocab.index[word]] = -np.inf
        top = np.argsort(-scores)[:topn]
        return [(self.vocab.words[i], float(scores[i])) for i in top]


def mean_rows(vectors: np.ndarray, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Average consecutive groups of rows of ``vectors``.

    ids: array of int, shape (lengths.sum(),), the rows of every group one after another.
    lengths: array of int, shape (n,), group sizes.
    Returns float64, shape (n, vectors.shape[1]); a group of size 0 gives a row of NaN.
    """
    out = np.full((len(lengths), vectors.shape[1]), np.nan, dtype=np.float64)
    nonempty = lengths > 0
    if len(ids):
        rows = np.asarray(vectors[ids], dtype=np.float64)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nonempty]
        out[nonempty] = np.add.reduceat(rows, starts, axis=0) / lengths[nonempty, None]
    return out


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two vectors; nan if either has no value (NaN) or is zero."""
    if np.isnan(a).any() or np.isnan(b).any():
        return float("nan")
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return float("nan")
    return float(np.dot(a, b) / (na * nb))
