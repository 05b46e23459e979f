"""The average of a sentence: :class:`Averager`, the one object every path that embeds text calls,
so ``Model.encode``, ``embed``, ``neighbors --in``, the curve and exports give the same rows bit for bit.

A sentence's embedding is the mean of its tokens' rows. A token outside the vocabulary follows
``TrainConfig.unknown``: ``omit`` leaves it out (the paper's rule); ``hash`` gives it a fixed
vector drawn from a hash of it, so a rare name shared by two sentences still counts; ``pieces``
splits it into WordPiece pieces, a word piece bringing its row, any other its hashed vector. A
hashed vector's norm is ``scale`` times the median norm of the rarest tenth's rows (the words most
like unseen ones). A sentence with nothing to average has no embedding (NaN, or ``fill``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from ..config import UNKNOWN_MODES, TrainConfig
from .numeric import cached_rows, hashed_vectors, mean_rows, rarest_ids, rarest_rows
from .pieces import Pieces

# A model without a record of its rule (vectors from elsewhere) leaves unknown words out.
DEFAULT_UNKNOWN = "omit"
# hash's norm multiple for a model that records none: 0.75 scored best on STS-B dev without
# frequency weights (benchmarks/results/unknown_words.md); with them 1.0 did (rule_scale)
HASH_SCALE = 0.75
# unknown words (and pieces) whose vectors an averager keeps between calls
_CACHE = 1 << 16

KERNEL_MIN_LINES = 100  # Averager.embed: from this many sentences, the kernel (where numba is loaded)
LINE_END = -2  # the id of a line end in an encoded stream (scbow.kernels.embed's)
UNKNOWN = -1  # the id a token outside the vocabulary has until it is numbered


def own_rule(config: dict) -> tuple[str, float]:
    """The ``(unknown, unknown_scale)`` a model's ``config`` records (``omit`` without one); a rule without
    its scale takes that rule's own default."""
    rule = str(config.get("unknown", DEFAULT_UNKNOWN))
    scale = config.get("unknown_scale")
    if scale is None:
        scale = TrainConfig.unknown_scale if rule == "pieces" else HASH_SCALE
    return rule, float(scale)


def rule_scale(config: dict, rule: str) -> float:
    """The norm multiple of ``rule`` for a model of ``config``: its own for its own rule; for another,
    that rule's default (pieces: TrainConfig's; hash: 1.0 with frequency weights, else HASH_SCALE)."""
    own, scale = own_rule(config)
    if rule == own:
        return scale
    if rule == "pieces":
        return TrainConfig.unknown_scale
    return 1.0 if config.get("frequency_weight") else HASH_SCALE


def check_rule(rule: str, scale) -> None:
    """ValueError, one line, for a rule that is none of UNKNOWN_MODES or a senseless scale."""
    if rule not in UNKNOWN_MODES:
        raise ValueError(f"unknown must be one of {', '.join(UNKNOWN_MODES)}, got {rule!r}")
    if (isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (int, float, np.number))
            or not 0 < scale <= 1e6 or not math.isfinite(scale)):
        raise ValueError(f"unknown_scale must be a number above 0 and at most 1e6 (as in TrainConfig), got {scale!r}")


@dataclass(frozen=True)
class Encoded:
    """Lines as token ids: ``ids`` (int32) a vocabulary id, ``V + j`` for ``words[j]`` (the distinct unknown
    tokens, in order) and ``LINE_END`` after every line; ``tokens``: the tokens, line ends not counted."""

    ids: np.ndarray
    words: list
    lines: int
    tokens: int


@dataclass(frozen=True)
class Averages:
    """``rows`` (n, dim) of :meth:`Averager.average`; ``counts``: the tokens (pieces) averaged in each line
    (0: no embedding); ``averaged``: the tokens that brought a vector (a word of pieces counts one)."""

    rows: np.ndarray
    counts: np.ndarray
    averaged: int


