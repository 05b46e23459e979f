"""Trained embeddings: a vocabulary and its vectors, as a sentence encoder. No training code here.

:class:`Model` embeds and compares sentences (sentence-transformers' ``encode``,
``similarity``, ``similarity_pairwise``, ``semantic_search``); its words are compared by
``model.wv`` (:class:`scbow.vectors.words.WordVectors`, gensim's ``KeyedVectors`` names).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..progress import Progress, plural
from ..text.tokenize import tokenize, tokenize_lines
from ..text.vocab import Vocab
from .about import origin
from .average import Averager, check_rule, own_rule, rule_scale
from .numeric import cosine_matrix, semantic_search, similarity_pairwise
from .pieces import Pieces
from .words import WordVectors, row_parts


class Model:
    """Word vectors whose average embeds a sentence: ``vectors`` float32 (n_words, dim), row i for
    ``vocab.words[i]``; ``config`` the settings it was trained with, ``info`` its corpus and training.

    A model trained with a word part has rows ``[sentence part ; word part]`` (:attr:`parts`):
    sentences are embedded with the whole rows, words (``model.wv``) compared by the word part's columns.
    """

    similarity_fn_name = "cosine"

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
        old = self.__dict__.get("averager")
        self.averager = Averager(self.vocab, vectors, self.tokenize_lines) if old is None else old.renew(vectors)
        self._generation = self.__dict__.get("_generation", 0) + 1  # wv's search table is of an older one

    @property
    def parts(self) -> dict:
        """The column ranges of the rows' parts: ``{"sentence": (0, d)}``, and ``"word": (d, d + w)`` if any."""
        return row_parts(self.config, self.dim)

    @property
    def wv(self) -> WordVectors:
        """The word vectors (gensim's ``model.wv``): the word part's columns, else the whole rows."""
        wv = self.__dict__.get("_wv")
        if wv is None or wv._model is not self:  # a copy of a model gets its own
            wv = self._wv = WordVectors(self)
        return wv

    # scbow's one tokenizer (a model of another version is refused when read: scbow.vectors.modeldir)
    tokenize = staticmethod(tokenize)
    tokenize_lines = staticmethod(tokenize_lines)

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        text = f"<scbow Model: {plural(len(self), 'word')} x {plural(self.dim, 'dim')}"
        where = origin(self)
        return f"{text}, {where}>" if where else text + ">"

    def save(self, path) -> Path:
        """Write the model as a directory at ``path``, replacing any model there in one step; returns the path."""
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
        """The model's own ``(unknown, unknown_scale)``: what :meth:`encode` does by default."""
        return own_rule(self.config)

    def unknown_scale(self, rule: str) -> float:
        """The norm multiple of ``rule`` for this model (:func:`scbow.vectors.average.rule_scale`)."""
        return rule_scale(self.config, rule)

    @property
    def pieces(self) -> Pieces:
        """The pieces unknown words are split into under ``unknown="pieces"`` (built on first use)."""
        return self.averager.pieces

    def unknown_norm(self) -> float:
        """The median norm of the rarest tenth of the trained words' rows (:meth:`Averager.unknown_norm`)."""
        return self.averager.unknown_norm()

    def encode(self, sentences, batch_size: int = 4096, show_progress_bar: bool = False,
               normalize_embeddings: bool = False, fill: float = math.nan, unknown: str | None = None,
               unknown_scale: float | None = None, convert_to_numpy: bool = True, convert_to_tensor: bool = False):
        """Sentence embeddings (float32), with sentence-transformers' conventions: the mean of the word vectors.

        ``sentences``: a string gives shape (dim,); any iterable (a generator too, read a batch at a
        time) gives (n, dim). ``normalize_embeddings`` scales rows to unit length. A sentence with
        nothing to average gets a row of ``fill`` (NaN: no embedding; 0.0 as sentence-transformers'
        static models). ``convert_to_numpy`` is accepted; ``convert_to_tensor`` gives a torch tensor.

        ``unknown``: "omit", "hash" or "pieces" (:mod:`scbow.vectors.average`), a hashed vector's norm
        being ``unknown_scale`` times :meth:`unknown_norm`; None takes the model's own rule and scale.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not isinstance(fill, (int, float, np.number)) or isinstance(fill, (bool, np.bool_)):
            raise TypeError(f"fill must be a number (NaN for no embedding, 0.0 for zeros), got {fill!r}")
        unknown = self.unknown_rule[0] if unknown is None else unknown
        unknown_scale = self.unknown_scale(unknown) if unknown_scale is None else unknown_scale
        check_rule(unknown, unknown_scale)
        if convert_to_tensor:
            try:
                import torch
            except ImportError:
                raise ImportError("encode(convert_to_tensor=True) needs torch (pip install torch); without it "
                                  "encode gives a NumPy array") from None
        single = isinstance(sentences, str)
        items = [sentences] if single else sentences
        if isinstance(items, (bytes, bytearray)) or not hasattr(items, "__iter__"):
            raise TypeError(f"encode() takes a sentence or an iterable of sentences, got {type(sentences).__name__}")
        total = len(items) if hasattr(items, "__len__") else 0
        bar = Progress(total, unit="sentences", quiet=not show_progress_bar)
        blocks, batch, done = [], [], 0

        def flush() -> None:
            nonlocal done
            for n, s in enumerate(batch):
                if not isinstance(s, str):
                    raise TypeError(f"sentence {done + n} is a {type(s).__name__}, not a str")
            unique = dict.fromkeys(batch)  # a sentence said twice is embedded once
            rows = self.averager.embed(list(unique), unknown, unknown_scale)
            if len(unique) < len(batch):
                row = {sentence: n for n, sentence in enumerate(unique)}
                rows = rows[np.fromiter(map(row.__getitem__, batch), dtype=np.int64, count=len(batch))]
            blocks.append(rows)
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
        out = out[0] if single else out
        return torch.from_numpy(out) if convert_to_tensor else out

    def get_sentence_embedding_dimension(self) -> int:
        """The width of a sentence embedding (sentence-transformers' name for :attr:`dim`)."""
        return self.dim

    def similarity(self, a, b, unknown: str | None = None) -> np.ndarray:
        """sentence-transformers' ``similarity``: float64 (n, m) cosines, NaN where a row has no embedding or is
        zero; ``a``, ``b``: embeddings, or sentences (a str or a list), encoded first."""
        return cosine_matrix(*_embeddings(self, a, b, unknown))

    def similarity_pairwise(self, a, b, unknown: str | None = None) -> np.ndarray:
        """sentence-transformers' ``similarity_pairwise``; ``a``, ``b``: embeddings of one shape, or sentences."""
        return similarity_pairwise(*_embeddings(self, a, b, unknown))

    def semantic_search(self, queries, corpus_embeddings, top_k: int = 10, unknown: str | None = None) -> list:
        """For each query the ``top_k`` nearest corpus rows, as ``sentence_transformers.util.semantic_search``
        (:func:`scbow.vectors.numeric.semantic_search`); queries and corpus: embeddings, or sentences."""
        return semantic_search(*_embeddings(self, queries, corpus_embeddings, unknown), top_k=top_k)

    def export(self, path, format: str = "word2vec", **options):
        """Write the model as ``scbow-numba export`` does (:func:`scbow.vectors.export.export`)."""
        from .export import export

        return export(self, path, format, **options)


def _embeddings(model: Model, a, b, unknown: str | None) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` as embeddings: arrays as they are, sentences encoded (both sides in one call)."""
    sides = []
    for x in (a, b):
        if isinstance(x, (bytes, bytearray)):  # not a vector of its byte values
            raise TypeError(f"a sentence is a str, got {type(x).__name__} {bytes(x)[:40]!r}; decode it first")
        if not isinstance(x, (str, np.ndarray)):
            x = list(x)
            texts = sum(isinstance(s, str) for s in x)
            if 0 < texts < len(x):
                raise TypeError("give sentences (str) or embeddings (numbers), not a mix of both")
            x = x if texts else np.asarray(x, dtype=np.float64) if x else np.empty((0, model.dim))
        sides.append(x)
    text = [isinstance(x, (str, list)) for x in sides]
    if all(text):  # one encode call: a sentence on both sides is embedded once
        n = 1 if isinstance(sides[0], str) else len(sides[0])
        rows = model.encode([s for x in sides for s in ([x] if isinstance(x, str) else x)], unknown=unknown)
        return (rows[0] if isinstance(sides[0], str) else rows[:n],
                rows[n] if isinstance(sides[1], str) else rows[n:])
    return tuple(model.encode(x, unknown=unknown) if t else x for x, t in zip(sides, text))
