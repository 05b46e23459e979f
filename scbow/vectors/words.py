"""A model's word vectors, with gensim's ``KeyedVectors`` names: ``model.wv``.

The word vectors are the word part's columns of a model trained with one, else the whole rows;
every method compares words by those vectors, so ``similarity + distance == 1``, ``most_similar``'s
cosines are ``similarity``'s and ``save_word2vec_format`` writes what ``wv[word]`` gives.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..errors import STSError
from ..progress import plural
from ..text.reader import read_small_text
from ..text.tokenize import fold
from ..text.units import MAX_GOLD, gold_number
from .numeric import cosine, kth_largest, row_norms


def row_parts(config: dict, width: int) -> dict:
    """The column ranges of a model's parts, from its saved ``config`` and row width:
    ``{"sentence": (0, dim), "word": (dim, width)}`` with a word part, else ``{"sentence": (0, width)}``."""
    try:
        passes, dim = int(config.get("word_passes", 0)), int(config["dim"])
        word_dim = int(config.get("word_dim", 0))
    except (KeyError, TypeError, ValueError, AttributeError):
        return {"sentence": (0, width)}
    if passes > 0 and word_dim > 0 and dim + word_dim == width:
        return {"sentence": (0, dim), "word": (dim, width)}
    return {"sentence": (0, width)}


class WordVectors:
    """``model.wv``: gensim's ``KeyedVectors`` methods on :attr:`vectors`, except that a word is looked up
    as given, else lowercased, else folded as the tokenizer folds (``wv["King"]`` is "king"'s vector;
    ``key_to_index`` has the exact spellings), and ``most_similar`` may leave out rare words (``min_count``).

    A light view reading ``model.vectors`` on every call; ``most_similar``'s float32 search table is
    kept until the vectors are assigned again (after changing rows in place, assign them again).
    """

    def __init__(self, model):
        self._model = model
        self._search = None  # ((the model's vectors generation, columns), table)

    @property
    def columns(self) -> tuple[int, int]:
        """The columns of the model's rows that are the word vectors: the word part's, else all."""
        parts = self._model.parts
        return parts.get("word", parts["sentence"])

    @property
    def vectors(self) -> np.ndarray:
        """The word vectors, row i for ``index_to_key[i]``: the word part's columns (a view), else the rows."""
        rows = self._model.vectors
        lo, hi = self.columns
        return rows if (lo, hi) == (0, rows.shape[1]) else rows[:, lo:hi]

    @property
    def vector_size(self) -> int:
        lo, hi = self.columns
        return hi - lo

    @property
    def index_to_key(self) -> list[str]:
        """The words, row by row, most frequent first (the model's ``vocab.words``; do not change it)."""
        return self._model.vocab.words

    @property
    def key_to_index(self) -> dict[str, int]:
        """The row of each word, exact spelling (the model's ``vocab.index``; do not change it)."""
        return self._model.vocab.index

    def __len__(self) -> int:
        return len(self._model.vocab)

    def __repr__(self) -> str:
        what = "the word part" if "word" in self._model.parts else "the whole rows"
        return f"<scbow WordVectors: {plural(len(self), 'word')} x {plural(self.vector_size, 'dim')} ({what})>"

    def get_index(self, word: str, default=None) -> int:
        """The row of ``word`` as given, else lowercased, else folded; else ``default``, or KeyError without one
        (gensim's ``get_index`` looks up the exact key only; here ``key_to_index`` does)."""
        i = self._find(word)
        if i is not None:
            return i
        if default is not None:
            return default
        lower = word.lower() if isinstance(word, str) else word
        also = f" (nor is {lower!r})" if lower != word else ""
        raise KeyError(f"word {word!r} is not in the vocabulary{also}")

    def _find(self, word) -> int | None:
        """The row of ``word`` as given, else lowercased, else folded and lowercased; or None."""
        index = self._model.vocab.index
        i = index.get(word)
        if i is None and isinstance(word, str):
            i = index.get(word.lower())
            if i is None:
                i = index.get(fold(word).lower())
        return i

    def __contains__(self, word) -> bool:
        """Whether ``wv[word]`` finds a vector: ``word`` as given, lowercased, or folded."""
        try:
            return self._find(word) is not None
        except TypeError:  # unhashable
            return False

    def __getitem__(self, word) -> np.ndarray:
        """The vector of ``word`` (looked up as :meth:`get_index` does); a list of words gives a matrix."""
        if isinstance(word, (list, tuple)):
            return np.asarray(self.vectors)[np.array([self.get_index(w) for w in word], dtype=np.int64)]
        return self.vectors[self.get_index(word)]

    def get_vector(self, word: str, norm: bool = False) -> np.ndarray:
        """``wv[word]``, or with ``norm=True`` scaled to length 1 (in float64, returned in its dtype; zero stays zero)."""
        vector = self[word]
        if not norm:
            return vector
        length = np.linalg.norm(vector.astype(np.float64))
        return (vector.astype(np.float64) / (length if length > 0 else 1.0)).astype(vector.dtype)

    def get_vecattr(self, word: str, attr: str):
        """``"count"``: the word's count in the training corpus (0: unknown)."""
        if attr != "count":
            raise KeyError(f"no attribute {attr!r}; a model records each word's 'count'")
        return int(self._model.vocab.counts[self.get_index(word)])

    def get_normed_vectors(self) -> np.ndarray:
        """:attr:`vectors` as float32, each row scaled to length 1 (zero rows stay zero)."""
        rows = np.asarray(self.vectors, dtype=np.float32)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms > 0, norms, 1.0)

    def _query(self, v: np.ndarray) -> np.ndarray:
        """A query vector in word-vector columns: one of :attr:`vector_size` as it is, a whole row cut
        to the word columns; ValueError for any other shape."""
        lo, hi = self.columns
        dim = self._model.dim
        if v.shape == (hi - lo,):
            return v
        if v.shape == (dim,):
            return v[lo:hi]
        shapes = f"({hi - lo},)" + (f" (the word part) or ({dim},) (whole rows)" if hi - lo != dim else "")
        raise ValueError(f"a query vector must have shape {shapes}, got {v.shape}")

    def _unit(self, word) -> np.ndarray:
        return self._unit_row(self.get_index(word))

    def _unit_row(self, i: int) -> np.ndarray:
        v = np.asarray(self.vectors[i], dtype=np.float64)
        n = np.linalg.norm(v)
        return v / n if n > 0 else v

    def similarity(self, w1: str, w2: str) -> float:
        """Cosine of two words (gensim's ``similarity``; 0 when a vector is zero)."""
        return float(self._unit(w1) @ self._unit(w2))

    def distance(self, w1: str, w2: str) -> float:
        """``1 - similarity(w1, w2)`` (gensim's ``distance``)."""
        return 1.0 - self.similarity(w1, w2)

    def distances(self, word_or_vector, other_words=()) -> np.ndarray:
        """``1 - cosine`` from a word (or a vector) to ``other_words``, or to every word when none are given."""
        if isinstance(word_or_vector, str):
            q = self._unit(word_or_vector)
        else:
            q = self._query(np.asarray(word_or_vector, dtype=np.float64))
            q = q / (np.linalg.norm(q) or 1.0)
        other_words = list(other_words) if other_words is not None else []  # a numpy array of words too
        if other_words:
            rows = np.array([self._unit(w) for w in other_words])
        else:
            rows = self.get_normed_vectors().astype(np.float64)
        return 1.0 - rows @ q

    def rank(self, w1: str, w2: str) -> int:
        """gensim's ``rank``: where ``w2`` comes among ``w1``'s neighbours by cosine, 1 for the nearest."""
        i, j = self.get_index(w1), self.get_index(w2)
        cos = 1.0 - self.distances(w1)
        bar = cos[j]  # read before w1's own score is struck out: a word is its own nearest
        cos[i] = -np.inf
        return int(np.count_nonzero(cos > bar)) + 1

    def doesnt_match(self, words) -> str:
        """gensim's ``doesnt_match``; a str is refused (gensim would read its letters as the words)."""
        if isinstance(words, (str, bytes, bytearray)):
            raise TypeError(f"doesnt_match() takes a list of words, not a {type(words).__name__} ({words[:40]!r}); "
                            "split it first")
        known = [w for w in words if w in self]
        if not known:
            raise ValueError("doesnt_match() needs at least one word of the vocabulary")
        units = np.array([self._unit(w) for w in known])
        mean = units.mean(axis=0)
        return known[int(np.argmin(units @ mean))]

    def n_similarity(self, words1, words2) -> float:
        """gensim's ``n_similarity``, except that an unknown word is a KeyError (not skipped), an empty list a
        ValueError, a zero mean nan."""
        means = []
        for words in (words1, words2):
            if isinstance(words, str):
                words = [words]
            rows = [self._query(np.asarray(self[w] if isinstance(w, str) else w, dtype=np.float64)) for w in words]
            if not rows:
                raise ValueError("n_similarity() needs at least one word on each side")
            means.append(np.mean(rows, axis=0))
        return cosine(*means)

    def evaluate_word_pairs(self, pairs):
        """gensim's ``evaluate_word_pairs``: ``((pearson, p_value), spearman, oov_percent)``. ``pairs``: a path
        (:func:`read_word_pairs`) or ``(word1, word2, score)`` triples; a score not finite or beyond +-10^6 is refused."""
        from scipy.stats import pearsonr, spearmanr

        if isinstance(pairs, (str, os.PathLike)):
            open(pairs, "rb").close()  # the OSError gensim's reader raises, not the STS reader's error
            triples = read_word_pairs(pairs)
        else:
            triples = [(a, b, float(s)) for a, b, s in pairs]
            for n, (a, b, score) in enumerate(triples, 1):
                if not (math.isfinite(score) and abs(score) <= MAX_GOLD):
                    raise ValueError(f"pair {n} ({a!r}, {b!r}): score {score!r} is not a number within +-{MAX_GOLD:g}")
        kept = [(a, b, s) for a, b, s in triples if a in self and b in self]
        if len(kept) < 2:
            raise ValueError(f"only {len(kept)} of {len(triples)} pairs have both words in the vocabulary")
        cos = [self.similarity(a, b) for a, b, _ in kept]
        gold = [s for _, _, s in kept]
        pearson = pearsonr(gold, cos)
        return ((float(pearson[0]), float(pearson[1])), spearmanr(gold, cos),
                100.0 * (1.0 - len(kept) / len(triples)))

    def evaluate_word_analogies(self, analogies, restrict_vocab: int = 300000, case_insensitive: bool = True,
                                dummy4unknown: bool = False, similarity_function: str = "most_similar"):
        """gensim's ``evaluate_word_analogies``: ``(score, sections)``; a question before the first
        ``: SECTION`` line is a ValueError, and with ``case_insensitive`` a spelling means its most frequent word."""
        if similarity_function != "most_similar":
            raise ValueError(f"similarity_function must be 'most_similar' (as in gensim), got {similarity_function!r}")
        spell = str.upper if case_insensitive else str
        words = self.index_to_key[:restrict_vocab]
        known = {spell(w): i for i, w in reversed(list(enumerate(words)))}  # the row of a spelling's most frequent word
        sections, section = [], None
        with open(analogies, encoding="utf-8") as lines:
            for n, line in enumerate(lines):
                if line.startswith(": "):
                    section = {"section": line.lstrip(": ").strip(), "correct": [], "incorrect": []}
                    sections.append(section)
                    continue
                if section is None:
                    raise ValueError(f"{analogies}: line {n + 1} comes before the first ': SECTION' line")
                question = tuple(spell(w) for w in line.split())
                if len(question) != 4:
                    continue
                if not all(w in known for w in question):
                    if dummy4unknown:
                        section["incorrect"].append(question)
                    continue
                a, b, c, expected = question
                query = [known[a], known[b], known[c]]
                # given as vectors (a spelling's row is not get_index's), so the three rows may come back
                found = self.most_similar([self._unit_row(known[b]), self._unit_row(known[c])],
                                          negative=[self._unit_row(known[a])], topn=5 + 3, restrict_vocab=len(words))
                answers = [spell(w) for w, _ in found if self.key_to_index[w] not in query][:5]
                answer = next((w for w in answers if w not in (a, b, c)), answers[-1] if answers else None)
                section["correct" if answer == expected else "incorrect"].append(question)
        total = {"section": "Total accuracy", "correct": [q for s in sections for q in s["correct"]],
                 "incorrect": [q for s in sections for q in s["incorrect"]]}
        sections.append(total)
        asked = len(total["correct"]) + len(total["incorrect"])
        return (len(total["correct"]) / asked if asked else 0.0), sections

    def save_word2vec_format(self, path, binary: bool = False) -> None:
        """Write :attr:`vectors` in word2vec text or binary format (as ``scbow-numba export --part word``)."""
        from .export import export

        if not isinstance(binary, (bool, np.bool_)):  # binary="no" is truthy: it would write binary
            raise TypeError(f"binary must be True or False, not {binary!r}")
        export(self._model, path, "word2vec", binary=bool(binary))

    def similar_by_word(self, word: str, topn: int = 10, restrict_vocab: int | None = None,
                        min_count: int = 0) -> list[tuple[str, float]]:
        """``most_similar(word, ...)``: gensim's name for it."""
        if not isinstance(word, str):
            raise TypeError(f"similar_by_word() takes a word, got {type(word).__name__}")
        return self.most_similar(word, topn=topn, restrict_vocab=restrict_vocab, min_count=min_count)

    def similar_by_vector(self, vector, topn: int = 10, restrict_vocab: int | None = None,
                          min_count: int = 0) -> list[tuple[str, float]]:
        """:meth:`most_similar` of ``vector`` alone (of :attr:`vector_size`, or a whole row): no word left out."""
        vector = self._query(np.asarray(vector, dtype=np.float64))
        return self.most_similar([vector], topn=topn, restrict_vocab=restrict_vocab, min_count=min_count)

    def most_similar(self, positive=None, topn: int = 10, negative=(), restrict_vocab: int | None = None,
                     min_count: int = 0) -> list[tuple[str, float]]:
        """gensim's ``most_similar``; a term may also be a whole row. Ties go to the more frequent word.
        ``min_count=C``: only words seen at least C times (or with no recorded count) are candidates, so
        rare noisy rows do not crowd out the answer; the query's words may be any.

        Every candidate is scored in float32 with the cached inverse norms; the few within rounding
        distance of the ``topn``-th are scored again in float64, which orders them and gives the cosines.
        """
        topn = _whole("topn", topn, 1)
        n_rows = len(self)
        if restrict_vocab is not None:
            n_rows = min(n_rows, _whole("restrict_vocab", restrict_vocab, 1, " or None"))
        min_count = _whole("min_count", min_count, 0)
        vectors = self.vectors
        terms, weights, exclude = [], [], set()
        for default, group in ((1.0, positive), (-1.0, negative)):
            if group is None:  # gensim takes None for "none"
                continue
            if isinstance(group, (str, bytes, bytearray)) or (isinstance(group, np.ndarray) and group.ndim == 1):
                group = [group]
            for item in group:
                item, weight = _weighted(item, default)
                if isinstance(item, (bytes, bytearray)):
                    raise TypeError(f"a query word is a str, got {type(item).__name__} {bytes(item)[:40]!r}")
                if isinstance(item, str):
                    exclude.add(self.get_index(item))
                    v = self._unit(item)
                else:
                    v = self._query(np.asarray(item, dtype=np.float64))
                    if not np.isfinite(v).all():
                        raise ValueError("a query vector holds NaN or inf values")
                terms.append(v)
                weights.append(weight)
        if not terms:
            raise ValueError("most_similar() needs at least one word or vector")
        terms, weights = np.array(terms), np.array(weights)
        # scaled by the largest value first: a vector of 1e300-sized values is a direction, not an overflow
        big = float(np.max(np.abs(terms)))
        terms = terms / (big if big > 0 else 1.0)
        query = weights @ terms
        qnorm = np.linalg.norm(query)
        size = float(np.abs(weights) @ np.linalg.norm(terms, axis=1))
        # a query this short beside its terms is what rounding leaves when they cancel
        if not np.isfinite(qnorm) or qnorm <= 1e-5 * size:
            raise ValueError("the query vector is zero or not finite; no direction to compare with")
        query = query / qnorm
        exclude = np.array(sorted(i for i in exclude if i < n_rows), dtype=np.int64)
        rare = self._rare_rows(min_count, n_rows)
        n_rare = int(np.count_nonzero(rare))
        exclude = exclude[~rare[exclude]]  # each left-out word counted once
        k = min(topn, n_rows - len(exclude) - n_rare)
        if k <= 0:
            return []
        matrix, inverse_norms, odd = self._search_table()
        scores = matrix[:n_rows] @ query.astype(np.float32)
        scores *= inverse_norms[:n_rows]
        scores[exclude] = -np.inf
        scores[rare] = -np.inf
        if len(odd):  # rows float32 cannot score: always scored again below
            odd = np.setdiff1d(odd[odd < n_rows], exclude, assume_unique=True)
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
        rows = np.asarray(vectors[candidates], dtype=np.float64)
        norms = np.linalg.norm(rows, axis=1)
        exact = (rows @ query) / np.where(norms > 0, norms, 1.0)
        best = np.lexsort((candidates, -exact))[:k]
        words = self.index_to_key
        return [(words[i], float(c)) for i, c in zip(candidates[best].tolist(), exact[best].tolist())]

    def _rare_rows(self, min_count: int, n_rows: int) -> np.ndarray:
        """Which of the first ``n_rows`` words are seen fewer than ``min_count`` times (a count of 0, unknown, never is)."""
        counts = self._model.vocab.counts[:n_rows]
        return (counts > 0) & (counts < min_count)

    def _search_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(matrix, inverse_norms, odd)`` that :meth:`most_similar` scores with, once per ``vectors`` assignment:
        the vectors as C-contiguous float32, float32 ``1 / norm`` (0 for a zero row), and the rows float32
        cannot score (norm below 1e-30, above 1e30 or not finite), scored in float64 every time.
        """
        key = (self._model._generation, self.columns)
        if self._search is not None and self._search[0] == key:
            return self._search[1]
        matrix = np.asarray(self.vectors)
        # the word part's columns are copied once: BLAS reads a strided view at about half the speed
        if matrix.dtype != np.float32 or not matrix.flags.c_contiguous:
            matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        norms = row_norms(matrix)
        fine = (norms >= 1e-30) & (norms <= 1e30)
        inverse = np.zeros(len(norms), dtype=np.float32)
        inverse[fine] = 1.0 / norms[fine]
        odd = np.flatnonzero(~fine & (norms != 0))
        table = (matrix, inverse, odd)
        self._search = (key, table)
        return table


def _whole(name: str, value, least: int, also: str = "") -> int:
    """``value`` as an int (numpy integers too, as gensim takes them); ValueError below ``least`` or for a non-integer."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be a {'positive' if least else 'non-negative'} integer{also}, got {value!r}")
    return int(value)


def _weighted(item, default: float):
    """``(term, weight)`` of one query term: a ``(word or vector, weight)`` pair as given (in ``negative``
    too, as gensim), else the term with ``default``. A list of two numbers is a vector, not a pair."""
    if (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], (str, bytes, np.ndarray))
            and isinstance(item[1], (int, float, np.integer, np.floating)) and not isinstance(item[1], bool)):
        return item[0], float(item[1])
    return item, default


def read_word_pairs(path: os.PathLike) -> list[tuple[str, str, float]]:
    """The ``(word1, word2, score)`` of a ``word1<TAB>word2<TAB>score`` file (WordSim-353, SimLex-999), read
    as STS files are (compressed too; blank and ``#`` lines skipped); a bad line is an STSError naming it."""
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
