"""Sentence embeddings for the quality benchmark: every system's word vectors, with every
post-processing a user of those vectors could apply.

A comparison is fair only when every peer gets the best of what is available to it. For
word vectors trained elsewhere (word2vec, fastText) a user has three standard ways to
make sentence vectors, and may treat unknown words two ways:

* ``raw``: the plain average of the word vectors;
* ``sif``: SIF (Arora, Liang and Ma, ICLR 2017): the average weighted by ``a / (a + p(w))``
  (``a = 1e-3``, ``p(w)`` the word's share of the training corpus's tokens; a word the
  corpus never kept weighs 1: ``scbow.use.evaluate.overlap_weights``, the rule of
  ``evaluate --control overlap`` too), then the projection on the first singular vector of
  the corpus's weighted sentence averages removed;
* ``pcr``: this project's post-processing: centre the plain averages on the corpus's mean
  sentence and remove their top 10 principal directions;
* unknown words ``omit`` (left out; the paper's rule), ``hash`` (a fixed random vector per
  word from a hash of it, of 0.75 times the median norm of the rarest tenth of the
  vocabulary, as ``scbow.vectors.model.Model.embed`` gives) or ``own`` (fastText's subword vectors).

Sent2Vec's own sentence vectors (:class:`OwnSentences`) get raw, SIF's projection (``pc1``)
or ``pcr`` alike. The post-processing is always estimated on sentences of the training corpus
(a fixed sample), never on evaluation data. Which variant a system gets is chosen on the STS-B dev
set (:func:`choose`), never on the test sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scbow.text.tokenize import tokenize
from scbow.training import sample_sentences
from scbow.use.evaluate import SIF_A, overlap_weights  # the weighted overlap control's rule, shared with evaluate
from scbow.vectors.average import HASH_SCALE
from scbow.vectors.numeric import hashed_vector, hashed_vectors, rarest_rows

PCR_COMPONENTS = 10
SAMPLE = 100_000  # corpus sentences every post-processing is estimated on
POSTS = ("raw", "sif", "pcr")


@dataclass(frozen=True)
class Variant:
    unknown: str  # omit | hash | own
    post: str  # raw | sif | pcr; for a system's own sentence vectors raw | pc1 | pcr
    source: str = "words"  # words: averaged word vectors; sentences: the system's own sentence vectors

    @property
    def label(self) -> str:
        if self.source == "sentences":
            return f"its sentence vectors, {self.post}"
        return f"{self.post}, unknown {self.unknown}"


class WordTable:
    """One system's vectors for the words of the benchmark corpus's vocabulary.

    ``M``: float32 (V, d), row i the vector of ``vocab.words[i]`` (a zero row and
    ``known[i] = False`` where the system has no vector for that word). ``oov``: vectors of
    words outside the vocabulary the system can make itself (fastText's subwords), or None.
    """

    def __init__(self, vocab, M: np.ndarray, known: np.ndarray | None = None, oov: dict | None = None):
        self.vocab = vocab
        self.M = np.ascontiguousarray(M, dtype=np.float32)
        self.known = np.ones(len(vocab), dtype=bool) if known is None else np.asarray(known, dtype=bool)
        self.oov = oov
        self.dim = self.M.shape[1]
        rare = rarest_rows(self.M[self.known])
        self.rare_norm = float(np.median(np.linalg.norm(rare, axis=1))) if len(rare) else 1.0

    @classmethod
    def from_model(cls, vocab, model) -> "WordTable":
        """Rows of ``model`` (an ``scbow.vectors.model.Model``: scbow, or word2vec loaded as one) for ``vocab``'s words:
        the columns words are compared by (``model.wv.vectors``: the word part of an scbow model that has one)."""
        rows = model.wv.vectors
        M = np.zeros((len(vocab), rows.shape[1]), dtype=np.float32)
        known = np.zeros(len(vocab), dtype=bool)
        index = model.vocab.index
        for i, w in enumerate(vocab.words):
            j = index.get(w)
            if j is not None:
                M[i] = rows[j]
                known[i] = True
        return cls(vocab, M, known, model.info.get("oov_vectors"))

    @classmethod
    def hashed(cls, vocab, dim: int) -> "WordTable":
        """A fixed random vector for every word (``scbow.vectors.numeric.hashed_vector``): word overlap."""
        M = np.stack([hashed_vector(w, dim) for w in vocab.words]).astype(np.float32)
        return cls(vocab, M, oov=_HashAll(dim))

    def unknown_vector(self, token: str, unknown: str):
        if unknown == "hash":
            if isinstance(self.oov, _HashAll):
                return self.oov[token]
            return hashed_vectors([token], self.dim, HASH_SCALE * self.rare_norm)[0]
        if unknown == "own" and self.oov is not None:
            return self.oov.get(token)
        return None


class _HashAll(dict):
    """Every token's hashed vector (the overlap controls' "vocabulary" is every token)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def __missing__(self, token):
        v = self[token] = hashed_vector(token, self.dim)
        return v

    def get(self, token, default=None):
        return self[token]


