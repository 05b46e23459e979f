"""The numbers behind the model API: SIF weights, hashed vectors for unknown words, sentence
averages in a fixed order, norms and cosines, the k-th largest score, the shared cache of hashed
rows, and sentence-transformers' cosines of sets of embeddings.

Plain NumPy (no numba), shared by ``Model``, the STS evaluation, the learning curve and the
embedding files, so that they all give the same numbers.
"""

from __future__ import annotations

import hashlib

import numpy as np


def word_weights(counts, raw_tokens: int, a: float) -> np.ndarray:
    """SIF's weights ``a / (a + p(w))`` (float32, one per word), ``p(w)`` the word's share of ``raw_tokens``
    (unknown words included); ``a = 0`` gives every word weight 1."""
    counts = np.asarray(counts, dtype=np.float64)
    if a <= 0:
        return np.ones(len(counts), dtype=np.float32)
    p = counts / max(float(raw_tokens), float(counts.sum()), 1.0)
    return (a / (a + p)).astype(np.float32)


def hashed_vector(token: str, dim: int) -> np.ndarray:
    """A fixed standard normal vector for ``token``: float64, shape (dim,), seeded by BLAKE2b of its UTF-8
    (a lone surrogate as ``surrogatepass`` encodes it, so every str has a vector)."""
    data = token.encode("utf-8", "surrogatepass")
    seed = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
    return np.random.default_rng(seed).standard_normal(dim)


def hashed_vectors(tokens, dim: int, norm: float) -> np.ndarray:
    """:func:`hashed_vector` of each token, scaled to length ``norm``: float64 (len(tokens), dim)."""
    table = np.empty((len(tokens), dim))
    for j, token in enumerate(tokens):
        table[j] = hashed_vector(token, dim)
    if len(table):
        table *= norm / np.linalg.norm(table, axis=1, keepdims=True)
    return table


def rarest_rows(vectors: np.ndarray, counts=None) -> np.ndarray:
    """The rows (float64) of the rarest tenth of the trained words (:func:`rarest_ids`)."""
    return np.asarray(vectors[rarest_ids(len(vectors), counts)], dtype=np.float64)