class Averager:
    """Sentence averages over one vocabulary and one matrix of rows, under any unknown-word rule.

    ``vectors``: (len(vocab), dim), row i is ``vocab.words[i]``. ``tokenize_lines``: the rows'
    tokenizer, a ``"\\n"`` token at each line end. ``pieces``: the vocabulary's Pieces, if at hand.
    The caches belong to these rows (new rows: :meth:`renew`); threads may share one.
    """

    def __init__(self, vocab, vectors: np.ndarray, tokenize_lines, pieces: Pieces | None = None):
        self.vocab = vocab
        self.vectors = vectors
        self._tokenize_lines = tokenize_lines
        self._pieces = pieces
        self._norm = None
        self._lookup = None
        self._hashed: dict = {}  # token -> unit hashed vector (float64)
        self._split: dict = {}  # token -> (sum of its pieces' word rows, sum of the others' unit vectors, pieces)

    def renew(self, vectors: np.ndarray) -> Averager:
        """An averager of new rows of the same words, keeping the pieces and the unit hashed vectors."""
        fresh = Averager(self.vocab, vectors, self._tokenize_lines, self._pieces)
        if vectors.shape[1] == self.dim:
            fresh._hashed = self._hashed
        return fresh

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    @property
    def pieces(self) -> Pieces:
        """The pieces unknown words are split into (about 0.3 s to build for 125,000 words)."""
        if self._pieces is None:
            self._pieces = Pieces(self.vocab.words)
        return self._pieces

    def unknown_norm(self) -> float:
        """The median norm of the rarest tenth of the trained words' rows (count 0 left out); 1.0 for none."""
        if self._norm is None:
            rare = rarest_rows(self.vectors, self.vocab.counts)
            self._norm = float(np.median(np.linalg.norm(rare, axis=1))) if len(rare) else 1.0
        return self._norm

    def unknown_vectors(self, tokens: list, rule: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
        """What each unknown token adds under ``rule``: float64 sums (n, dim) and counts. hash: one hashed
        vector of norm ``scale * unknown_norm()``; pieces: its word pieces' rows plus hashed vectors of
        that norm for the others, one count a piece."""
        norm = scale * self.unknown_norm()
        if rule == "hash":
            return self._unit_hashed(tokens) * norm, np.ones(len(tokens), dtype=np.int64)
        rows = cached_rows(self._split, tokens, self._split_sums, _CACHE)
        sums = np.array([rows[t][1] for t in tokens]).reshape(len(tokens), self.dim)
        sums *= norm
        sums += np.array([rows[t][0] for t in tokens]).reshape(len(tokens), self.dim)
        return sums, np.fromiter((rows[t][2] for t in tokens), dtype=np.int64, count=len(tokens))

    def _split_sums(self, tokens: list) -> list:
        index, splits = self.vocab.index, [self.pieces.split(t) for t in tokens]
        new = sorted({p for pieces in splits for p in pieces if p not in index})
        hashed = dict(zip(new, self._unit_hashed(new)))
        out = []
        for pieces in splits:
            words, other = np.zeros(self.dim), np.zeros(self.dim)
            for piece in pieces:
                i = index.get(piece)
                if i is None:
                    other += hashed[piece]
                else:
                    words += self.vectors[i]
            out.append((words, other, len(pieces)))
        return out

    def _unit_hashed(self, tokens: list) -> np.ndarray:
        rows = cached_rows(self._hashed, tokens, lambda new: hashed_vectors(new, self.dim, 1.0), _CACHE)
        return np.array([rows[t] for t in tokens]).reshape(len(tokens), self.dim)

    def encode(self, text: str) -> Encoded:
        """The lines of ``text`` (each ended by ``"\\n"``, the last too) as token ids, each line tokenized alone."""
        if self._lookup is None:
            self._lookup = dict(self.vocab.index)
            self._lookup["\n"] = LINE_END  # a word that holds a line end could be no sentence's
        tokens = self._tokenize_lines(text)
        ids = np.fromiter(map(self._lookup.get, tokens, repeat(UNKNOWN)), dtype=np.int32, count=len(tokens))
        lines = int(np.count_nonzero(ids == LINE_END))
        where = np.flatnonzero(ids == UNKNOWN)
        words: dict = {}
        ids[where] = np.fromiter([words.setdefault(tokens[p], len(words)) for p in where.tolist()], dtype=np.int32,
                                 count=len(where)) + len(self.vocab)
        return Encoded(ids, list(words), lines, len(tokens) - lines)

    def rows_read(self, encoded: list, rule: str) -> np.ndarray:
        """The ids of the rows averaging ``encoded`` under ``rule`` reads (known words, word pieces, the rarest
        tenth): all a caller that maps rows first (the training curve) need map."""
        V = len(self.vocab)
        ids = [e.ids[(e.ids >= 0) & (e.ids < V)] for e in encoded]
        ids.append(rarest_ids(V, self.vocab.counts))
        if rule == "pieces":
            index = self.vocab.index
            ids.append(np.array([index[p] for e in encoded for w in e.words for p in self.pieces.split(w)
                                 if p in index], dtype=np.int64))
        return np.unique(np.concatenate(ids).astype(np.int64))

    def average(self, encoded: Encoded, rule: str, scale: float, fill: float = math.nan,
                kernel: str | None = None, dtype=np.float32) -> Averages:
        """The averages of the lines of ``encoded`` under ``rule`` at ``scale``, as ``dtype`` rows.

        A line's known words are summed in float64 in order and divided by their count; with unknown
        words, their vectors are summed in order, added to that mean times its count and divided by
        all the tokens. A line with none gets ``fill``. ``kernel``: None sums with NumPy (no numba);
        "serial" or "parallel" with ``scbow.kernels.embed``, for files (the same numbers).
        """
        V, ids = len(self.vocab), encoded.ids
        ends = np.flatnonzero(ids == LINE_END)
        if len(ends) != encoded.lines:
            raise AssertionError(f"{len(ends)} line ends in {encoded.lines} lines")
        at = np.flatnonzero(ids >= V) if rule != "omit" else np.empty(0, dtype=np.int64)
        if len(at):
            table, pieces = self.unknown_vectors(encoded.words, rule, scale)
            dropped = int(np.count_nonzero(pieces[ids[at] - V] == 0))
        else:
            table, pieces = np.zeros((0, self.dim)), np.zeros(0, dtype=np.int64)
            dropped = int(np.count_nonzero(ids >= V))
        if kernel is None:
            rows, counts = self._sums(ids, ends, at, table, pieces, dtype)
        else:
            rows, counts = _kernel_average(self.vectors, table, pieces, ids, ends, kernel, dtype)
        if not (isinstance(fill, float) and math.isnan(fill)):
            rows[counts == 0] = fill
        return Averages(rows, counts, encoded.tokens - dropped)

    def _sums(self, ids, ends, at, table, pieces, dtype) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`average`'s rows and counts in NumPy (``scbow.kernels.embed.average_lines``' numbers)."""
        V, n = len(self.vocab), len(ends)
        known = (ids >= 0) & (ids < V)
        lengths = np.diff(np.cumsum(known)[ends], prepend=0)
        if not len(at):
            return mean_rows(self.vectors, ids[known], lengths, dtype=dtype), lengths
        # float64 means of every line, rounded for the rows: the lines with unknown words reuse theirs
        # (a line's sum does not depend on the others summed with it)
        means = mean_rows(self.vectors, ids[known], lengths)
        rows = means.astype(dtype)
        which = ids[at] - V
        line_of = np.searchsorted(ends, at)  # the line ends before a token: its line (sorted, as at is)
        new_line = np.r_[True, line_of[1:] != line_of[:-1]]
        first = np.flatnonzero(new_line)  # each line's first unknown word
        lines = line_of[first]  # the lines with unknown words, each summed in a row of its own
        slot = np.cumsum(new_line) - 1
        # the r-th unknown word of every line at once (few per line); the first ones added to 0.0
        # (which makes a -0.0 0.0, as adding them to zeros did)
        sums = table[which[first]] + 0.0
        rank = np.arange(len(at)) - np.repeat(first, np.diff(np.r_[first, len(at)]))
        for r in range(1, int(rank.max()) + 1):
            step = rank == r
            sums[slot[step]] += table[which[step]]
        counts = lengths + np.bincount(line_of, weights=pieces[which], minlength=n).astype(np.int64)
        mine = lengths[lines]
        sums += np.where(mine[:, None] > 0, means[lines], 0.0) * mine[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            rows[lines] = sums / np.where(counts[lines] > 0, counts[lines], np.nan)[:, None]
        return rows, counts

    def embed(self, sentences: list, rule: str, scale: float, fill: float = math.nan) -> np.ndarray:
        """float32 rows of ``sentences`` (a list of str). Many sentences in a process that has numba
        loaded already are summed by its serial kernel (the same numbers, several times faster);
        otherwise by NumPy, so that a short-lived command never pays numba's import."""
        kernel = "serial" if len(sentences) >= KERNEL_MIN_LINES and "numba" in sys.modules else None
        return self.average(self.encode(sentences_text(sentences)), rule, scale, fill, kernel=kernel).rows


def sentences_text(sentences: list) -> str:
    """``sentences`` as the text :meth:`Averager.encode` takes, one a line (a line end inside one a space)."""
    text = "\n".join(sentences)
    if text.count("\n") != len(sentences) - 1:
        text = "\n".join(sentence.replace("\n", " ") for sentence in sentences)
    return text + "\n" if sentences else ""


def _kernel_average(vectors, table, pieces, ids, ends, kernel: str, dtype) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`Averager.average`'s rows and counts from the compiled kernel (``kernel``: serial or parallel)."""
    from ..kernels import embed as K

    W = np.ascontiguousarray(vectors, dtype=np.float32)  # a plain ndarray, also from a memmap
    starts = (ends - np.diff(ends, prepend=-1) + 1).astype(np.int64)  # after the line end before
    rows = np.empty((len(ends), W.shape[1]), dtype=dtype)
    counts = np.empty(len(ends), dtype=np.int64)
    (K.average_lines_parallel if kernel == "parallel" else K.average_lines_serial)(
        W, np.ascontiguousarray(table, dtype=np.float64), pieces.astype(np.int64), ids, starts,
        ends.astype(np.int64), math.nan, rows, counts)
    return rows, counts