class SentenceEmbedder:
    """Sentence vectors of one :class:`WordTable` under one :class:`Variant`.

    ``fit(corpus)`` estimates the variant's post-processing on :data:`SAMPLE` corpus
    sentences (seed 1, the sample scbow's own post-processing uses); ``embed(sentences)``
    returns float64 (n, d) with NaN rows for sentences with nothing to average.
    """

    def __init__(self, table: WordTable, variant: Variant, corpus, seed: int = 1):
        self.table = table
        self.variant = variant
        raw = corpus.stats.get("raw_tokens") or int(np.asarray(corpus.vocab.counts).sum())
        weights = overlap_weights(corpus.vocab.counts, raw, SIF_A)
        self.word_weight = weights if variant.post == "sif" else np.ones_like(weights)
        self.index = corpus.vocab.index
        self.mean, self.U = None, np.zeros((0, table.dim))
        if variant.post != "raw":
            S = self._corpus_means(corpus, sample_sentences(corpus.n_sentences, SAMPLE, seed))
            self.mean, self.U = estimate(S, variant.post)

    def _corpus_means(self, corpus, pick: np.ndarray) -> np.ndarray:
        import scipy.sparse as sp

        offsets = np.asarray(corpus.offsets)
        starts, stops = offsets[pick], offsets[pick + 1]
        lengths = stops - starts
        positions = np.repeat(stops - np.cumsum(lengths), lengths) + np.arange(lengths.sum())
        cols = np.asarray(corpus.tokens[positions]).astype(np.int64)
        w = self.word_weight[cols] * self.table.known[cols]
        counts = np.add.reduceat(self.table.known[cols].astype(np.float64), np.r_[0, np.cumsum(lengths)[:-1]])
        data = w / np.repeat(np.maximum(counts, 1.0), lengths)
        A = sp.csr_matrix((data, cols, np.r_[0, np.cumsum(lengths)]), shape=(len(pick), len(corpus.vocab)))
        S = A @ self.table.M.astype(np.float64)
        return S[counts > 0]

    def embed(self, sentences) -> np.ndarray:
        d = self.table.dim
        out = np.zeros((len(sentences), d))
        unknown = self.variant.unknown
        n = np.zeros(len(sentences))
        rows, cols, vals = [], [], []
        for k, sentence in enumerate(sentences):
            for tok in tokenize(sentence):
                i = self.index.get(tok)
                if i is not None and self.table.known[i]:
                    rows.append(k)
                    cols.append(i)
                    vals.append(self.word_weight[i])
                    n[k] += 1
                    continue
                v = self.table.unknown_vector(tok, unknown)
                if v is not None:
                    out[k] += np.asarray(v, dtype=np.float64)  # weight 1: the corpus never kept the word
                    n[k] += 1
        if rows:
            import scipy.sparse as sp

            A = sp.csr_matrix((vals, (rows, cols)), shape=(len(sentences), len(self.index)))
            out += A @ self.table.M.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out /= np.where(n > 0, n, np.nan)[:, None]
        return remove(out, self.mean, self.U)


def estimate(S: np.ndarray, post: str, components: int = PCR_COMPONENTS):
    """(mean, U) of a post-processing estimated on the sample ``S``: for ``sif`` (and ``pc1``) no
    mean and the first right singular vector of the uncentred S; for ``pcr`` S's mean and the
    top ``components`` principal directions of the centred S."""
    if post in ("sif", "pc1"):
        return None, np.linalg.svd(S, full_matrices=False)[2][:1]
    mean = S.mean(axis=0)
    C = S - mean
    return mean, np.linalg.eigh(C.T @ C)[1][:, ::-1][:, :components].T


def remove(out: np.ndarray, mean, U: np.ndarray) -> np.ndarray:
    """``out`` less the mean (when there is one) and its projection on the rows of ``U``, in place."""
    if mean is not None:
        out -= mean
    if len(U):
        out -= (out @ U.T) @ U
    return out


class OwnSentences:
    """A system's own sentence vectors (Sent2Vec's), looked up by the tokenized sentence, with a
    post-processing estimated on ``sample`` (the corpus sample's vectors): ``raw``, ``pc1`` (the
    first singular direction of the uncentred sample removed, as SIF and the Sent2Vec paper's
    comparisons do) or ``pcr``. A zero vector (no known word) is NaN: the pair gets the set's mean."""

    def __init__(self, vectors: dict, sample: np.ndarray, post: str, components: int = PCR_COMPONENTS):
        if post not in ("raw", "pc1", "pcr"):
            raise ValueError(post)
        self.vectors = vectors
        S = sample.astype(np.float64)
        S = S[np.linalg.norm(S, axis=1) > 0]
        self.mean, self.U = (None, np.zeros((0, sample.shape[1]))) if post == "raw" else estimate(S, post, components)

    def embed(self, sentences) -> np.ndarray:
        out = np.stack([self.vectors[" ".join(tokenize(s))] for s in sentences]).astype(np.float64)
        empty = np.linalg.norm(out, axis=1) == 0
        out = remove(out, self.mean, self.U)
        out[empty] = np.nan
        return out


def filled_cosines(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """Row cosines, a pair with a side without embedding given the set's mean cosine; and the pairs scored."""
    from scbow.use.evaluate import row_cosines

    c = row_cosines(a, b)
    ok = np.isfinite(c)
    if ok.any() and not ok.all():
        c = np.where(ok, c, c[ok].mean())
    return c, int(ok.sum())


def variants_of(kind: str) -> list[Variant]:
    """The variants a system of ``kind`` may use: ``word2vec``, ``fasttext``, ``overlap`` or ``sent2vec``.

    Sent2Vec gets its own sentence vectors (unigrams and bigrams; unknown words left out) raw,
    with the first singular direction removed or with this project's post-processing, and
    its unigram vectors under every word-vector variant word2vec gets.
    """
    if kind == "sent2vec":
        own = [Variant("omit", p, "sentences") for p in ("raw", "pc1", "pcr")]
        return own + variants_of("word2vec")
    unknowns = {"word2vec": ("omit", "hash"), "fasttext": ("own",), "overlap": ("hash",)}[kind]
    return [Variant(u, p) for u in unknowns for p in POSTS]


def choose(dev_scores: dict) -> Variant:
    """The variant with the highest STS-B dev Pearson (ties: the first listed)."""
    return max(dev_scores, key=lambda v: (dev_scores[v], -list(dev_scores).index(v)))