def rarest_ids(n: int, counts=None) -> np.ndarray:
    """The ids of the rarest tenth of ``n`` trained words (count 0 left out), whose rows' median norm
    sets that of hashed unknown-word vectors."""
    trained = np.arange(n) if counts is None else np.flatnonzero(np.asarray(counts) > 0)
    if len(trained) == 0:
        trained = np.arange(n)
    return trained[-max(1, len(trained) // 10):]


# mean_rows adds the k-th rows of all groups longer than k in one step while this many are; the
# rest are summed one by one in chunks, so few sentences make few NumPy calls, a long one no step a row
_POSITION_STEP_MIN_GROUPS = 8
_CHUNK_ROWS = 4096


def mean_rows(vectors: np.ndarray, ids: np.ndarray, lengths: np.ndarray, dtype=np.float64) -> np.ndarray:
    """The means of consecutive groups of rows of ``vectors``: ``ids`` (int, (lengths.sum(),)) the rows of
    every group in turn, ``lengths`` (int, (n,)) their sizes; ``dtype`` (n, dim), NaN for an empty group.
    Each group is summed in float64 in its order, divided by its size, then rounded: the numbers of
    ``scbow.kernels.embed`` without importing numba (half a second, more than a ``similarity`` call).

    With the groups sorted longest first, the k-th rows of all groups longer than k are added in
    one step: several times faster than ``np.add.reduceat`` at 300 dims, and no float64 copy.
    """
    vectors = np.asarray(vectors)  # a plain view of a memmap: its slices cost less to make
    lengths = np.asarray(lengths, dtype=np.int64)
    n, dim = len(lengths), vectors.shape[1]
    out = np.full((n, dim), np.nan, dtype=dtype)
    if n == 0 or not len(ids):
        return out
    ids = np.asarray(ids)
    if n < _POSITION_STEP_MIN_GROUPS:
        stop = 0
        for i, size in enumerate(lengths.tolist()):
            stop += size
            if size:
                out[i] = _sum_in_order(vectors, ids[stop - size:stop]) / size
        return out
    order = np.argsort(-lengths, kind="stable")  # longest first
    size = lengths[order]
    start = (np.cumsum(lengths) - lengths)[order]
    nonempty = int(np.count_nonzero(size))
    # longer[k]: how many groups are longer than k, the first longer[k] of the sorted ones
    longer = np.searchsorted(-size, -np.arange(int(size[0])), side="left")
    acc = vectors[ids[start[:nonempty]]].astype(np.float64)  # the first row of every group
    k = 1
    while k < len(longer) and longer[k] >= _POSITION_STEP_MIN_GROUPS:
        m = longer[k]
        acc[:m] += vectors[ids[start[:m] + k]]
        k += 1
    for j in range(longer[k] if k < len(longer) else 0):  # the longest few, from row k on
        acc[j] = _sum_in_order(vectors, ids[start[j] + k:start[j] + size[j]], acc[j])
    acc /= size[:nonempty, None]
    out[order[:nonempty]] = acc
    return out


def _sum_in_order(vectors: np.ndarray, ids: np.ndarray, total: np.ndarray | None = None) -> np.ndarray:
    """``total`` (a float64 row, or none) plus the rows ``vectors[ids]``, added one after another in float64."""
    for lo in range(0, len(ids), _CHUNK_ROWS):
        rows = vectors[ids[lo:lo + _CHUNK_ROWS]]
        if total is not None:
            rows = np.concatenate([total[None], rows], dtype=np.float64)
        # np.add.reduce on axis 0 adds rows in turn (pairwise only along the fast axis, which one
        # column makes axis 0: accumulate keeps the order there)
        if vectors.shape[1] > 1:
            total = np.add.reduce(rows, axis=0, dtype=np.float64)
        else:
            total = np.add.accumulate(rows, axis=0, dtype=np.float64)[-1]
    return total


def kth_largest(values: np.ndarray, k: int) -> float:
    """The ``k``-th largest of ``values`` (1 <= k <= len(values)). A subset's k-th largest is at most the
    whole's, so only values at least every ``step``-th value's are partitioned: several times faster."""
    n = len(values)
    step = n // (64 * k)
    if step >= 4:
        sample = values[::step]
        lower = np.partition(sample, len(sample) - k)[len(sample) - k]
        if lower > -np.inf:
            pool = values[values >= lower]
            return pool[np.argpartition(pool, len(pool) - k)[len(pool) - k]]
    return values[np.argpartition(values, n - k)[n - k]]


def scaled_rows(a: np.ndarray) -> np.ndarray:
    """``a``'s rows divided by their largest absolute value, so their norms neither overflow nor underflow;
    a row of zeros or with inf or NaN becomes NaN."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return a / np.abs(a).max(axis=1, keepdims=True)


def row_norms(vectors: np.ndarray, block: int = 1 << 14) -> np.ndarray:
    """Euclidean norm of every row, in float64: shape (n_rows,); a block of rows at a time."""
    out = np.empty(vectors.shape[0])
    for lo in range(0, vectors.shape[0], block):
        rows = np.asarray(vectors[lo:lo + block], dtype=np.float64)
        out[lo:lo + len(rows)] = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    return out


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b``; nan for NaN or zero rows."""
    # einsum: no (n, d) product array, several times faster than (a * b).sum(axis=1), same bits
    with np.errstate(invalid="ignore", divide="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", a, a)) * np.sqrt(np.einsum("ij,ij->i", b, b))
        cos = np.einsum("ij,ij->i", a, b) / norms
    cos[~np.isfinite(cos)] = np.nan
    return cos


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two vectors; nan if either has no value (NaN) or is zero."""
    if np.isnan(a).any() or np.isnan(b).any():
        return float("nan")
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return float("nan")
    return float(np.dot(a, b) / (na * nb))


def cached_rows(cache: dict, tokens: list, make, bound: int) -> dict:
    """token -> row for ``tokens``: from ``cache``, the rest from ``make(new_tokens)`` and put into ``cache``
    (emptied first when it would pass ``bound``). Callers read the rows returned, never ``cache``: threads
    sharing it may clear it at any moment."""
    rows = {}
    for token in tokens:
        row = cache.get(token)
        if row is not None:
            rows[token] = row
    new = [t for t in tokens if t not in rows]
    if new:
        rows.update(zip(new, make(new)))
        if len(new) <= bound:
            if len(cache) + len(new) > bound:
                cache.clear()
            cache.update((t, rows[t]) for t in new)
    return rows


def unit_rows(x, name: str) -> np.ndarray:
    """``x`` (one embedding, or a matrix of them) as a float64 matrix of unit rows (NaN for rows with no direction)."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"{name} must be one embedding (1-D) or a matrix of them (2-D), got shape {a.shape}")
    if a.shape[1] == 0:
        raise ValueError(f"{name} has embeddings of 0 dims")
    a = scaled_rows(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = a / np.linalg.norm(a, axis=1, keepdims=True)
    unit[~np.isfinite(unit).all(axis=1)] = np.nan
    return unit


def cosine_matrix(a, b) -> np.ndarray:
    """Cosines of embeddings ``a`` (n, d) and ``b`` (m, d): float64 (n, m), a 1-D side one row, as
    sentence-transformers' ``model.similarity``; NaN where a row has no direction."""
    A = unit_rows(a, "a")
    B = unit_rows(b, "b")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"embeddings of {A.shape[1]} and {B.shape[1]} dims cannot be compared")
    return A @ B.T


def similarity_pairwise(a, b) -> np.ndarray:
    """Cosine of row i of ``a`` with row i of ``b``: float64 (n,), as ``model.similarity_pairwise``."""
    A = unit_rows(a, "a")
    B = unit_rows(b, "b")
    if A.shape != B.shape:
        raise ValueError(f"pairwise cosines need embeddings of one shape, got {A.shape} and {B.shape}")
    return np.einsum("ij,ij->i", A, B)


def semantic_search(query_embeddings, corpus_embeddings, top_k: int = 10, block: int = 1 << 15) -> list[list[dict]]:
    """For each query, the ``top_k`` corpus rows of highest cosine, ``[{"corpus_id", "score"}]`` best first
    (ties to the lower id); rows with no embedding skipped, a query without one gets ``[]``."""
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    Q = unit_rows(query_embeddings, "query_embeddings")
    C = unit_rows(corpus_embeddings, "corpus_embeddings")
    if Q.shape[1] != C.shape[1]:
        raise ValueError(f"queries of {Q.shape[1]} dims cannot search a corpus of {C.shape[1]} dims")
    k = int(min(top_k, len(C)))
    best_scores = np.full((len(Q), 0), -np.inf)
    best_ids = np.zeros((len(Q), 0), dtype=np.int64)
    for lo in range(0, len(C), block):
        S = np.nan_to_num(Q @ C[lo:lo + block].T, nan=-np.inf)
        scores = np.concatenate([best_scores, S], axis=1)
        ids = np.concatenate([best_ids, np.broadcast_to(np.arange(lo, lo + S.shape[1]), S.shape)], axis=1)
        order = np.lexsort((ids, -scores), axis=1)[:, :k] if k else np.zeros((len(Q), 0), dtype=np.int64)
        best_scores = np.take_along_axis(scores, order, axis=1)
        best_ids = np.take_along_axis(ids, order, axis=1)
    out = []
    for q in range(len(Q)):
        if not np.isfinite(Q[q]).all():
            out.append([])
            continue
        out.append([{"corpus_id": int(i), "score": float(s)}
                    for i, s in zip(best_ids[q].tolist(), best_scores[q].tolist()) if s > -np.inf])
    return out
