"""Trained embeddings: a vocabulary and its vectors. No training code here."""

from __future__ import annotations

import math
import os
from itertools import repeat
from pathlib import Path

import numpy as np

from ..config import UNKNOWN_MODES  # noqa: F401  (re-exported: omit, hash)
from ..progress import plural
from ..text.tokenize import TOKENIZER_VERSION, fold, tokenizer
from ..text.units import MAX_GOLD, gold_number
from ..text.vocab import Vocab
from .neighbours import NEIGHBOUR_MIN_COUNT  # the default of most_similar(min_count=)
from .numeric import (
    cosine,
    hashed_vectors,
    kth_largest,
    mean_rows,
    rarest_rows,
    row_cosines,
    row_norms,
)
from .pieces import PIECE_SCALE, Pieces

# What embed() does with a token that is not in the vocabulary: leave it out of the
# average (the paper's rule), or give it a fixed random vector derived from a hash of the
# token, so that a rare name or number shared by two sentences still counts as shared.
# A model trained with frequency weights records its own rule in its config ("unknown",
# "unknown_scale": hash at 1.0); a model without that record omits them.
DEFAULT_UNKNOWN = "omit"
# The norm of a hashed vector, as a multiple of the median norm of the rarest tenth of
# the vocabulary (the words most like unseen ones), for models that do not record one.
# For models trained without frequency weights 0.75 scored best on the STS-B dev set
# (benchmarks/results/unknown_words.md); with frequency weights the rarest rows are
# nearly the untrained ones, and 1.0 (word overlap for unknown words) scored best.
HASH_SCALE = 0.75
_HASH_CACHE = 1 << 16  # unknown words whose unit hashed vectors a model keeps between embed() calls


def row_parts(config: dict, width: int) -> dict:
    """The column ranges of a model's parts, from its ``config`` (a dict as saved) and row width:
    ``{"sentence": (0, dim), "word": (dim, dim + word_dim)}`` for a model trained with a word part
    (``scbow.training.wordpart``); ``{"sentence": (0, width)}`` for one without (or vectors from
    elsewhere)."""
    try:
        passes, dim = int(config.get("word_passes", 0)), int(config["dim"])
        word_dim = int(config.get("word_dim", 0))
    except (KeyError, TypeError, ValueError, AttributeError):
        return {"sentence": (0, width)}
    if passes > 0 and word_dim > 0 and dim + word_dim == width:
        return {"sentence": (0, dim), "word": (dim, width)}
    return {"sentence": (0, width)}


def cached_rows(cache: dict, tokens: list, make, bound: int) -> dict:
    """token -> row for ``tokens``: those in ``cache``, the rest from ``make(new_tokens)`` (rows in
    order), then published (:func:`publish_hashed`). The result never reads the cache after its
    own look-ups, so another thread's ``clear()`` cannot make it fail."""
    rows = {}
    for token in tokens:
        row = cache.get(token)
        if row is not None:
            rows[token] = row
    new = [t for t in tokens if t not in rows]
    if new:
        rows.update(zip(new, make(new)))
        publish_hashed(cache, new, rows, bound)
    return rows


def publish_hashed(cache: dict, new: list, rows: dict, bound: int) -> None:
    """Put ``rows[t]`` of the ``new`` tokens into ``cache``, emptying it first when it would hold
    more than ``bound`` (a call with more new tokens than that keeps them to itself).

    Callers read their result from ``rows``, never from ``cache``: threads sharing a cache
    may clear it at any moment (and may together leave it a little over ``bound``)."""
    if len(new) > bound:
        return
    if len(cache) + len(new) > bound:
        cache.clear()
    cache.update((t, rows[t]) for t in new)


