"""Comparing sets of sentence embeddings in memory, with sentence-transformers' conventions.

``similarity(a, b)``: the matrix of cosines between two sets of embeddings (or two single
ones); ``semantic_search(queries, corpus, top_k)``: for each query the ``top_k`` nearest
corpus rows by cosine, as ``[{"corpus_id": i, "score": s}, ...]``, best first. Exact, in
blocks of the corpus (numpy; no index to build). For millions of rows searched many times,
``scbow-numba index`` builds an approximate index instead.

Rows with no embedding (NaN, from ``Model.encode``'s default ``fill``) and zero rows never
match: their cosines are NaN in ``similarity`` and they are never returned by
``semantic_search``.
"""

from __future__ import annotations

import numpy as np

from ..vectors.numeric import scaled_rows


def _rows(x, name: str) -> tuple[np.ndarray, bool]:
    """``x`` as a float64 matrix of unit rows (NaN for rows with no direction), and whether it was 1-D."""
    a = np.asarray(x, dtype=np.float64)
    single = a.ndim == 1
    if single:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"{name} must be one embedding (1-D) or a matrix of them (2-D), got shape {a.shape}")
    if a.shape[1] == 0:
        raise ValueError(f"{name} has embeddings of 0 dims")
    a = scaled_rows(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = a / np.linalg.norm(a, axis=1, keepdims=True)
    unit[~np.isfinite(unit).all(axis=1)] = np.nan
    return unit, single


def similarity(a, b) -> np.ndarray | float:
    """Cosines between embeddings ``a`` (n, d) and ``b`` (m, d): float64 (n, m); a float for two
    1-D vectors, a 1-D array when one side is 1-D. NaN where a row has no direction."""
    A, single_a = _rows(a, "a")
    B, single_b = _rows(b, "b")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"embeddings of {A.shape[1]} and {B.shape[1]} dims cannot be compared")
    S = A @ B.T
    if single_a and single_b:
        return float(S[0, 0])
    return S[0] if single_a else (S[:, 0] if single_b else S)


def semantic_search(query_embeddings, corpus_embeddings, top_k: int = 10, block: int = 1 << 15) -> list[list[dict]]:
    """For each query, the ``top_k`` corpus rows with the highest cosine: ``[{"corpus_id", "score"}]``,
    best first (ties to the lower id). A 1-D query is one query. Rows with no embedding are skipped;
    a query with none gets ``[]``."""
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    Q, _ = _rows(query_embeddings, "query_embeddings")
    C, _ = _rows(corpus_embeddings, "corpus_embeddings")
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
