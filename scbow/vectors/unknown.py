"""What a model gives a word outside its vocabulary: the rules ``omit``, ``hash`` and ``pieces``.

``Model.embed`` (and so ``encode``, the ``similarity`` command, ``evaluate``), the file embedder
(``scbow.use.embedding.LineEncoder``) and the exported folders (``scbow.vectors.export``) all take
an unknown word's vectors from :func:`unknown_vectors`; the training curve
(``scbow.training.curve``) applies the same rule to the rows of the moment.
"""

from __future__ import annotations

import numpy as np

from .numeric import cached_rows, hashed_vectors, rarest_rows
from .pieces import PIECE_SCALE, Pieces

# What embed() does with a token that is not in the vocabulary: leave it out of the
# average (the paper's rule), split it into pieces (scbow.vectors.pieces), or give it a fixed
# random vector derived from a hash of the token, so that a rare name or number shared by two
# sentences still counts as shared. A model trained by scbow-numba records its own rule in
# its config ("unknown", "unknown_scale": pieces at 0.35 now, hash at 1.0 before); a model
# without that record omits them.
DEFAULT_UNKNOWN = "omit"
# The norm of a hashed vector, as a multiple of the median norm of the rarest tenth of
# the vocabulary (the words most like unseen ones), for models that do not record one.
# For models trained without frequency weights 0.75 scored best on the STS-B dev set
# (benchmarks/results/unknown_words.md); with frequency weights the rarest rows are
# nearly the untrained ones, and 1.0 (word overlap for unknown words) scored best.
HASH_SCALE = 0.75
_HASH_CACHE = 1 << 16  # unknown words whose unit hashed vectors a model keeps between embed() calls


def own_rule(model) -> tuple[str, float]:
    """The model's own ``(unknown, unknown_scale)``, from its config (``omit`` without a record)."""
    return (str(model.config.get("unknown", DEFAULT_UNKNOWN)), float(model.config.get("unknown_scale", HASH_SCALE)))


def rule_scale(model, rule: str) -> float:
    """The norm multiple of ``rule`` for ``model``: its own for its own rule; for another rule that
    rule's default (:data:`~scbow.vectors.pieces.PIECE_SCALE` for pieces; for hash 1.0 with
    frequency weights, else :data:`HASH_SCALE`, as benchmarks/results/unknown_words.md chose)."""
    own, scale = own_rule(model)
    if rule == own:
        return scale
    if rule == "pieces":
        return PIECE_SCALE
    return 1.0 if model.config.get("frequency_weight") else HASH_SCALE


def pieces_of(model) -> Pieces:
    """The :class:`~scbow.vectors.pieces.Pieces` of the model's words, built on first use (about
    0.3 s for 125,000 words) and kept on the model."""
    pieces = model.__dict__.get("_pieces")
    if pieces is None:
        pieces = model.__dict__["_pieces"] = Pieces(model.vocab.words)
    return pieces


def unknown_vectors(model, tokens: list[str], rule: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """What each of the unknown ``tokens`` adds to a sentence average under ``rule`` ("hash" or
    "pieces") at ``scale``: the float64 sums of its vectors (n, dim) and their counts (int64, n).

    hash: one hashed vector of norm ``scale * unknown_norm(model)``, count 1. pieces: the rows
    of its pieces that are words, plus the hashed vectors (that norm) of the others, one count
    a piece; zeros and 0 for a token without pieces.
    """
    norm = scale * unknown_norm(model)
    if rule == "hash":
        return unit_hashed(model, tokens) * norm, np.ones(len(tokens), dtype=np.int64)
    cache = model.__dict__.setdefault("_split", {})
    rows = cached_rows(cache, tokens, lambda new: split_sums(model, new), _HASH_CACHE)
    sums = np.array([rows[t][0] + norm * rows[t][1] for t in tokens]).reshape(len(tokens), model.dim)
    return sums, np.fromiter((rows[t][2] for t in tokens), dtype=np.int64, count=len(tokens))


def split_sums(model, tokens: list[str]) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """For each token ``(sum of the rows of its pieces that are words, sum of the unit hashed vectors
    of the others, number of pieces)``: what :func:`unknown_vectors` keeps between calls, whatever
    the scale."""
    index, splits = model.vocab.index, [pieces_of(model).split(t) for t in tokens]
    new = sorted({p for pieces in splits for p in pieces if p not in index})
    hashed = dict(zip(new, unit_hashed(model, new)))
    out = []
    for pieces in splits:
        words, other = np.zeros(model.dim), np.zeros(model.dim)
        for piece in pieces:
            i = index.get(piece)
            if i is None:
                other += hashed[piece]
            else:
                words += model.vectors[i]
        out.append((words, other, len(pieces)))
    return out


def unit_hashed(model, tokens: list[str]) -> np.ndarray:
    """Unit-length hashed vectors of ``tokens`` (float64), kept on the model between calls (bounded).

    Thread-safe without a lock: the result is built from this call's own dict of rows (those
    found in the cache, then those computed), and only then are the new rows published, so
    a ``clear()`` of the shared cache by another thread never loses a row this call needs.
    """
    cache = model.__dict__.setdefault("_hashed", {})
    rows = cached_rows(cache, tokens, lambda new: hashed_vectors(new, model.dim, 1.0), _HASH_CACHE)
    return np.array([rows[t] for t in tokens]).reshape(len(tokens), model.dim)


def unknown_norm(model) -> float:
    """The median norm of the vectors of the rarest tenth of the trained vocabulary, kept on the
    model until its ``vectors`` are assigned again.

    Words with a count of 0 (added by vocabulary expansion, after the trained ones) are
    not counted: the norm stays that of the words the model learned.
    """
    if model.__dict__.get("_unknown_norm") is None:
        rare = rarest_rows(model.vectors, model.vocab.counts)
        model.__dict__["_unknown_norm"] = float(np.median(np.linalg.norm(rare, axis=1))) if len(rare) else 1.0
    return model.__dict__["_unknown_norm"]