class Model:
    """Word vectors whose average embeds a sentence.

    vectors: array of float32, shape (n_words, dim), row i is ``vocab.words[i]``.
    config: the hyperparameters it was trained with (a dict, as in ``config.json``).
    info: corpus statistics and training summary.

    For users of gensim's ``KeyedVectors``: ``model[word]``, ``word in model``,
    ``index_to_key``, ``key_to_index``, ``vectors``, ``vector_size``, ``get_index``,
    ``get_vector``, ``most_similar`` (with ``restrict_vocab``), ``similar_by_word``,
    ``similar_by_vector`` and ``n_similarity`` work as there, except that a word is also
    found lowercased (see :meth:`get_index`), and that the neighbours are only words seen at
    least ``min_count`` times (:data:`NEIGHBOUR_MIN_COUNT` by default; ``min_count=0`` ranks
    every word, as gensim does). ``similarity`` and ``similarities`` compare sentences, not
    words; ``save`` writes a model directory.

    A model trained with a word part has rows ``[sentence part ; word part]`` (:attr:`parts`):
    sentences are embedded with the whole rows, and the word-level methods (``most_similar``,
    ``similar_by_word``, ``similar_by_vector``, ``n_similarity``) rank words by their word-part
    columns (:attr:`word_vectors`), where word similarity lives.

    A word is looked up as given, else lowercased (the tokenizer lowercases, so every
    word of a trained model is lowercase): ``model["King"]`` is the vector of "king".
    ``word in model`` agrees with ``model[word]``: it is true when either spelling is in
    the vocabulary; ``word in model.key_to_index`` asks for the exact spelling.

    ``most_similar`` keeps the norms of the rows between calls. They are recomputed when
    ``vectors`` is assigned (``model.vectors = new``); after changing rows in place,
    assign it again (``model.vectors = model.vectors``).
    """

    def __init__(self, vocab: Vocab, vectors: np.ndarray, config: dict | None = None, info: dict | None = None):
        self.vocab = vocab
        self.vectors = vectors
        self.config = dict(config or {})
        self.info = dict(info or {})

    @property
    def vectors(self) -> np.ndarray:
        return self._vectors

    @vectors.setter
    def vectors(self, vectors: np.ndarray) -> None:
        if vectors.ndim != 2 or vectors.shape[0] != len(self.vocab):
            raise ValueError(
                f"vectors have shape {vectors.shape} but the vocabulary has {len(self.vocab)} words"
            )
        self._vectors = vectors
        # the model directory whose files these rows are mapped from (set by load_model); new rows are not
        self.source_dir = None
        # what was computed from the old vectors
        self._unknown_norm = None
        self._hashed = {}
        self._search = None

    @property
    def parts(self) -> dict:
        """The column ranges of the rows' parts: ``{"sentence": (0, d)}``, and ``"word": (d, d + w)``
        for a model trained with a word part."""
        return row_parts(self.config, self.dim)

    @property
    def word_vectors(self) -> np.ndarray:
        """The columns words are compared by: the word part's (a view), else the whole rows."""
        lo, hi = self._word_columns()
        return self._vectors if (lo, hi) == (0, self.dim) else self._vectors[:, lo:hi]

    def _word_columns(self) -> tuple[int, int]:
        parts = self.parts
        return parts.get("word", parts["sentence"])

    def _word_query(self, v: np.ndarray) -> np.ndarray:
        """A query vector in word-part columns: one of the word part's width as it is, a whole
        row cut to its word columns; ValueError for any other shape."""
        lo, hi = self._word_columns()
        if v.shape == (hi - lo,):
            return v
        if v.shape == (self.dim,):
            return v[lo:hi]
        shapes = f"({hi - lo},)" + (f" (the word part) or ({self.dim},) (whole rows)" if hi - lo != self.dim else "")
        raise ValueError(f"a query vector must have shape {shapes}, got {v.shape}")

    @property
    def tokenizer_version(self) -> str:
        """The tokenizer rule this model's words came from (``scbow.text.tokenize``): the one its
        corpus was encoded with, for a model trained by scbow-numba (version 1 when its corpus
        statistics predate the record); the current rule for vectors from elsewhere."""
        corpus = self.info.get("corpus")
        if isinstance(corpus, dict):
            return str(corpus.get("tokenizer_version", "1"))
        return TOKENIZER_VERSION

    def tokenize(self, text: str) -> list[str]:
        """``scbow.tokenize`` under this model's own rule (:attr:`tokenizer_version`)."""
        return tokenizer(self.tokenizer_version)[0](text)

    def tokenize_lines(self, text: str) -> list[str]:
        """``scbow.text.tokenize.tokenize_lines`` under this model's own rule."""
        return tokenizer(self.tokenizer_version)[1](text)

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    @property
    def vector_size(self) -> int:
        """The number of dimensions (gensim's name for :attr:`dim`)."""
        return self.dim

    @property
    def index_to_key(self) -> list[str]:
        """The words, row by row, most frequent first (``vocab.words``; do not change it)."""
        return self.vocab.words

    @property
    def key_to_index(self) -> dict[str, int]:
        """The row of each word, exact spelling (``vocab.index``; do not change it)."""
        return self.vocab.index

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        text = f"<scbow Model: {plural(len(self), 'word')} x {plural(self.dim, 'dim')}"
        origin = self._origin()
        return f"{text}, {origin}>" if origin else text + ">"

    def _origin(self) -> str:
        """Where the vectors come from, in a few words, from ``info`` and ``config``; '' if unknown."""
        info = self.info
        parts = []
        corpus = info.get("corpus")
        if isinstance(corpus, dict) and isinstance(corpus.get("files"), list) and corpus["files"]:
            names = [os.path.basename(str(f)) for f in corpus["files"]]
            what = names[0] + (f" and {len(names) - 1} more file{'s' if len(names) > 2 else ''}" if len(names) > 1 else "")
            details = []
            # the corpus's tokens as train and info count them (raw: out-of-vocabulary ones too)
            tokens = next((corpus[k] for k in ("raw_tokens", "tokens") if isinstance(corpus.get(k), int)), None)
            if tokens is not None:
                details.append(plural(tokens, "token"))
            epochs = self.config.get("epochs")
            if isinstance(epochs, int):
                details.append(f"{epochs} epoch{'s' if epochs != 1 else ''}")
            parts.append(f"trained on {what}" + (f" ({', '.join(details)})" if details else ""))
        elif info.get("source"):
            fmt = info.get("format")
            parts.append(f"from {fmt + ' file ' if fmt else ''}{info['source']}")
        expansions = info.get("expansions")
        if isinstance(expansions, list) and expansions:
            added = sum(e.get("added", 0) for e in expansions if isinstance(e, dict) and isinstance(e.get("added"), int))
            sources = [str(e["source"]) for e in expansions if isinstance(e, dict) and e.get("source")]
            parts.append(f"expanded by {plural(added, 'word')}" + (f" from {', '.join(sources)}" if sources else ""))
        return ", ".join(parts)

    def get_index(self, word: str, default=None) -> int:
        """The row of ``word``: as given, else lowercased (as the tokenizer and the CLI do).

        ``default`` when neither spelling is in the vocabulary, or KeyError when no
        ``default`` is given. (gensim's ``get_index`` looks up the exact key only; here
        ``key_to_index`` does.)
        """
        i = self._find(word)
        if i is not None:
            return i
        if default is not None:
            return default
        lower = word.lower() if isinstance(word, str) else word
        also = f" (nor is {lower!r})" if lower != word else ""
        raise KeyError(f"word {word!r} is not in the vocabulary{also}")

    def _find(self, word) -> int | None:
        """The row of ``word`` as given, else lowercased, else (for a model of tokenizer version
        2 or later) folded as the tokenizer folds (NFKC, ASCII quotes) and lowercased; or None."""
        index = self.vocab.index
        i = index.get(word)
        if i is None and isinstance(word, str):
            i = index.get(word.lower())
            if i is None and self.tokenizer_version != "1":
                i = index.get(fold(word).lower())
        return i

    def __contains__(self, word) -> bool:
        """Whether ``model[word]`` finds a vector: ``word`` as given, lowercased, or folded."""
        try:
            return self._find(word) is not None
        except TypeError:  # unhashable
            return False

    def __getitem__(self, word) -> np.ndarray:
        """The vector of ``word`` (looked up as :meth:`get_index` does); a list of words gives a matrix."""
        if isinstance(word, (list, tuple)):
            return np.asarray(self._vectors)[np.array([self.get_index(w) for w in word], dtype=np.int64)]
        return self._vectors[self.get_index(word)]

    def get_vector(self, word: str, norm: bool = False) -> np.ndarray:
        """``model[word]``, or with ``norm=True`` that vector scaled to length 1 (a zero vector stays zero)."""
        vector = self[word]
        if not norm:
            return vector
        length = np.linalg.norm(np.asarray(vector, dtype=np.float64))
        return (np.asarray(vector, dtype=np.float64) / (length if length > 0 else 1.0)).astype(vector.dtype)

    def save(self, path) -> Path:
        """Write the model as a directory at ``path`` (``scbow.load`` reads it back).

        Any model directory already there is replaced in one step: whenever the process
        stops, ``path`` holds the old model or the new one, complete. Returns the path.
        """
        from .modeldir import save_model

        return save_model(self, path)

    def ids(self, sentence: str) -> tuple[list[int], list[str]]:
        """Vocabulary ids of the known tokens of ``sentence``, and the unknown tokens."""
        index = self.vocab.index
        known, unknown = [], []
        for tok in self.tokenize(sentence):
            i = index.get(tok)
            if i is None:
                unknown.append(tok)
            else:
                known.append(i)
        return known, unknown

    @property
    def unknown_rule(self) -> tuple[str, float]:
        """The model's own ``(unknown, unknown_scale)``: what :meth:`embed` does by default."""
        return (str(self.config.get("unknown", DEFAULT_UNKNOWN)),
                float(self.config.get("unknown_scale", HASH_SCALE)))

    def unknown_scale(self, unknown: str) -> float:
        """The norm multiple of the rule ``unknown``: the model's own for its own rule; for another
        rule that rule's default (:data:`~scbow.vectors.pieces.PIECE_SCALE` for pieces; for hash 1.0
        with frequency weights, else :data:`HASH_SCALE`, as benchmarks/results/unknown_words.md chose)."""
        own, scale = self.unknown_rule
        if unknown == own:
            return scale
        if unknown == "pieces":
            return PIECE_SCALE
        return 1.0 if self.config.get("frequency_weight") else HASH_SCALE

    @property
    def pieces(self) -> Pieces:
        """The pieces unknown words are split into under ``unknown="pieces"`` (built on first use, about
        0.5 s for 125,000 words)."""
        pieces = self.__dict__.get("_pieces")
        if pieces is None:
            pieces = self.__dict__["_pieces"] = Pieces(self.vocab.words)
        return pieces

    def embed(self, sentences, unknown: str | None = None, unknown_scale: float | None = None) -> np.ndarray:
        """Sentence embeddings: the mean of the vectors of the known words.

        Returns an array of float32, shape (n, dim); a sentence with no known word gets
        a row of NaN (it has no embedding).

        ``unknown="pieces"`` splits every unknown token into pieces (``scbow.vectors.pieces``:
        WordPiece's greedy split over the model's words and their runs of up to 3
        characters), each one more token of the average: a piece that is a word of the model
        brings its row, any other a fixed random direction drawn from a hash of the piece, of
        norm ``unknown_scale`` times :meth:`unknown_norm`. The folders ``export`` writes for
        sentence-transformers and model2vec hold the same pieces and rows, so they embed
        exactly so. ``unknown="hash"`` gives every unknown token one such hashed vector of its
        own instead. With either, only a sentence without any token (or whose tokens have no
        pieces) has no embedding. ``None`` (the default) takes the model's own rule
        (:attr:`unknown_rule`); ``unknown_scale=None`` that rule's scale (:meth:`unknown_scale`).
        """
        if isinstance(sentences, str):
            raise TypeError("embed() takes a list of sentences; wrap a single sentence in a list")
        if isinstance(sentences, (bytes, bytearray)) or not hasattr(sentences, "__iter__"):
            raise TypeError(f"embed() takes a list of sentences (str), got {type(sentences).__name__}")
        sentences = sentences if isinstance(sentences, (list, tuple)) else list(sentences)  # a generator is read once
        for n, s in enumerate(sentences):
            if not isinstance(s, str):
                raise TypeError(f"sentence {n} is a {type(s).__name__}, not a str")
        return self._embed_strs(sentences, unknown, unknown_scale)

    def _embed_strs(self, sentences, unknown: str | None, unknown_scale: float | None) -> np.ndarray:
        """:meth:`embed` of a list of str (checked by the caller: :meth:`embed`, :meth:`encode`)."""
        unknown = self.unknown_rule[0] if unknown is None else unknown
        if unknown not in UNKNOWN_MODES:
            raise ValueError(f"unknown must be one of {', '.join(UNKNOWN_MODES)}, got {unknown!r}")
        unknown_scale = self.unknown_scale(unknown) if unknown_scale is None else unknown_scale
        if (isinstance(unknown_scale, (bool, np.bool_)) or not isinstance(unknown_scale, (int, float, np.number))
                or not 0 < unknown_scale <= 1e6 or not math.isfinite(unknown_scale)):
            raise ValueError(f"unknown_scale must be a number above 0 and at most 1e6 (as in TrainConfig), "
                             f"got {unknown_scale!r}")
        unique = dict.fromkeys(sentences)  # a sentence said twice is embedded once
        if len(unique) == len(sentences):
            return self._embed_lines(sentences, unknown, unknown_scale)
        row = {sentence: n for n, sentence in enumerate(unique)}
        which = np.fromiter(map(row.__getitem__, sentences), dtype=np.int64, count=len(sentences))
        return self._embed_lines(list(unique), unknown, unknown_scale)[which]

    def encode(self, sentences, batch_size: int = 4096, show_progress_bar: bool = False,
               normalize_embeddings: bool = False, fill: float = math.nan, unknown: str | None = None,
               convert_to_numpy: bool = True) -> np.ndarray:
        """Sentence embeddings with sentence-transformers' conventions: :meth:`embed` under
        another name and signature (one implementation).

        ``sentences``: a string gives a 1-D vector (dim,); a list, tuple or any iterable
        (a generator too) gives a 2-D array (n, dim), float32. ``batch_size`` sentences are
        embedded at a time (a generator is read a batch at a time); ``show_progress_bar``
        shows a progress line on stderr; ``normalize_embeddings`` scales each row to unit
        length (cosine is then a dot product). A sentence with nothing to average gets a row
        of ``fill`` (NaN by default: it has no embedding; ``fill=0.0`` gives zeros, as
        sentence-transformers' static models do). ``unknown``: as in :meth:`embed`.
        ``convert_to_numpy`` is accepted for compatibility; the result is always a NumPy array.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not isinstance(fill, (int, float, np.number)) or isinstance(fill, (bool, np.bool_)):
            raise TypeError(f"fill must be a number (NaN for no embedding, 0.0 for zeros), got {fill!r}")
        single = isinstance(sentences, str)
        items = [sentences] if single else sentences
        if isinstance(items, (bytes, bytearray)) or not hasattr(items, "__iter__"):
            raise TypeError(f"encode() takes a sentence or an iterable of sentences, got {type(sentences).__name__}")
        from ..progress import Progress

        total = len(items) if hasattr(items, "__len__") else 0
        bar = Progress(total, unit="sentences", enabled=None if show_progress_bar else False)
        blocks, batch, done = [], [], 0

        def flush() -> None:
            nonlocal done
            for n, s in enumerate(batch):
                if not isinstance(s, str):
                    raise TypeError(f"sentence {done + n} is a {type(s).__name__}, not a str")
            blocks.append(self._embed_strs(batch, unknown, None))  # checked above, numbered across batches
            done += len(batch)
            bar.update(done)
            batch.clear()

        try:
            for sentence in items:
                batch.append(sentence)
                if len(batch) >= batch_size:
                    flush()
            if batch or not blocks:
                flush()
        finally:
            bar.close()
        out = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
        if normalize_embeddings:
            norms = np.linalg.norm(out.astype(np.float64), axis=1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                out = (out / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        if not (isinstance(fill, float) and math.isnan(fill)):
            out = np.where(np.isnan(out).any(axis=1, keepdims=True), np.float32(fill), out).astype(np.float32)
        return out[0] if single else out

    def _embed_lines(self, sentences, rule: str, scale: float) -> np.ndarray:
        """``embed(sentences)``: float32 (n, dim); unknown words under the rule ``unknown`` at ``scale``.

        The sentences are tokenized in one call, one per line (the tokens of each line are
        those of ``tokenize(sentence)``: a line end is whitespace, and lowercasing a
        sentence does not look past it), and looked up in one pass. The sums of what the
        unknown words bring (:meth:`unknown_vectors`) are added to those of the known rows,
        and their counts to the known words', before dividing.
        """
        if not len(sentences):
            return np.empty((0, self.dim), dtype=np.float32)
        index = self.vocab.index
        text = "\n".join(sentences)
        if text.count("\n") != len(sentences) - 1:  # a sentence has line ends: spaces split it alike
            text = "\n".join(sentence.replace("\n", " ") for sentence in sentences)
        tokens = self.tokenize_lines(text + "\n")
        ids = np.fromiter(map(index.get, tokens, repeat(-1)), dtype=np.int64, count=len(tokens))
        if "\n" in index:  # a word no sentence can hold: here it would stand for the line ends
            ids[ids == index["\n"]] = -1
        unknown = np.flatnonzero(ids < 0)
        is_end = np.fromiter((tokens[i] == "\n" for i in unknown.tolist()), dtype=bool, count=len(unknown))
        ends = unknown[is_end]
        if len(ends) != len(sentences):
            raise AssertionError(f"tokenizer found {len(ends)} line ends in {len(sentences)} sentences")
        known = ids >= 0
        lengths = np.diff(np.cumsum(known)[ends], prepend=0)
        words = unknown[~is_end]  # positions of the unknown words
        if rule == "omit" or not len(words):
            return mean_rows(self.vectors, ids[known], lengths, dtype=np.float32)
        distinct, which = np.unique(np.array([tokens[p] for p in words.tolist()], dtype=object), return_inverse=True)
        table, counts = self.unknown_vectors(distinct.tolist(), rule, scale)
        sentence_of = np.searchsorted(ends, words)  # a word's sentence: the line ends before it (sorted)
        sums = np.zeros((len(sentences), self.dim))
        # the r-th unknown word of every sentence at once (few per sentence; reduceat over
        # 300 columns is slow, see mean_rows)
        first = np.flatnonzero(np.r_[True, sentence_of[1:] != sentence_of[:-1]])
        rank = np.arange(len(words)) - np.repeat(first, np.diff(np.r_[first, len(words)]))
        for r in range(int(rank.max()) + 1):
            at = rank == r
            sums[sentence_of[at]] += table[which[at]]
        means = mean_rows(self.vectors, ids[known], lengths)  # float64, NaN where no known word
        sums += np.where(lengths[:, None] > 0, means, 0.0) * lengths[:, None]
        total = lengths + np.bincount(sentence_of, weights=counts[which], minlength=len(sentences)).astype(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (sums / np.where(total > 0, total, np.nan)[:, None]).astype(np.float32)

    def unknown_vectors(self, tokens: list[str], rule: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
        """What each of the unknown ``tokens`` adds to a sentence average under ``rule`` ("hash" or
        "pieces") at ``scale``: the float64 sums of its vectors (n, dim) and their counts (int64, n).

        hash: one hashed vector of norm ``scale * unknown_norm()``, count 1. pieces: the rows
        of its pieces that are words, plus the hashed vectors (that norm) of the others, one
        count a piece; zeros and 0 for a token without pieces.
        """
        norm = scale * self.unknown_norm()
        if rule == "hash":
            return self._unit_hashed(tokens) * norm, np.ones(len(tokens), dtype=np.int64)
        index, splits = self.vocab.index, [self.pieces.split(t) for t in tokens]
        new = sorted({p for pieces in splits for p in pieces if p not in index})
        hashed = dict(zip(new, self._unit_hashed(new) * norm))
        sums = np.zeros((len(tokens), self.dim))
        for n, pieces in enumerate(splits):
            for piece in pieces:
                i = index.get(piece)
                sums[n] += hashed[piece] if i is None else self._vectors[i]
        return sums, np.fromiter(map(len, splits), dtype=np.int64, count=len(splits))

    def _unit_hashed(self, tokens: list[str]) -> np.ndarray:
        """Unit-length hashed vectors of ``tokens`` (float64), kept between calls (bounded).

        Thread-safe without a lock: the result is built from this call's own dict of rows (those
        found in the cache, then those computed), and only then are the new rows published, so
        a ``clear()`` of the shared cache by another thread never loses a row this call needs.
        """
        cache = self.__dict__.setdefault("_hashed", {})
        rows = cached_rows(cache, tokens, lambda new: hashed_vectors(new, self.dim, 1.0), _HASH_CACHE)
        return np.array([rows[t] for t in tokens]).reshape(len(tokens), self.dim)

    def unknown_norm(self) -> float:
        """The median norm of the vectors of the rarest tenth of the trained vocabulary.

        Words with a count of 0 (added by vocabulary expansion, after the trained ones) are
        not counted: the norm stays that of the words the model learned.
        """
        if getattr(self, "_unknown_norm", None) is None:
            rare = rarest_rows(self.vectors, self.vocab.counts)
            self._unknown_norm = float(np.median(np.linalg.norm(rare, axis=1))) if len(rare) else 1.0
        return self._unknown_norm

    def similarity(self, s1: str, s2: str, unknown: str | None = None) -> float:
        """Cosine of the two sentence embeddings; nan when a side has nothing to average.

        ``unknown``: as in :meth:`embed` (``None``: the model's own rule; ``"omit"``: nan
        when a side has no known word; ``"hash"``: unknown words get hashed vectors).
        """
        a, b = self.embed([s1, s2], unknown=unknown).astype(np.float64)
        return cosine(a, b)

    def similarities(self, first, second=None, unknown: str | None = None) -> np.ndarray:
        """Cosines of many sentence pairs at once: float64, shape (n_pairs,); nan where a side has no embedding.

        ``similarities(pairs)`` takes a sequence of ``(sentence1, sentence2)`` pairs;
        ``similarities(firsts, seconds)`` two sequences of sentences of the same length.
        Each value is what :meth:`similarity` gives for that pair, but all the sentences
        are embedded by one :meth:`embed` call (a sentence given twice is embedded once),
        which is far faster than a call per pair. ``unknown``: as in :meth:`embed`.
        """
        if second is None:
            if isinstance(first, str):
                raise TypeError("similarities() takes pairs of sentences, or two lists of sentences")
            pairs = list(first)
            for n, pair in enumerate(pairs):
                if isinstance(pair, str) or len(pair) != 2:
                    raise ValueError(f"pair {n} is not a pair of sentences: {pair!r:.80}")
            firsts, seconds = [p[0] for p in pairs], [p[1] for p in pairs]
        else:
            if isinstance(first, str) or isinstance(second, str):
                raise TypeError("similarities(firsts, seconds) takes two lists of sentences; "
                                "for a single pair use similarity()")
            firsts, seconds = list(first), list(second)
            if len(firsts) != len(seconds):
                raise ValueError(f"{len(firsts)} first sentences but {len(seconds)} second ones")
        n = len(firsts)
        if n == 0:
            return np.empty(0)
        rows = self.embed(firsts + seconds, unknown=unknown).astype(np.float64)
        return row_cosines(rows[:n], rows[n:])

    def n_similarity(self, words1, words2) -> float:
        """Cosine between the means of the vectors of two lists of words, as gensim's ``n_similarity``.

        As there, the means are of the vectors as they are (not scaled to length 1 first),
        and a word may be given as a vector. Words are compared by :attr:`word_vectors`. Unlike
        there, a word not in the vocabulary (as given or lowercased) is a KeyError instead of being skipped, an empty list a
        ValueError, and nan is returned when a mean is the zero vector.
        """
        means = []
        for words in (words1, words2):
            if isinstance(words, str):
                words = [words]
            rows = [self._word_query(np.asarray(self[w] if isinstance(w, str) else w, dtype=np.float64))
                    for w in words]
            if not rows:
                raise ValueError("n_similarity() needs at least one word on each side")
            means.append(np.mean(rows, axis=0))
        return cosine(*means)

    # -- gensim's KeyedVectors word methods (words compared by word_vectors) ----------

    def get_vecattr(self, word: str, attr: str):
        """gensim's ``get_vecattr``: ``"count"`` is the word's count in the training corpus (0: unknown)."""
        if attr != "count":
            raise KeyError(f"no attribute {attr!r}; a model records each word's 'count'")
        return int(self.vocab.counts[self.get_index(word)])

    def get_normed_vectors(self) -> np.ndarray:
        """The rows words are compared by (:attr:`word_vectors`), each scaled to length 1 (zero rows stay zero)."""
        rows = np.asarray(self.word_vectors, dtype=np.float32)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms > 0, norms, 1.0)

    def _unit_word(self, word) -> np.ndarray:
        v = np.asarray(self.word_vectors[self.get_index(word)], dtype=np.float64)
        n = np.linalg.norm(v)
        return v / n if n > 0 else v

    def distances(self, word_or_vector, other_words=()) -> np.ndarray:
        """``1 - cosine`` from a word (or a vector) to ``other_words``, or to every word when none are given."""
        if isinstance(word_or_vector, str):
            q = self._unit_word(word_or_vector)
        else:
            q = self._word_query(np.asarray(word_or_vector, dtype=np.float64))
            q = q / (np.linalg.norm(q) or 1.0)
        other_words = list(other_words) if other_words is not None else []  # a numpy array of words too
        if other_words:
            rows = np.array([self._unit_word(w) for w in other_words])
        else:
            rows = self.get_normed_vectors().astype(np.float64)
        return 1.0 - rows @ q

    def distance(self, w1: str, w2: str) -> float:
        """``1 - cosine`` of two words (gensim's ``distance``)."""
        return float(1.0 - self._unit_word(w1) @ self._unit_word(w2))

    def rank(self, w1: str, w2: str) -> int:
        """Where ``w2`` comes among ``w1``'s neighbours by cosine, 1 for the nearest (every word counts, as in gensim)."""
        i, j = self.get_index(w1), self.get_index(w2)
        cos = 1.0 - self.distances(w1)
        cos[i] = -np.inf
        return int(np.count_nonzero(cos > cos[j])) + 1

    def doesnt_match(self, words) -> str:
        """The word furthest from the mean of the others' unit vectors (gensim's ``doesnt_match``);
        words outside the vocabulary are left out, as there."""
        known = [w for w in words if w in self]
        if not known:
            raise ValueError("doesnt_match() needs at least one word of the vocabulary")
        units = np.array([self._unit_word(w) for w in known])
        mean = units.mean(axis=0)
        return known[int(np.argmin(units @ mean))]

    def evaluate_word_pairs(self, pairs) -> tuple[float, float, float]:
        """Pearson and Spearman correlations of the word cosines with human scores, and the share of
        pairs left out (a word outside the vocabulary), as gensim's ``evaluate_word_pairs`` reports them.

        ``pairs``: a path of ``word1<TAB>word2<TAB>score`` lines (``#`` comments skipped; read as
        STS files are: :func:`read_word_pairs`), or ``(word1, word2, score)`` triples. A score that
        is not finite or beyond +-10^6 is refused (it would make both correlations NaN, or wrong).
        Returns ``(pearson, spearman, oov_ratio)``.
        """
        from scipy.stats import pearsonr, spearmanr

        if isinstance(pairs, (str, os.PathLike)):
            triples = read_word_pairs(pairs)
        else:
            triples = [(a, b, float(s)) for a, b, s in pairs]
            for n, (a, b, score) in enumerate(triples, 1):
                if not (math.isfinite(score) and abs(score) <= MAX_GOLD):
                    raise ValueError(f"pair {n} ({a!r}, {b!r}): score {score!r} is not a number within +-{MAX_GOLD:g}")
        kept = [(a, b, s) for a, b, s in triples if a in self and b in self]
        if len(kept) < 2:
            raise ValueError(f"only {len(kept)} of {len(triples)} pairs have both words in the vocabulary")
        cos = [1.0 - self.distance(a, b) for a, b, _ in kept]
        gold = [s for _, _, s in kept]
        return (float(pearsonr(gold, cos)[0]), float(spearmanr(gold, cos)[0]),
                1.0 - len(kept) / len(triples))

    def save_word2vec_format(self, path, binary: bool = False) -> None:
        """gensim's name for ``scbow-numba export``: the word vectors in word2vec text or binary format
        (the word part's columns of a model with one, else the whole rows; :func:`scbow.vectors.export.export`)."""
        from .export import export

        if not isinstance(binary, (bool, np.bool_)):  # binary="no" is truthy: it would write binary
            raise TypeError(f"binary must be True or False, not {binary!r}")
        export(self, path, "word2vec", binary=bool(binary))

    def export(self, path, format: str = "word2vec", **options):
        """Write the model as ``scbow-numba export`` does (a word2vec file, a sentence-transformers or
        model2vec folder); the options and the returned record: :func:`scbow.vectors.export.export`."""
        from .export import export

        return export(self, path, format, **options)

    def similar_by_word(self, word: str, topn: int = 10, restrict_vocab: int | None = None,
                        min_count: int = NEIGHBOUR_MIN_COUNT) -> list[tuple[str, float]]:
        """``most_similar(word, topn, restrict_vocab=restrict_vocab, min_count=min_count)``: gensim's name for it."""
        if not isinstance(word, str):
            raise TypeError(f"similar_by_word() takes a word, got {type(word).__name__}")
        return self.most_similar(word, topn=topn, restrict_vocab=restrict_vocab, min_count=min_count)

    def similar_by_vector(self, vector, topn: int = 10, restrict_vocab: int | None = None,
                          min_count: int = NEIGHBOUR_MIN_COUNT) -> list[tuple[str, float]]:
        """The ``topn`` words nearest to ``vector`` by cosine, best first: a vector of the word part's
        width, or a whole row (cut to its word columns, :attr:`word_vectors`).

        :meth:`most_similar` of the vector alone: no query word is left out;
        ``restrict_vocab`` and ``min_count`` as there.
        """
        vector = self._word_query(np.asarray(vector, dtype=np.float64))
        return self.most_similar([vector], topn=topn, restrict_vocab=restrict_vocab, min_count=min_count)

    def most_similar(self, positive, topn: int = 10, negative=(), restrict_vocab: int | None = None,
                     min_count: int = NEIGHBOUR_MIN_COUNT) -> list[tuple[str, float]]:
        """The ``topn`` words nearest to a query by cosine, with their cosines, best first.

        Words are compared by :attr:`word_vectors` (the word part of a model that has one).
        ``positive`` is a word, a vector (the word part's width, or a whole row) or a list of
        words and vectors;
        ``negative`` likewise, subtracted. As in gensim's ``KeyedVectors.most_similar``,
        the query is the mean of the unit vectors of ``positive`` and of the negated unit
        vectors of ``negative``, and the query's own words are never returned
        (``most_similar(["king", "woman"], negative=["man"])`` asks an analogy). Ties go
        to the more frequent word. A word is looked up as given, else lowercased;
        KeyError when neither is in the vocabulary. ValueError when the query is the zero
        vector (its terms cancel out).

        ``restrict_vocab=N``: only the first N words (the N most frequent) are candidates,
        as in gensim; the query's words may be any. ``None``: all of them.

        ``min_count=C`` (default :data:`NEIGHBOUR_MIN_COUNT`, 100): only words seen at least
        C times in the training corpus are candidates, so that rare words, whose rows are
        mostly noise, do not crowd out the answer; the query's words may be any. A word
        with no recorded count (0: read from a word2vec file, or added by ``expand``) is
        always a candidate. ``0`` or ``1``: every word, the plain cosine ranking (gensim's).
        The cosines returned are plain cosines either way.

        Speed: the cosines of all the candidates are computed in float32 (one
        matrix-vector product with the rows as they are, times the cached inverse row
        norms), and the few words within rounding distance of the ``topn``-th best are
        scored again in float64, which decides their order and gives the returned cosines.
        """
        if not isinstance(topn, (int, np.integer)) or isinstance(topn, (bool, np.bool_)) or topn < 1:
            raise ValueError(f"topn must be a positive integer, got {topn!r}")
        topn = int(topn)  # numpy integers too, as gensim takes them
        n_rows = len(self)
        if restrict_vocab is not None:
            if not isinstance(restrict_vocab, (int, np.integer)) or isinstance(restrict_vocab, bool) or restrict_vocab < 1:
                raise ValueError(f"restrict_vocab must be a positive integer or None, got {restrict_vocab!r}")
            n_rows = min(n_rows, int(restrict_vocab))
        if not isinstance(min_count, (int, np.integer)) or isinstance(min_count, (bool, np.bool_)) or min_count < 0:
            raise ValueError(f"min_count must be a non-negative integer, got {min_count!r}")
        terms, exclude = [], set()
        for sign, group in ((1.0, positive), (-1.0, negative)):
            if group is None:  # gensim takes None for "none"
                continue
            if isinstance(group, (str, bytes, bytearray)) or (isinstance(group, np.ndarray) and group.ndim == 1):
                group = [group]
            for item in group:
                if isinstance(item, (bytes, bytearray)):
                    raise TypeError(f"a query word is a str, got {type(item).__name__} {bytes(item)[:40]!r}")
                if isinstance(item, str):
                    i = self.get_index(item)
                    v = np.asarray(self.word_vectors[i], dtype=np.float64)
                    exclude.add(i)
                else:
                    v = self._word_query(np.asarray(item, dtype=np.float64))
                if not np.isfinite(v).all():
                    raise ValueError("a query vector holds NaN or inf values")
                big = np.max(np.abs(v)) if v.size else 0.0  # scaled first: a norm of 1e300-sized values overflows
                if big > 0:
                    v = v / big
                norm = np.linalg.norm(v)
                terms.append(sign * v / norm if norm > 0 else v)
        if not terms:
            raise ValueError("most_similar() needs at least one word or vector")
        query = np.mean(terms, axis=0)
        qnorm = np.linalg.norm(query)
        # the terms are unit vectors: a mean this short is what rounding leaves when they cancel
        if not np.isfinite(qnorm) or qnorm < 1e-5:
            raise ValueError("the query vector is zero or not finite; no direction to compare with")
        query = query / qnorm
        exclude = np.array(sorted(i for i in exclude if i < n_rows), dtype=np.int64)
        rare = self._rare_rows(int(min_count), n_rows)  # a mask, or None when no word is too rare
        n_rare = 0
        if rare is not None:
            n_rare = int(np.count_nonzero(rare))
            exclude = exclude[~rare[exclude]]  # each left-out word counted once
        k = min(topn, n_rows - len(exclude) - n_rare)
        if k <= 0:
            return []
        matrix, inverse_norms, odd = self._search_table()
        scores = matrix[:n_rows] @ query.astype(np.float32)
        scores *= inverse_norms[:n_rows]
        scores[exclude] = -np.inf
        if n_rare:
            scores[rare] = -np.inf
        if len(odd):  # rows float32 cannot score: always scored again below
            odd = np.setdiff1d(odd[odd < n_rows], exclude, assume_unique=True)
            if rare is not None:
                odd = odd[~rare[odd]]
            scores[odd] = -np.inf
        regular = n_rows - len(exclude) - n_rare - len(odd)
        if k < regular:
            kth = kth_largest(scores, k)  # the k-th best float32 cosine
            # A float32 cosine is within (dim + 8) float32 epsilons of the true one: every
            # word whose true cosine can reach the k-th best is within twice that of it.
            margin = 2 * (matrix.shape[1] + 8) * float(np.finfo(np.float32).eps)
            candidates = np.flatnonzero(scores >= kth - margin)
        else:
            candidates = np.flatnonzero(scores > -np.inf)
        if len(odd):
            candidates = np.union1d(candidates, odd)
        rows = np.asarray(self.word_vectors[candidates], dtype=np.float64)
        norms = np.linalg.norm(rows, axis=1)
        exact = (rows @ query) / np.where(norms > 0, norms, 1.0)
        best = np.lexsort((candidates, -exact))[:k]
        words = self.vocab.words
        return [(words[i], float(c)) for i, c in zip(candidates[best].tolist(), exact[best].tolist())]

    def _rare_rows(self, min_count: int, n_rows: int) -> np.ndarray | None:
        """Which of the first ``n_rows`` words are seen fewer than ``min_count`` times (a bool mask),
        or None when none can be (``min_count`` 0 or 1). A count of 0 (unknown) is never rare.

        Computed on every call: a comparison over the counts, far cheaper than the scores.
        """
        if min_count <= 1:
            return None
        counts = self.vocab.counts[:n_rows]
        return (counts > 0) & (counts < min_count)

    def _search_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What :meth:`most_similar` scores with, computed once per ``vectors`` array.

        ``(matrix, inverse_norms, odd)``: the vectors as a C-contiguous float32 matrix (the
        array itself when it is one, memory-mapped or not: no copy; a word part's columns are
        copied), float32 ``1 / norm``
        of every row (0 for a zero row, whose cosines are 0), and the ids of the rows that
        float32 cannot score (norm below 1e-30 or above 1e30, or not finite), which are
        scored in float64 every time.
        """
        table = self._search
        if table is None:
            matrix = np.asarray(self.word_vectors)
            # a C-contiguous float32 matrix is used as it is (memory-mapped or not); the word part's
            # columns are copied once: BLAS reads a strided view of them at about half the speed
            # (26 ms against 14.5 ms a query on 125K x 150 of 450 columns)
            if matrix.dtype != np.float32 or not matrix.flags.c_contiguous:
                matrix = np.ascontiguousarray(matrix, dtype=np.float32)
            norms = row_norms(matrix)
            fine = (norms >= 1e-30) & (norms <= 1e30)
            inverse = np.zeros(len(norms), dtype=np.float32)
            inverse[fine] = 1.0 / norms[fine]
            odd = np.flatnonzero(~fine & (norms != 0))
            self._search = table = (matrix, inverse, odd)
        return table


def read_word_pairs(path: os.PathLike) -> list[tuple[str, str, float]]:
    """The ``(word1, word2, score)`` lines of a word-similarity file (WordSim-353, SimLex-999 as
    ``word1<TAB>word2<TAB>score``; fields past the third ignored), read as STS files are: through
    the one text reader (compressed too), a byte-order mark skipped, blank lines and ``#``
    comments skipped; a short line or a score that is not a finite number within +-10^6 is an
    STSError naming the file and the line."""
    from ..errors import STSError
    from ..text.reader import read_small_text

    triples = []
    for n, line in enumerate(read_small_text(path, STSError, "a file of word pairs"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 3:
            raise STSError(f"{path}: line {n} has {plural(len(fields), 'tab-separated field')}, expected 3 "
                           "(word1, word2, score)")
        try:
            score = gold_number(fields[2])
        except ValueError:
            raise STSError(f"{path}: line {n}: score {fields[2][:40]!r} is not a number") from None
        if not (math.isfinite(score) and abs(score) <= MAX_GOLD):
            raise STSError(f"{path}: line {n}: score {fields[2][:40]!r} is not a number within +-{MAX_GOLD:g}")
        triples.append((fields[0], fields[1], score))
    return triples
